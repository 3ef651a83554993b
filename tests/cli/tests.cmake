# Tests of the gemvtune binary itself: run with arguments, checked for exit status and output.
# Included from tests/CMakeLists.txt.
gemvtune_add_test(test_cli ${CMAKE_SOURCE_DIR}/tests/cli/cli_test.cpp ${CMAKE_SOURCE_DIR}/tests/cli/explain_cli_test.cpp)
target_compile_definitions(test_cli PRIVATE GEMVTUNE_CLI_PATH="$<TARGET_FILE:gemvtune_cli>")
target_link_libraries(test_cli PRIVATE nlohmann_json::nlohmann_json)
target_compile_options(test_cli PRIVATE -Wall -Wextra)
add_dependencies(test_cli gemvtune_cli)

# Issue 10's defects of the cache commands, each shown as the user meets it: refused input
# leaves every file byte-identical and exits 2 with a message naming the problem.
gemvtune_add_test(test_cli_hardening
  ${CMAKE_SOURCE_DIR}/tests/cli/import_refusals_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/cli/cache_rows_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/cli/export_output_test.cpp
  ${CMAKE_SOURCE_DIR}/tests/cli/db_option_test.cpp)
target_compile_definitions(test_cli_hardening PRIVATE GEMVTUNE_CLI_PATH="$<TARGET_FILE:gemvtune_cli>")
target_link_libraries(test_cli_hardening PRIVATE nlohmann_json::nlohmann_json)
target_compile_options(test_cli_hardening PRIVATE -Wall -Wextra)
add_dependencies(test_cli_hardening gemvtune_cli)

# The progress line of `tune` (cli/progress.cpp, compiled in: the CLI is an executable).
gemvtune_add_test(test_cli_progress ${CMAKE_SOURCE_DIR}/tests/cli/progress_test.cpp ${CMAKE_SOURCE_DIR}/cli/progress.cpp)
target_compile_options(test_cli_progress PRIVATE -Wall -Wextra)
