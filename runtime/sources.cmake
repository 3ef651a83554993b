target_sources(gemvtune PRIVATE
  ${CMAKE_SOURCE_DIR}/runtime/kernel_store.cpp
  ${CMAKE_SOURCE_DIR}/runtime/plan.cpp
  ${CMAKE_SOURCE_DIR}/runtime/runtime.cpp
  ${CMAKE_SOURCE_DIR}/runtime/resolve.cpp
  ${CMAKE_SOURCE_DIR}/runtime/c_api.cpp
  ${CMAKE_SOURCE_DIR}/runtime/c_api_offline.cpp)
