# The model library (libtorch). Included from nsa/CMakeLists.txt.
add_library(nsa STATIC
  runtime.cpp determinism.cpp nsa_weights.cpp nsa_ops.cpp linear_bias.cpp nsa_reference.cpp nsa_batched.cpp nsa_decode.cpp
  nsa_layer.cpp dense_attention.cpp model.cpp data.cpp data_prefetch.cpp optim.cpp trainer.cpp step_graph.cpp)
target_link_libraries(nsa PUBLIC nsa_config ${TORCH_LIBRARIES})
target_compile_options(nsa PUBLIC ${TORCH_CXX_FLAGS})
# libtorch headers dominate build time: precompile the one umbrella we use.
target_precompile_headers(nsa PRIVATE <ATen/ATen.h>)
set_target_properties(nsa PROPERTIES POSITION_INDEPENDENT_CODE ON)

add_subdirectory(dist)

if(NSA_HAVE_CUDA AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/cuda/CMakeLists.txt)
  add_subdirectory(cuda)
endif()

# CPU tests of the model: every path against the reference, causality, gradients, training.
nsa_add_test(nsa_model_test
  SOURCES nsa_oracle_test.cpp nsa_paths_test.cpp nsa_spec_test.cpp determinism_test.cpp nsa_causality_test.cpp nsa_gradcheck_test.cpp training_test.cpp optim_test.cpp dense_attention_test.cpp
          linear_bias_test.cpp
          test_support.cpp
  LIBS nsa)

# Mutation self-test (mutations.h). nsa_mutation_test checks that every mutation
# changes the layer; it is the only test binary that reads the registry.
nsa_add_test(nsa_mutation_test SOURCES mutation_layer_test.cpp test_support.cpp LIBS nsa)
# The batch prefetcher (threads, deadlines, fake producers): seconds, not minutes.
nsa_add_test(nsa_data_test SOURCES data_prefetch_test.cpp LIBS nsa)
nsa_torch_pch(nsa_model_test nsa_mutation_test nsa_data_test)
# Each mutation must be caught by the model's own tests, which do not know it:
# nsa_model_test run with NSA_MUTATION=<name> must report a failed test (exit 1
# with a "[  FAILED  ] Suite.Test" line; a crash, or exit 2 for an unknown name,
# is not a catch). The tests run are the layer's: oracles, spec, paths against
# the reference, decode. Gradient checks, training and the causality sweep take
# minutes each and are left out; fail-fast stops at the first catch. The same
# subset is what `nsa-harness selftest --mutations` runs (harness/cli). The
# names are read from the registry rows of mutations.cpp.
set(NSA_MUTATION_TEST_FILTER "Oracle.*:Spec.*:SelectTopN.*:*PathsAgree.*:DecodeStep.*" CACHE INTERNAL
    "nsa_model_test's tests that a mutation must fail")
if(TARGET nsa_model_test)
  file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/mutations.cpp _mutation_rows ENCODING UTF-8 REGEX "^    {M::[a-z0-9_]+,")
  file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/mutations.h _mutation_enum ENCODING UTF-8 REGEX "^  [a-z0-9_]+,$")
  list(LENGTH _mutation_rows _rows)
  list(LENGTH _mutation_enum _enum)
  if(NOT _rows EQUAL _enum)
    message(FATAL_ERROR "mutations.cpp: read ${_rows} registry rows for ${_enum} mutations in mutations.h")
  endif()
  set(_caught_by "${NSA_MUTATION_TEST_FILTER}")
  foreach(_row IN LISTS _mutation_rows)
    string(REGEX REPLACE "^    {M::([a-z0-9_]+),.*" "\\1" _name "${_row}")
    add_test(NAME mutation.${_name}.caught_by_model_tests
             COMMAND sh -c "out=$(NSA_MUTATION=${_name} \"$0\" --gtest_filter='${_caught_by}' --gtest_fail_fast 2>&1); rc=$?; echo \"$out\" | grep -E '^\\[  FAILED  \\] [A-Za-z]' | head -3; test $rc -eq 1 && echo \"$out\" | grep -qE '^\\[  FAILED  \\] [A-Za-z_/]+\\.'"
                     $<TARGET_FILE:nsa_model_test>)
    set_tests_properties(mutation.${_name}.caught_by_model_tests PROPERTIES LABELS "cpu;mutation" TIMEOUT 300)
  endforeach()
endif()

# libtorch's include directory carries its own {fmt} headers (a newer major
# version than the system library), and they shadow the system ones in every
# target that sees libtorch's includes. Such targets use {fmt} header-only, so
# no symbol from the other version is ever needed at link time.
target_compile_definitions(nsa PUBLIC FMT_HEADER_ONLY=1)
