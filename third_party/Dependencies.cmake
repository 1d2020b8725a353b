# Finds every external dependency of nsa-harness. Each package comes from the
# system (Debian -dev packages, the CUDA toolkit) or, for libtorch and the
# libraries it loads (cuDNN, NCCL), from the Python `torch` wheel and its
# dependencies. Two sets of headers are vendored, each for a library whose code
# is already in torch's wheel but whose headers are not: gloo's and cuDNN's
# frontend (third_party/*/README.md).

# --- libtorch ---------------------------------------------------------------
# NSA_TORCH=OFF builds only what does not link libtorch (the scenario loader and
# validator, supervisor, analysis, report, trace): the sanitizer and fuzzing
# builds, which compile in minutes and run under ASan without torch's own leaks.
option(NSA_TORCH "Build the model and everything that links libtorch" ON)
if(NSA_TORCH)
  # PyTorch's C++ docs locate libtorch through the Python package; we pin the
  # version the GPU machines carry so CI and GPU builds compile the same API.
  set(NSA_TORCH_VERSION "2.11.0" CACHE STRING "libtorch version the build is pinned to")
  # The interpreter is Python3_EXECUTABLE when given (scripts/setup.sh passes the one
  # it chose: the active environment's, or the project's .venv/), else FindPython3's.
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  # Torch's paths are cached from the interpreter that found them; another interpreter
  # (a new .venv/, another environment) needs a fresh cache, or it links the old libtorch.
  if(DEFINED NSA_TORCH_PYTHON AND NOT NSA_TORCH_PYTHON STREQUAL Python3_EXECUTABLE)
    message(FATAL_ERROR "${CMAKE_BINARY_DIR} found libtorch through ${NSA_TORCH_PYTHON}, not "
                        "${Python3_EXECUTABLE}: configure it again with `cmake --fresh`")
  endif()
  if(NOT Torch_DIR)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c "import torch,sys;sys.stdout.write(torch.utils.cmake_prefix_path+';'+torch.__version__)"
      OUTPUT_VARIABLE _torch_info RESULT_VARIABLE _torch_rc ERROR_QUIET)
    if(NOT _torch_rc EQUAL 0)
      message(FATAL_ERROR "Python package 'torch' not found for ${Python3_EXECUTABLE}; run `make deps` (pip install torch==${NSA_TORCH_VERSION})")
    endif()
    list(GET _torch_info 0 _torch_prefix)
    list(GET _torch_info 1 _torch_version)
    string(REGEX REPLACE "\\+.*$" "" _torch_version_base "${_torch_version}")
    if(NOT _torch_version_base VERSION_EQUAL NSA_TORCH_VERSION)
      message(FATAL_ERROR "torch ${_torch_version} found, the build is pinned to ${NSA_TORCH_VERSION}")
    endif()
    list(APPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
    set(NSA_TORCH_VERSION_FULL "${_torch_version}" CACHE INTERNAL "")
    set(NSA_TORCH_PYTHON "${Python3_EXECUTABLE}" CACHE INTERNAL "interpreter Torch_DIR came from")
  endif()
  # Torch's config pulls in Caffe2's CUDA glue when the wheel is a CUDA build; that
  # only needs the toolkit's headers and stub libraries, not a GPU.
  # Torch's CUDA glue adds -gencode flags for TORCH_CUDA_ARCH_LIST, by default every
  # architecture of the wheel down to sm_50, which nvcc 13 rejects: name ours.
  if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(ENV{TORCH_CUDA_ARCH_LIST} "8.0;9.0")
  endif()
  # Our CUDA architectures: Hopper first, and sm_80 must keep building (DESIGN §5 of the
  # kernels issue); 90 builds as sm_90a (nsa/cuda). Set before the glue enables CUDA,
  # which would fill in nvcc's default (75). The glue then sets CMAKE_CUDA_ARCHITECTURES
  # to OFF ("pytorch ... will ignore its value"), a normal variable that hides the cache
  # entry: left there, a user's -DCMAKE_CUDA_ARCHITECTURES=90 was replaced by 80;90, and
  # the folders that read the variable (harness/probes, harness/trace) built for nvcc's
  # default. Dropped, the cache entry counts again.
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures (90 builds as sm_90a)")
  endif()
  find_package(Torch REQUIRED)
  unset(CMAKE_CUDA_ARCHITECTURES)
  # The glue also appends its -gencode flags to CMAKE_CUDA_FLAGS; every .cu of ours
  # (nsa/cuda, harness/probes, harness/trace) builds for CMAKE_CUDA_ARCHITECTURES
  # instead, so they go here, once, before any folder reads the variable.
  if(CMAKE_CUDA_FLAGS MATCHES "-gencode")
    string(REGEX REPLACE "-gencode[= ]arch=[^ ]+" "" CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS}")
  endif()
endif()

# --- the small libraries ----------------------------------------------------
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
if(NSA_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(NSA_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()

# yaml-cpp's exported target name changed across versions.
if(TARGET yaml-cpp::yaml-cpp)
  set(NSA_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(NSA_YAML_TARGET yaml-cpp)
endif()

# --- CUDA -------------------------------------------------------------------
# AUTO: on when the torch wheel is a CUDA build and nvcc exists. The kernels
# compile without a GPU; nothing here runs them.
set(NSA_CUDA "AUTO" CACHE STRING "Build the CUDA kernels and CUPTI/NVTX probes: ON, OFF or AUTO")
set_property(CACHE NSA_CUDA PROPERTY STRINGS ON OFF AUTO)
set(NSA_HAVE_CUDA OFF)
if(NSA_TORCH AND NOT NSA_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  set(_torch_has_cuda OFF)
  if(TARGET torch_cuda OR TARGET c10_cuda OR EXISTS "${TORCH_INSTALL_PREFIX}/lib/libtorch_cuda.so")
    set(_torch_has_cuda ON)
  endif()
  if(CMAKE_CUDA_COMPILER AND _torch_has_cuda)
    set(NSA_HAVE_CUDA ON)
  elseif(NSA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "NSA_CUDA=ON but nvcc (${CMAKE_CUDA_COMPILER}) or a CUDA build of torch is missing")
  endif()
endif()
if(NSA_HAVE_CUDA)
  enable_language(CUDA)
  # Host debug info as the C++ files get it (-g1: line tables, what backtraces need):
  # CMake's RelWithDebInfo default for CUDA is nvcc -g, full host debug info. On a
  # 2-core machine row_dot.cu's host compile (gcc, ATen's headers) took 11.0 s with
  # -g against 8.6 with -g1, of 31.8 s for the whole file; the CI build as a whole
  # did not shorten measurably. Kept when the user set other flags.
  if(CMAKE_CUDA_FLAGS_RELWITHDEBINFO STREQUAL "-O2 -g -DNDEBUG")
    set(CMAKE_CUDA_FLAGS_RELWITHDEBINFO "-O2 -DNDEBUG -Xcompiler=-g1")
  endif()
  find_package(CUDAToolkit REQUIRED)
  find_library(NSA_CUPTI_LIBRARY cupti
    HINTS ${CUDAToolkit_LIBRARY_ROOT}/extras/CUPTI/lib64 ${CUDAToolkit_LIBRARY_DIR})
  find_path(NSA_CUPTI_INCLUDE cupti.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/extras/CUPTI/include)
  # cuDNN: the library libtorch loads (the nvidia-cudnn wheel torch depends on)
  # and its C headers, for the window branch's cuDNN route (nsa/cuda/window_cudnn.h)
  # through the vendored frontend (third_party/cudnn_frontend/README.md).
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -c "import nvidia.cudnn,sys;sys.stdout.write(list(nvidia.cudnn.__path__)[0])"
    OUTPUT_VARIABLE _cudnn_root ERROR_QUIET)
  # Only the wheel's copy: a process loads one libcudnn.so.9, and linking another
  # (a toolkit's /usr/local/cuda/lib) puts its directory in our RPATH, so libtorch
  # would run on that cuDNN too (measured on an H200: its SDPA 28-56 % slower at the m7c training shape).
  find_path(NSA_TORCH_CUDNN_INCLUDE cudnn.h PATHS ${_cudnn_root}/include NO_DEFAULT_PATH)
  find_library(NSA_TORCH_CUDNN_LIBRARY NAMES libcudnn.so.9 cudnn NAMES_PER_DIR PATHS ${_cudnn_root}/lib
               NO_DEFAULT_PATH)
  if(NOT NSA_TORCH_CUDNN_INCLUDE OR NOT NSA_TORCH_CUDNN_LIBRARY)
    message(FATAL_ERROR "cuDNN (cudnn.h, libcudnn.so.9) not found beside torch (nvidia.cudnn: '${_cudnn_root}'): "
                        "the CUDA build of torch ${NSA_TORCH_VERSION} brings it (pip's nvidia-cudnn wheel)")
  endif()
  set(NSA_CUDNN_FRONTEND_INCLUDE "${CMAKE_CURRENT_LIST_DIR}/cudnn_frontend/include")
endif()
set(NSA_CUDA_KERNELS ${NSA_HAVE_CUDA} CACHE INTERNAL "whether this tree builds the CUDA kernels (scripts/setup.sh reads it)")
message(STATUS "nsa-harness: torch ${NSA_TORCH} ${NSA_TORCH_VERSION_FULL} from ${Python3_EXECUTABLE}, CUDA kernels ${NSA_HAVE_CUDA}")

# --- distributed backends (world_size > 1 cells) -----------------------------
# libtorch ships c10d's Gloo and NCCL process groups compiled in (its CMake
# config defines USE_C10D_GLOO / USE_C10D_NCCL / USE_DISTRIBUTED for every
# target that links it), but their headers include gloo's and NCCL's own
# headers, which the wheel does not carry. Only nsa/dist/process_group.cpp
# includes them, under NSA_WITH_GLOO / NSA_WITH_NCCL. Gloo's are vendored in
# third_party/gloo at the commit the pinned torch was built from
# (third_party/gloo/README.md), and used even where a system copy exists: a
# different snapshot declares other classes (Debian's 2022 one has no IStore
# base under gloo::rendezvous::Store, which c10d's GlooStore derives from),
# and the symbols are libtorch's, built from these. NCCL's come from the
# nvidia-nccl wheel torch depends on. A build without one compiles, and its
# world_size > 1 cells that need it are skipped.
set(NSA_HAVE_GLOO OFF)
set(NSA_HAVE_NCCL OFF)
set(NSA_GLOO_VENDORED_FOR "2.11.0")
if(NSA_TORCH)
  set(NSA_GLOO_HEADERS "${CMAKE_CURRENT_LIST_DIR}/gloo" CACHE PATH
      "gloo headers matching libtorch's gloo (default: the vendored copy)")
  if(NOT NSA_TORCH_VERSION VERSION_EQUAL NSA_GLOO_VENDORED_FOR)
    message(WARNING "third_party/gloo matches torch ${NSA_GLOO_VENDORED_FOR}, the build is pinned to "
                    "${NSA_TORCH_VERSION}: refresh it (third_party/gloo/README.md)")
  endif()
  if(EXISTS "${NSA_GLOO_HEADERS}/gloo/algorithm.h")
    set(NSA_HAVE_GLOO ON)
  endif()
  if(NSA_HAVE_CUDA)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c "import nvidia.nccl,os,sys;sys.stdout.write(os.path.join(list(nvidia.nccl.__path__)[0],'include'))"
      OUTPUT_VARIABLE _nccl_hint ERROR_QUIET)
    find_path(NSA_NCCL_INCLUDE nccl.h HINTS ${_nccl_hint} ${CUDAToolkit_INCLUDE_DIRS})
    if(NSA_NCCL_INCLUDE)
      set(NSA_HAVE_NCCL ON)
    endif()
  endif()
endif()
message(STATUS "nsa-harness: distributed backends gloo ${NSA_HAVE_GLOO}, nccl ${NSA_HAVE_NCCL}")

# --- sanitizers and fuzzing -------------------------------------------------
# NSA_SANITIZE=address,undefined instruments every target (CMakePresets.json:
# `sanitize`); NSA_FUZZ adds the libFuzzer targets and needs clang (`fuzz`).
set(NSA_SANITIZE "" CACHE STRING "-fsanitize= list for every target, e.g. address,undefined")
option(NSA_FUZZ "Build the libFuzzer targets (clang)" OFF)
if(NSA_SANITIZE)
  add_compile_options(-fsanitize=${NSA_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${NSA_SANITIZE})
endif()
if(NSA_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "NSA_FUZZ needs clang (libFuzzer): configure with the `fuzz` preset")
  endif()
  # Coverage for libFuzzer in every library; only the fuzz targets link its main.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
