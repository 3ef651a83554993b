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
