# Tests of the gemvtune binary itself: run with arguments, checked for exit status and output.
# Included from tests/CMakeLists.txt.
gemvtune_add_test(test_cli ${CMAKE_SOURCE_DIR}/tests/cli/cli_test.cpp)
target_compile_definitions(test_cli PRIVATE GEMVTUNE_CLI_PATH="$<TARGET_FILE:gemvtune_cli>")
target_link_libraries(test_cli PRIVATE nlohmann_json::nlohmann_json)
target_compile_options(test_cli PRIVATE -Wall -Wextra)
add_dependencies(test_cli gemvtune_cli)
