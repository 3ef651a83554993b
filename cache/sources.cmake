# The SQLite tuning cache (include/gemvtune/cache.hpp).
target_sources(gemvtune PRIVATE
  ${CMAKE_SOURCE_DIR}/cache/sqlite.cpp
  ${CMAKE_SOURCE_DIR}/cache/file_check.cpp
  ${CMAKE_SOURCE_DIR}/cache/schema.cpp
  ${CMAKE_SOURCE_DIR}/cache/open.cpp
  ${CMAKE_SOURCE_DIR}/cache/text.cpp
  ${CMAKE_SOURCE_DIR}/cache/validate.cpp
  ${CMAKE_SOURCE_DIR}/cache/outcome.cpp
  ${CMAKE_SOURCE_DIR}/cache/default_path.cpp
  ${CMAKE_SOURCE_DIR}/cache/tuned_rows.cpp
  ${CMAKE_SOURCE_DIR}/cache/peak_rows.cpp
  ${CMAKE_SOURCE_DIR}/cache/tuning_cache.cpp
  ${CMAKE_SOURCE_DIR}/cache/json_records.cpp
  ${CMAKE_SOURCE_DIR}/cache/json_io.cpp
  ${CMAKE_SOURCE_DIR}/cache/output_file.cpp)
