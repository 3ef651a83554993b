# The Python package's tests (tests/python, pytest) against this build's libgemvtune.so, and a
# check that `pip install .` builds a wheel whose package passes the CPU tests. The interpreter:
# GEMVTUNE_PYTHON if given, else the first of python3 on PATH and /usr/bin/python3 that has
# pytest (scripts/install_deps.sh installs it). GPU tests skip without a GPU, torch tests
# without PyTorch.
find_package(Python3 COMPONENTS Interpreter)
set(GEMVTUNE_PYTHON "" CACHE FILEPATH "Python interpreter with pytest for tests/python")
set(gemvtune_test_python "${GEMVTUNE_PYTHON}")
if(NOT gemvtune_test_python)
  foreach(candidate ${Python3_EXECUTABLE} /usr/bin/python3)
    if(EXISTS "${candidate}")
      execute_process(COMMAND "${candidate}" -c "import pytest" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 0)
        set(gemvtune_test_python "${candidate}")
        break()
      endif()
    endif()
  endforeach()
endif()
if(NOT gemvtune_test_python)
  # Registered anyway, so a missing pytest fails loudly instead of skipping the suite.
  set(gemvtune_test_python "${Python3_EXECUTABLE}")
  message(WARNING "no Python with pytest found (run scripts/install_deps.sh); the python tests will fail")
endif()

set(gemvtune_python_env
  "GEMVTUNE_LIBRARY=$<TARGET_FILE:gemvtune_shared>"
  "GEMVTUNE_CLI=$<TARGET_FILE:gemvtune_cli>"
  "GEMVTUNE_CACHE=${CMAKE_BINARY_DIR}/python-test-cache/gemvtune.sqlite"
  "PYTHONDONTWRITEBYTECODE=1")
add_test(NAME python_tests
  COMMAND "${gemvtune_test_python}" -m pytest -q -rs -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/python
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(python_tests PROPERTIES ENVIRONMENT "${gemvtune_python_env}" TIMEOUT 1800)

# The scripts' tests (tests/bench/FILE, pytest): no GPU, no library, standard library only.
function(gemvtune_script_test name file)
  add_test(NAME ${name}
    COMMAND "${gemvtune_test_python}" -m pytest -q -rs -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/bench/${file}
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 300)
endfunction()

# scripts/sweep_summary.py (bench --json files to a markdown table against issue 14's bars) on a
# recorded H200 bench file and made-up documents.
gemvtune_script_test(sweep_summary test_sweep_summary.py)

# scripts/batch_summary.py (batched bench --json files and the M = 8 chain to issue 11's tables and
# bars) on recorded H200 files and made-up documents.
gemvtune_script_test(batch_summary test_batch_summary.py)

# scripts/quant_summary.py (quantized bench --json files and quant_peers.py's JSON to issue 12's
# table and bars) on recorded H100 files and made-up documents.
gemvtune_script_test(quant_summary test_quant_summary.py)

# scripts/spread_summary.py (gemvtune-sweep CSVs with GEMVTUNE_SWEEP_SPREAD=1 to spread / plain
# per shape) on made-up CSVs.
gemvtune_script_test(spread_summary test_spread_summary.py)

# scripts/limiter_check.py (explain's limiter against measured PDL and no-PDL times, issue 15) on
# the recorded H200 bench file and made-up documents, with explain injected or a stand-in CLI.
gemvtune_script_test(limiter_check test_limiter_check.py)

# `pip install .`: builds the wheel from the source tree (scikit-build-core from PyPI, the
# shared library only) into <build>/python-wheel, installs it into a folder and runs the CPU
# tests against the installed package. About two minutes on two cores.
option(GEMVTUNE_TEST_WHEEL "Test that `pip install .` builds (needs pip and PyPI)" ON)
if(GEMVTUNE_TEST_WHEEL)
  add_test(NAME python_wheel
    COMMAND ${CMAKE_COMMAND} -DPYTHON=${gemvtune_test_python} -DSOURCE=${CMAKE_SOURCE_DIR}
      -DWORK_DIR=${CMAKE_BINARY_DIR}/python-wheel -P ${CMAKE_SOURCE_DIR}/tests/python/wheel_test.cmake)
  set_tests_properties(python_wheel PROPERTIES TIMEOUT 900
    ENVIRONMENT "CMAKE_BUILD_PARALLEL_LEVEL=2;PYTHONDONTWRITEBYTECODE=1;PIP_DISABLE_PIP_VERSION_CHECK=1")
endif()

# The Python bench and example scripts refuse bad arguments (status 2) before they need PyTorch
# or a GPU.
gemvtune_script_test(script_arguments test_script_arguments.py)
