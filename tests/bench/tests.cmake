gemvtune_add_test(test_recorded_sweep ${CMAKE_SOURCE_DIR}/tests/bench/recorded_sweep_test.cpp)
target_compile_definitions(test_recorded_sweep PRIVATE
  GEMVTUNE_H200_SWEEP="${CMAKE_SOURCE_DIR}/bench/results/sweeps/h200_bf16.csv")
