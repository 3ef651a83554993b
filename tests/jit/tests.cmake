gemvtune_add_test(test_gemv_gpu
  ${CMAKE_SOURCE_DIR}/tests/jit/gemv_correctness_gpu_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/jit/gemv_operands_gpu_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/jit/gemv_fused_gpu_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/jit/gemv_chain_gpu_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/jit/gemv_aligned_body_gpu_test.cpp)
gemvtune_add_test(test_cubin_info ${CMAKE_SOURCE_DIR}/tests/jit/cubin_info_test.cpp)
gemvtune_add_test(test_gemv_batch_gpu ${CMAKE_SOURCE_DIR}/tests/jit/gemv_batch_gpu_test.cpp)
gemvtune_add_test(test_gemv_quant_gpu ${CMAKE_SOURCE_DIR}/tests/jit/gemv_quant_gpu_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/jit/conversion_gpu_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/jit/gemv_quant_fused_gpu_test.cpp)
gemvtune_add_test(test_gemv_launch ${CMAKE_SOURCE_DIR}/tests/jit/gemv_launch_test.cpp)
gemvtune_add_test(test_kernel_cache_retry ${CMAKE_SOURCE_DIR}/tests/jit/kernel_cache_retry_test.cpp)
target_link_libraries(test_kernel_cache_retry PRIVATE ${CMAKE_DL_LIBS})
