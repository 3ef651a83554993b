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

# scripts/sweep_summary.py (bench --json files to a markdown table against issue 14's bars) on a
# recorded H200 bench file and made-up documents: no GPU, no library, standard library only.
add_test(NAME sweep_summary
  COMMAND "${gemvtune_test_python}" -m pytest -q -rs -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/bench/test_sweep_summary.py
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(sweep_summary PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 300)

# scripts/batch_summary.py (batched bench --json files and the M = 8 chain to issue 11's tables and
# bars) on recorded H200 files and made-up documents: no GPU, no library, standard library only.
add_test(NAME batch_summary
  COMMAND "${gemvtune_test_python}" -m pytest -q -rs -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/bench/test_batch_summary.py
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(batch_summary PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 300)

# scripts/quant_summary.py (quantized bench --json files and quant_peers.py's JSON to issue 12's
# table and bars) on recorded H100 files and made-up documents: no GPU, no library, standard
# library only.
add_test(NAME quant_summary
  COMMAND "${gemvtune_test_python}" -m pytest -q -rs -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/bench/test_quant_summary.py
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(quant_summary PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 300)

# scripts/spread_summary.py (gemvtune-sweep CSVs with GEMVTUNE_SWEEP_SPREAD=1 to spread / plain
# per shape) on made-up CSVs: no GPU, no library, standard library only.
add_test(NAME spread_summary
  COMMAND "${gemvtune_test_python}" -m pytest -q -rs -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/bench/test_spread_summary.py
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(spread_summary PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 300)

# scripts/limiter_check.py (explain's limiter against measured PDL and no-PDL times, issue 15) on
# the recorded H200 bench file and made-up documents, with explain injected or a stand-in CLI:
# no GPU, no library, standard library only.
add_test(NAME limiter_check
  COMMAND "${gemvtune_test_python}" -m pytest -q -rs -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/bench/test_limiter_check.py
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(limiter_check PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 300)

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
# or a GPU: standard library and pytest only.
add_test(NAME script_arguments
  COMMAND "${gemvtune_test_python}" -m pytest -q -rs -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/bench/test_script_arguments.py
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(script_arguments PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 300)
