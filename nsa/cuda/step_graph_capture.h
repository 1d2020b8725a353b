#pragma once
// Registers the CUDA capture of the training step (nsa/step_graph.h) with the
// trainer; register_with_layer() calls it with the other CUDA paths.
namespace nsa::cuda {
void register_step_graph_capture();
}
