gemvtune_add_test(test_recorded_sweep ${CMAKE_SOURCE_DIR}/tests/bench/recorded_sweep_test.cpp)
target_compile_definitions(test_recorded_sweep PRIVATE
  GEMVTUNE_H200_SWEEP="${CMAKE_SOURCE_DIR}/bench/results/sweeps/h200_bf16.csv")

# gemvtune-sweep refuses a bad GEMVTUNE_SWEEP_CONFIGS with its name, before it opens a GPU (so
# the same on a machine without one).
if(TARGET gemvtune_sweep)
  add_test(NAME sweep_refuses_a_bad_config_list
           COMMAND ${CMAKE_COMMAND} -E env GEMVTUNE_SWEEP_CONFIGS=t128_r1_kw1_v16_u4_sk1_cs,t128_bogus
                   $<TARGET_FILE:gemvtune_sweep> ${CMAKE_CURRENT_BINARY_DIR}/sweep_refused.csv bf16 64x64)
  set_tests_properties(sweep_refuses_a_bad_config_list PROPERTIES
                       PASS_REGULAR_EXPRESSION "GEMVTUNE_SWEEP_CONFIGS: bad config 't128_bogus'")
endif()

# The same for GEMVTUNE_SWEEP_NEIGHBOR: a bad config by name, and a config that cannot run the
# neighbour's shape with the reason.
if(TARGET gemvtune_sweep)
  add_test(NAME sweep_refuses_a_bad_neighbor
           COMMAND ${CMAKE_COMMAND} -E env GEMVTUNE_SWEEP_NEIGHBOR=4096x4096:t128_bogus
                   $<TARGET_FILE:gemvtune_sweep> ${CMAKE_CURRENT_BINARY_DIR}/sweep_refused.csv bf16 64x64)
  set_tests_properties(sweep_refuses_a_bad_neighbor PROPERTIES
                       PASS_REGULAR_EXPRESSION "GEMVTUNE_SWEEP_NEIGHBOR: bad config 't128_bogus'")
  add_test(NAME sweep_refuses_a_neighbor_config_that_cannot_run
           COMMAND ${CMAKE_COMMAND} -E env GEMVTUNE_SWEEP_NEIGHBOR=4096x4096:tc_t128_r1_kw2_v16_u1_sk1_cs_pdl_ring
                   $<TARGET_FILE:gemvtune_sweep> ${CMAKE_CURRENT_BINARY_DIR}/sweep_refused.csv bf16 64x64)
  set_tests_properties(sweep_refuses_a_neighbor_config_that_cannot_run PROPERTIES
                       PASS_REGULAR_EXPRESSION "GEMVTUNE_SWEEP_NEIGHBOR: tc_t128_r1_kw2_v16_u1_sk1_cs_pdl_ring cannot run 4096x4096 at M = 1: ")
endif()

# Bad arguments exit 2 and leave OUT.csv as it was: the file was emptied before the shapes were
# read, so a mistyped rerun destroyed an earlier sweep's measurements.
if(TARGET gemvtune_sweep)
  add_test(NAME sweep_keeps_its_csv_on_bad_arguments
           COMMAND sh -c "echo earlier > \"$1\" && \"$0\" \"$1\" bf16 8xq; rc=$?; [ $rc = 2 ] && [ \"$(cat \"$1\")\" = earlier ]"
                   $<TARGET_FILE:gemvtune_sweep> ${CMAKE_CURRENT_BINARY_DIR}/sweep_kept.csv)
endif()
