# Installs gemvtune into a folder of the build tree, then configures, builds and runs a consumer
# that uses find_package(gemvtune) and gemvtune::gemvtune, and examples/decode_chain.cpp with it.
add_test(NAME packaging_install_and_consume
  COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${CMAKE_BINARY_DIR}
    -DCONSUMER_SOURCE=${CMAKE_SOURCE_DIR}/tests/packaging/consumer
    -DEXAMPLES_DIR=${CMAKE_SOURCE_DIR}/examples
    -DWORK_DIR=${CMAKE_BINARY_DIR}/packaging-test
    -DGENERATOR=${CMAKE_GENERATOR}
    -P ${CMAKE_SOURCE_DIR}/tests/packaging/install_and_consume.cmake)
set_tests_properties(packaging_install_and_consume PROPERTIES TIMEOUT 600 PASS_REGULAR_EXPRESSION "consumer: C API runtime_create")
