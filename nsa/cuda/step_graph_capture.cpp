// The captured training step (nsa/step_graph.h says what capture requires and
// why a replay computes what the eager step computes).
//
// Sequence, following the CUDA-graph recipe of PyTorch's docs: one
// forward+backward on a side stream as warm-up (lazy initialisation — cuBLAS
// workspaces for that stream, autograd's device threads — must not happen
// inside the capture), gradients zeroed, then Trainer::device_step captured on
// that stream into the graph's private memory pool. Capture records kernels
// and executes nothing: no weight moves until the first replay.
#include "nsa/cuda/step_graph_capture.h"

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>

#include "nsa/observer.h"
#include "nsa/runtime.h"
#include "nsa/trainer.h"

namespace nsa::cuda {
namespace {

// The observer the capture runs under: it passes on the tensors the model
// hands over and nothing else. Those tensors are the graph's own (allocated
// from its pool during capture, kept alive by whoever took them), so each
// replay rewrites them with that step's values: an observer that takes them
// now reads every later replayed step's activations without an eager step.
// Phases, routes and sync counts are host events of an eager step; the
// capture must not report them as a step of its own.
class TensorsOnly : public Observer {
 public:
  explicit TensorsOnly(Observer* inner) : inner_(inner) {}
  bool wants_tensors() const override { return inner_ && inner_->wants_tensors(); }
  void tensor(std::string_view name, int layer, int branch, const at::Tensor& t) override {
    if (inner_) inner_->tensor(name, layer, branch, t);
  }

 private:
  Observer* inner_;
};

// Makes `waiter` wait for the work queued so far on `on`.
void order_after(const c10::cuda::CUDAStream& on, const c10::cuda::CUDAStream& waiter) {
  at::cuda::CUDAEvent ev;
  ev.record(on);
  ev.block(waiter);
}

class CudaStepGraph : public StepGraph {
 public:
  CudaStepGraph(Trainer& trainer, const at::Tensor& batch, Runtime& rt) {
    c10::cuda::CUDAGuard device(batch.device());
    // The warm-up reports nothing (its tensors are not the graph's); the
    // capture reports only tensors (TensorsOnly).
    Runtime quiet = rt;
    quiet.observer = nullptr;
    TensorsOnly tensors_only(rt.observer);
    const auto caller = c10::cuda::getCurrentCUDAStream();
    const auto side = c10::cuda::getStreamFromPool();
    batch_ = batch.clone();
    order_after(caller, side);
    {
      c10::cuda::CUDAStreamGuard on_side(side);
      trainer.forward_backward(batch_, quiet);
      trainer.zero_grads();
      // ThreadLocal: a sync or an allocation outside the pool by this thread
      // fails the capture; the batch prefetcher's thread may pin memory meanwhile.
      graph_.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
      try {
        Runtime capturing = quiet;
        capturing.observer = &tensors_only;
        stats_ = trainer.device_step(quiet.step, batch_, capturing);
      } catch (...) {
        abandon_capture();
        throw;
      }
      graph_.capture_end();  // instantiates
    }
    order_after(side, caller);
  }

  bool accepts(const at::Tensor& batch) const override {
    return batch.sizes() == batch_.sizes() && batch.scalar_type() == batch_.scalar_type() &&
           batch.device() == batch_.device();
  }

  at::Tensor replay(const at::Tensor& batch) override {
    TORCH_CHECK(accepts(batch), "CUDA graph step: batch ", batch.sizes(), " differs from the captured ", batch_.sizes());
    batch_.copy_(batch, /*non_blocking=*/true);
    graph_.replay();  // on the current stream, after the copy and AdamW's schedule
    return stats_;
  }

 private:
  // Ends a capture the step's code broke (a host sync, an unsupported call), so
  // the stream and the allocator leave capture mode and eager steps can go on.
  void abandon_capture() noexcept {
    try {
      graph_.capture_end();
    } catch (...) {
    }
    (void)cudaGetLastError();  // the capture error is not the next kernel's
  }

  at::Tensor batch_, stats_;
  at::cuda::CUDAGraph graph_;
};

std::unique_ptr<StepGraph> capture(Trainer& trainer, const at::Tensor& batch, Runtime& rt) {
  TORCH_CHECK(batch.is_cuda(), "CUDA graph step: the batch is on ", batch.device());
  return std::make_unique<CudaStepGraph>(trainer, batch, rt);
}

}  // namespace

void register_step_graph_capture() { register_step_graph(&capture); }

}  // namespace nsa::cuda
