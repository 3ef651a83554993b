target_sources(gemvtune PRIVATE
  ${CMAKE_SOURCE_DIR}/generator/dtype_shape.cpp
  ${CMAKE_SOURCE_DIR}/generator/config.cpp
  ${CMAKE_SOURCE_DIR}/generator/source.cpp
  ${CMAKE_SOURCE_DIR}/generator/search_space.cpp)
