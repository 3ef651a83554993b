# Tests of the tuner: the host data's fp16 conversions, the tune run's JSON, strategies against timing tables, rank correlation, presets and shape
# files, the compile pool (NVRTC, no GPU), the timing plan, the model's register estimate against
# NVRTC's, the model's fit and defaults against
# recorded H200 runs, and the tuner end to end and the
# timing methods where there is a GPU.
# Included from tests/CMakeLists.txt.
gemvtune_add_test(test_tuner
  ${CMAKE_SOURCE_DIR}/tests/tuner/strategy_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/tuner/rank_correlation_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/tuner/presets_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/tuner/compile_pool_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/tuner/timing_plan_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/tuner/explain_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/tuner/warp_steps_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/tuner/defaults_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/tuner/quant_model_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/tuner/model_registers_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/tuner/host_data_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/tuner/report_json_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/tuner/fit_report_test.cpp)
target_include_directories(test_tuner PRIVATE ${CMAKE_SOURCE_DIR}/tests)
# defaults_test.cpp reads the recorded bench --json files of bench/results/raw/.
target_link_libraries(test_tuner PRIVATE nlohmann_json::nlohmann_json)
target_compile_definitions(test_tuner PRIVATE GEMVTUNE_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
target_compile_options(test_tuner PRIVATE -Wall -Wextra)

gemvtune_add_test(test_tuner_gpu ${CMAKE_SOURCE_DIR}/tests/tuner/tuner_gpu_test.cpp)
target_compile_options(test_tuner_gpu PRIVATE -Wall -Wextra)

# Its own binary: the 64 KiB tune it times starts with no kernel compiled in the process.
gemvtune_add_test(test_timing_gpu ${CMAKE_SOURCE_DIR}/tests/tuner/timing_gpu_test.cpp)
target_compile_options(test_timing_gpu PRIVATE -Wall -Wextra)
