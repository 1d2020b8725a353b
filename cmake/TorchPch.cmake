# nsa_torch_pch(<target>...): the targets' sources reuse one precompiled <ATen/ATen.h>
# instead of each parsing it again. A translation unit that includes ATen takes about
# five times as long without it (a clean build's ninja log: nsa/test_support.cpp took
# 163 s in nsa_mutation_test, without, and 32 s in nsa_model_test, with), and most of our torch-including sources sit in targets of
# one to three sources, where a PCH of their own would cost as much as it saves.
#
# GCC accepts a PCH only where it was built with the same -fPIC/-fPIE setting
# (-Winvalid-pch, which CMake turns on, says when it is refused), so there are two:
# libraries reuse nsa's (-fPIC; they are made position-independent to match) and
# executables reuse the one of nsa_torch_pch_exe, an object library with no code of
# its own. Both link nsa, so the macros libtorch's headers read (FMT_HEADER_ONLY,
# TORCH_CXX_FLAGS) are set alike in the PCH and in the sources that use it.
function(nsa_torch_pch)
  if(NOT TARGET nsa_torch_pch_exe)
    add_library(nsa_torch_pch_exe OBJECT ${PROJECT_SOURCE_DIR}/cmake/torch_pch.cpp)
    target_link_libraries(nsa_torch_pch_exe PRIVATE nsa)
    target_precompile_headers(nsa_torch_pch_exe PRIVATE <ATen/ATen.h>)
  endif()
  foreach(target IN LISTS ARGN)
    if(NOT TARGET ${target})
      continue()  # a test target when NSA_BUILD_TESTS is OFF
    endif()
    # nvcc takes no GCC PCH: the target's CUDA sources compile without it, so they
    # and the headers they include take <ATen/core/Tensor.h> and the ATen/ops/*.h of
    # the at:: functions they call, never <ATen/ATen.h> (nsa/cuda/nsa_cuda.h: why).
    get_target_property(sources ${target} SOURCES)
    list(FILTER sources INCLUDE REGEX "\\.cu$")
    if(sources)
      set_source_files_properties(${sources} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      target_precompile_headers(${target} REUSE_FROM nsa_torch_pch_exe)
    else()
      set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
      target_precompile_headers(${target} REUSE_FROM nsa)
    endif()
  endforeach()
endfunction()
