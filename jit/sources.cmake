target_sources(gemvtune PRIVATE
  ${CMAKE_SOURCE_DIR}/jit/driver_api.cpp
  ${CMAKE_SOURCE_DIR}/jit/cuda_handles.cpp
  ${CMAKE_SOURCE_DIR}/jit/nvrtc_compiler.cpp
  ${CMAKE_SOURCE_DIR}/jit/elf_image.cpp
  ${CMAKE_SOURCE_DIR}/jit/cubin_info.cpp
  ${CMAKE_SOURCE_DIR}/jit/kernel_cache.cpp
  ${CMAKE_SOURCE_DIR}/jit/gemv_launch.cpp
  ${CMAKE_SOURCE_DIR}/jit/loaded_kernels.cpp)
