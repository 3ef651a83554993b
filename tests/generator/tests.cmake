gemvtune_add_test(test_generator
  ${CMAKE_SOURCE_DIR}/tests/generator/config_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/generator/source_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/generator/aligned_body_test.cpp)
gemvtune_add_test(test_compile_space
  ${CMAKE_SOURCE_DIR}/tests/generator/compile_space_test.cpp)
# The template test compiles each template alone with the toolkit's nvcc.
target_compile_definitions(test_generator PRIVATE GEMVTUNE_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                           GEMVTUNE_NVCC="${CUDAToolkit_NVCC_EXECUTABLE}")
