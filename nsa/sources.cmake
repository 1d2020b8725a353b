# The model library (libtorch). Included from nsa/CMakeLists.txt.
add_library(nsa STATIC
  runtime.cpp nsa_weights.cpp nsa_ops.cpp nsa_reference.cpp nsa_batched.cpp nsa_decode.cpp
  nsa_layer.cpp model.cpp data.cpp optim.cpp trainer.cpp)
target_link_libraries(nsa PUBLIC nsa_config ${TORCH_LIBRARIES})
target_compile_options(nsa PUBLIC ${TORCH_CXX_FLAGS})
# libtorch headers dominate build time: precompile the one umbrella we use.
target_precompile_headers(nsa PRIVATE <ATen/ATen.h>)
set_target_properties(nsa PROPERTIES POSITION_INDEPENDENT_CODE ON)

if(NSA_HAVE_CUDA AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/cuda/CMakeLists.txt)
  add_subdirectory(cuda)
endif()

# CPU tests of the model: every path against the reference, causality, gradients, training.
nsa_add_test(nsa_model_test
  SOURCES nsa_paths_test.cpp nsa_spec_test.cpp nsa_causality_test.cpp nsa_gradcheck_test.cpp training_test.cpp optim_test.cpp
          test_support.cpp
  LIBS nsa)
if(TARGET nsa_model_test)
  target_precompile_headers(nsa_model_test PRIVATE <ATen/ATen.h>)
endif()

# libtorch's include directory carries its own {fmt} headers (a newer major
# version than the system library), and they shadow the system ones in every
# target that sees libtorch's includes. Such targets use {fmt} header-only, so
# no symbol from the other version is ever needed at link time.
target_compile_definitions(nsa PUBLIC FMT_HEADER_ONLY=1)
