# Tests of the SQLite tuning cache; no GPU needed. Included from tests/CMakeLists.txt.
gemvtune_add_test(test_cache
  ${CMAKE_SOURCE_DIR}/tests/cache/test_schema.cpp
  ${CMAKE_SOURCE_DIR}/tests/cache/test_refused_files.cpp
  ${CMAKE_SOURCE_DIR}/tests/cache/test_store_find.cpp
  ${CMAKE_SOURCE_DIR}/tests/cache/test_concurrency.cpp
  ${CMAKE_SOURCE_DIR}/tests/cache/test_nearest.cpp
  ${CMAKE_SOURCE_DIR}/tests/cache/test_json.cpp
  ${CMAKE_SOURCE_DIR}/tests/cache/test_default_path.cpp
  ${CMAKE_SOURCE_DIR}/tests/cache/test_unusable_rows.cpp
  ${CMAKE_SOURCE_DIR}/tests/cache/test_paths_and_locks.cpp)
