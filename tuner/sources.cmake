target_sources(gemvtune PRIVATE
  ${CMAKE_SOURCE_DIR}/tuner/host_data.cpp
  ${CMAKE_SOURCE_DIR}/tuner/device_problem.cpp
  ${CMAKE_SOURCE_DIR}/tuner/model.cpp)
