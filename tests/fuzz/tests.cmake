# Fixed-seed fuzz of import (random, mutated and deeply nested JSON) and of the CLI (random
# argument vectors over odd files); about 20 s each on 2 cores. $GEMVTUNE_FUZZ_SEED and
# $GEMVTUNE_FUZZ_SCALE explore further. Included from tests/CMakeLists.txt.
gemvtune_add_test(test_fuzz
  ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_import_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_cli_test.cpp)
target_compile_definitions(test_fuzz PRIVATE GEMVTUNE_CLI_PATH="$<TARGET_FILE:gemvtune_cli>")
target_link_libraries(test_fuzz PRIVATE nlohmann_json::nlohmann_json)
target_compile_options(test_fuzz PRIVATE -Wall -Wextra)
add_dependencies(test_fuzz gemvtune_cli)

# Coverage-guided fuzzers (libFuzzer: clang, and the library built with
# -fsanitize=fuzzer-no-link): scripts/fuzz.sh configures such a build and runs them on the seeds
# of tests/fuzz/corpus. In the suite, each target replays those seeds (a finding that is fixed
# goes there too) without libFuzzer.
foreach(target import_json config_text shape_list checkpoint)
  add_executable(fuzz_replay_${target} ${CMAKE_SOURCE_DIR}/tests/fuzz/libfuzzer/${target}.cpp
                                       ${CMAKE_SOURCE_DIR}/tests/fuzz/libfuzzer/replay_main.cpp)
  target_link_libraries(fuzz_replay_${target} PRIVATE gemvtune)
  target_compile_options(fuzz_replay_${target} PRIVATE -Wall -Wextra)
  add_test(NAME fuzz_replay_${target} COMMAND fuzz_replay_${target} ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${target})
endforeach()
if(GEMVTUNE_LIBFUZZER)
  foreach(target import_json config_text shape_list checkpoint)
    add_executable(fuzz_${target} ${CMAKE_SOURCE_DIR}/tests/fuzz/libfuzzer/${target}.cpp)
    target_link_libraries(fuzz_${target} PRIVATE gemvtune)
    target_compile_options(fuzz_${target} PRIVATE -fsanitize=fuzzer)
    target_link_options(fuzz_${target} PRIVATE -fsanitize=fuzzer)
  endforeach()
endif()
