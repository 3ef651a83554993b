gemvtune_add_test(test_runtime
  ${CMAKE_SOURCE_DIR}/tests/runtime/kernel_store_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/runtime/resolve_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/runtime/c_api_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/runtime/runtime_gpu_test.cpp)
