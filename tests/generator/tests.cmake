gemvtune_add_test(test_generator
  ${CMAKE_SOURCE_DIR}/tests/generator/config_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/generator/source_test.cpp)
gemvtune_add_test(test_compile_space
  ${CMAKE_SOURCE_DIR}/tests/generator/compile_space_test.cpp)
