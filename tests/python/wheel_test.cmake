# Run by CTest (tests/python/tests.cmake): `pip wheel` of the repository, `pip install` of that
# wheel into a folder, then the CPU tests against the installed package (no GEMVTUNE_LIBRARY:
# the library must come from inside the package). Any failing step fails the test.
file(REMOVE_RECURSE ${WORK_DIR}/site)
file(GLOB old_wheels ${WORK_DIR}/*.whl)
if(old_wheels)
  file(REMOVE ${old_wheels})
endif()
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}")
  endif()
endfunction()
step(${PYTHON} -m pip wheel --no-deps -w ${WORK_DIR} ${SOURCE})
file(GLOB wheels ${WORK_DIR}/gemvtune-*.whl)
step(${PYTHON} -m pip install --no-deps --target ${WORK_DIR}/site ${wheels})
step(${CMAKE_COMMAND} -E env --unset=GEMVTUNE_LIBRARY PYTHONPATH=${WORK_DIR}/site
     ${PYTHON} -c "import gemvtune, os; print('installed gemvtune', gemvtune.__version__, 'library', gemvtune.library_path); assert os.path.realpath(gemvtune.library_path).startswith(os.path.realpath('${WORK_DIR}/site')), gemvtune.library_path")
step(${CMAKE_COMMAND} -E env --unset=GEMVTUNE_LIBRARY PYTHONPATH=${WORK_DIR}/site
     ${PYTHON} -m pytest -q -p no:cacheprovider ${SOURCE}/tests/python/test_package.py)
message("wheel: ${wheels}")
