#pragma once
// Data parallelism the way PyTorch's DDP does it, for nsa::Trainer: the model
// starts from rank 0's parameters (one broadcast per parameter), and after
// each backward the gradients are averaged across ranks in flattened buckets
// (grad_buckets.h) before the norm, clipping and the optimizer, so every rank
// takes the same step and the ranks stay identical. The loss is averaged in
// the same collective, so each rank reports the global batch's loss.
//
// Three distributed faults are planted here (faults.h); each hits the last
// rank only, from step 3 (kFaultStep), the way a rank-dependent bug would.
#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "nsa/dist/grad_buckets.h"
#include "nsa/dist/process_group.h"
#include "nsa/trainer.h"

namespace nsa::dist {

inline constexpr int kFaultStep = 3;

class DataParallel : public GradSync {
 public:
  DataParallel(Comm& comm, int64_t bucket_bytes = kDefaultBucketBytes) : comm_(comm), bucket_bytes_(bucket_bytes) {}

  // Every rank takes rank 0's parameters (DDP's constructor does the same).
  void broadcast_parameters(Model& model);

  void reduce(int step, std::vector<at::Tensor>& grads, at::Tensor& loss) override;
  void after_update(int step, Model& model) override;

  // Rows [begin, end) of a global batch of `batch` rows that this rank trains on.
  std::pair<int64_t, int64_t> slice(int64_t batch) const;

 private:
  bool faulty_rank() const { return comm_.rank() == comm_.world_size() - 1; }

  Comm& comm_;
  int64_t bucket_bytes_;
  std::vector<Bucket> buckets_;  // planned on the first step (the gradient set never changes)
};

// A checksum of every parameter (float64 sums of values and of squares): equal
// on two ranks exactly when they hold the same parameters, as far as a
// checksum can tell. Rank-local, cheap; the harness compares it across ranks.
std::pair<double, double> parameter_checksum(Model& model);

}  // namespace nsa::dist
