// libgemvtune.so is the static gemvtune library linked whole (see the top-level CMakeLists.txt)
// with only the C API exported (runtime/c_api_exports.map). CMake wants one source of its own
// for a shared library target; this is it.
