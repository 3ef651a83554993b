# The examples run as tests: short versions here (the full runs are in bench/results/h200.md).
# They exit 77 where there is no GPU, which CTest reports as skipped.
add_test(NAME example_decode_chain COMMAND decode_chain --layers 2 --replays 3)
add_test(NAME example_server_sim COMMAND server_sim --threads 4 --seconds 5)
set_tests_properties(example_decode_chain example_server_sim PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
# They include gemvtune's public headers only (what a server author can copy).
add_test(NAME example_public_includes
  COMMAND ${CMAKE_COMMAND} -DEXAMPLES_DIR=${CMAKE_SOURCE_DIR}/examples
          -P ${CMAKE_CURRENT_LIST_DIR}/check_public_includes.cmake)
set_tests_properties(example_public_includes PROPERTIES PASS_REGULAR_EXPRESSION "include public headers only")
# Bad arguments are refused with status 2 before the GPU is looked for (they were read with
# atoi and unknown ones skipped: "--batch 4x" ran M = 4, "--layer 2" all 32 layers, and on a
# machine without a GPU everything was "skipped").
add_test(NAME example_decode_chain_refuses_bad_arguments
  COMMAND sh -c "\"$0\" --batch 4x 2>&1 | grep -q \"'4x': expected a whole number from 1 to 16\" && { \"$0\" --layer 2; [ $? = 2 ]; }"
          $<TARGET_FILE:decode_chain>)
add_test(NAME example_server_sim_refuses_bad_arguments
  COMMAND sh -c "\"$0\" --no-store --threads 4 2>&1 | grep -q \"'--no-store' needs a value\" && { \"$0\" --preset nope; [ $? = 2 ]; }"
          $<TARGET_FILE:server_sim>)
