# Every dependency comes from a Debian package or the CUDA toolkit on the machine.
# Nothing is downloaded at configure time.

# --- CUDA toolkit: headers, NVRTC, nvJitLink. libcuda is never linked (runtime/ dlopens it).
set(MOEJIT_CUDA_ROOT "/usr/local/cuda" CACHE PATH "CUDA toolkit root")
find_path(MOEJIT_CUDA_INCLUDE_DIR cuda.h cudaTypedefs.h nvrtc.h nvJitLink.h
          HINTS ${MOEJIT_CUDA_ROOT}/include REQUIRED)
find_library(MOEJIT_NVRTC_LIBRARY nvrtc HINTS ${MOEJIT_CUDA_ROOT}/lib64 REQUIRED)
# CMake 3.25's FindCUDAToolkit has no nvJitLink target.
find_library(MOEJIT_NVJITLINK_LIBRARY nvJitLink HINTS ${MOEJIT_CUDA_ROOT}/lib64 REQUIRED)
get_filename_component(MOEJIT_CUDA_LIBDIR ${MOEJIT_NVRTC_LIBRARY} DIRECTORY)

# nvcc builds the one kernel NVRTC cannot (NCCL's device header): runtime/nccl/peer_table.cu.
find_program(MOEJIT_NVCC nvcc HINTS ${MOEJIT_CUDA_ROOT}/bin REQUIRED)
find_path(MOEJIT_NCCL_INCLUDE_DIR nccl.h nccl_device.h HINTS ${MOEJIT_CUDA_ROOT}/include REQUIRED)

add_library(moejit_cuda_headers INTERFACE)
target_include_directories(moejit_cuda_headers SYSTEM INTERFACE ${MOEJIT_CUDA_INCLUDE_DIR})

add_library(moejit_cuda_compilers INTERFACE)
target_link_libraries(moejit_cuda_compilers INTERFACE moejit_cuda_headers ${MOEJIT_NVRTC_LIBRARY}
                                                      ${MOEJIT_NVJITLINK_LIBRARY})
# The binaries run on the GPU machine from a carried folder: find the toolkit there by rpath.
set(CMAKE_BUILD_RPATH ${MOEJIT_CUDA_LIBDIR})
set(CMAKE_INSTALL_RPATH ${MOEJIT_CUDA_LIBDIR})
# Only libraries whose symbols are used become NEEDED (LLVM's exported link
# interface names libz3 and others that our static Support objects never touch).
add_link_options(-Wl,--as-needed)

# --- LLVM 19: static Support and FileCheck only, never libLLVM.so.
find_package(LLVM 19.1 REQUIRED CONFIG HINTS /usr/lib/llvm-19/lib/cmake/llvm)
add_library(moejit_llvm INTERFACE)
target_include_directories(moejit_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
separate_arguments(_llvm_defs NATIVE_COMMAND ${LLVM_DEFINITIONS})
target_compile_definitions(moejit_llvm INTERFACE ${_llvm_defs})
target_link_libraries(moejit_llvm INTERFACE LLVMSupport)
add_library(moejit_llvm_filecheck INTERFACE)
target_link_libraries(moejit_llvm_filecheck INTERFACE moejit_llvm LLVMFileCheck)

# --- fmt, from its headers, without libfmt.so (Debian ships no static libfmt, and the GPU machine has no
# libfmt.so). Header-only mode would compile fmt's implementation into every translation unit that formats,
# most of a build's time here; instead one translation unit of ours compiles it (fmt_once.cpp) and every
# other one sees declarations only.
find_package(fmt 9 REQUIRED CONFIG)
add_library(moejit_fmt STATIC ${CMAKE_CURRENT_LIST_DIR}/fmt_once.cpp)
target_include_directories(moejit_fmt SYSTEM PUBLIC $<TARGET_PROPERTY:fmt::fmt,INTERFACE_INCLUDE_DIRECTORIES>)
# --- nlohmann/json, doctest.
find_package(nlohmann_json 3.11 REQUIRED CONFIG)
find_package(doctest 2.4 REQUIRED CONFIG)

find_package(Threads REQUIRED)
