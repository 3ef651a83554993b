target_sources(gemvtune PRIVATE
  ${CMAKE_SOURCE_DIR}/tuner/host_data.cpp
  ${CMAKE_SOURCE_DIR}/tuner/device_problem.cpp
  ${CMAKE_SOURCE_DIR}/tuner/l2_flush.cpp
  ${CMAKE_SOURCE_DIR}/tuner/model.cpp)
target_sources(gemvtune PRIVATE
  ${CMAKE_SOURCE_DIR}/tuner/strategy_common.cpp
  ${CMAKE_SOURCE_DIR}/tuner/strategy_exhaustive.cpp
  ${CMAKE_SOURCE_DIR}/tuner/strategy_model.cpp
  ${CMAKE_SOURCE_DIR}/tuner/strategy_rank_correlation.cpp
  ${CMAKE_SOURCE_DIR}/tuner/strategy_select.cpp
  ${CMAKE_SOURCE_DIR}/tuner/compile_pool.cpp
  ${CMAKE_SOURCE_DIR}/tuner/tuner.cpp
  ${CMAKE_SOURCE_DIR}/tuner/tune_devices.cpp
  ${CMAKE_SOURCE_DIR}/tuner/peak.cpp
  ${CMAKE_SOURCE_DIR}/tuner/presets.cpp
  ${CMAKE_SOURCE_DIR}/tuner/report_json.cpp
  ${CMAKE_SOURCE_DIR}/tuner/explain.cpp
  ${CMAKE_SOURCE_DIR}/tuner/warp_steps.cpp
  ${CMAKE_SOURCE_DIR}/tuner/fit_report.cpp)
