gemvtune_add_test(test_formats
  ${CMAKE_SOURCE_DIR}/tests/formats/weight_format_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/formats/e4m3_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/formats/quantize_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/formats/checkpoint_test.cpp)
