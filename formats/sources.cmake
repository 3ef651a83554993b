target_sources(gemvtune PRIVATE
  ${CMAKE_SOURCE_DIR}/formats/internal.cpp
  ${CMAKE_SOURCE_DIR}/formats/weight_format.cpp
  ${CMAKE_SOURCE_DIR}/formats/e4m3.cpp
  ${CMAKE_SOURCE_DIR}/formats/dequantize.cpp
  ${CMAKE_SOURCE_DIR}/formats/quantize.cpp
  ${CMAKE_SOURCE_DIR}/formats/checkpoint.cpp)
