// The source of nsa_torch_pch_exe (cmake/TorchPch.cmake): a target needs one to build
// the precompiled <ATen/ATen.h> that the torch-including executables reuse.
