#include "nsa/dist/data_parallel.h"

#include <chrono>
#include <thread>

#include "nsa/faults.h"

namespace nsa::dist {

void DataParallel::broadcast_parameters(Model& model) {
  at::NoGradGuard ng;
  for (auto& [name, p] : model.parameters()) {
    at::Tensor t = p.detach();
    comm_.broadcast(t, /*root=*/0, /*step=*/0);
  }
}

std::pair<int64_t, int64_t> DataParallel::slice(int64_t batch) const {
  const int64_t per = batch / comm_.world_size();
  return {per * comm_.rank(), per * (comm_.rank() + 1)};
}

void DataParallel::reduce(int step, std::vector<at::Tensor>& grads, at::Tensor& loss) {
  // A rank that computes slower than the others (a throttled device, a noisy
  // neighbour): it reaches every collective late and the others wait for it.
  if (fault_on(Fault::slow_rank) && faulty_rank()) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  // A rank-dependent branch that leaves one all-reduce out: the collectives
  // of the ranks no longer pair up.
  if (fault_on(Fault::rank_skips_allreduce) && faulty_rank() && step == kFaultStep) return;

  at::NoGradGuard ng;
  if (buckets_.empty()) buckets_ = plan_buckets(grads, bucket_bytes_);
  const double inv = 1.0 / comm_.world_size();
  // The loss rides in the first bucket of its dtype: one collective per bucket, no extra one.
  at::Tensor loss_value = loss.detach().reshape({1});
  bool loss_done = false;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const Bucket& bucket = buckets_[b];
    at::Tensor flat = flatten_bucket(bucket, grads);
    const bool with_loss = !loss_done && bucket.dtype == loss_value.scalar_type();
    if (with_loss) flat = at::cat({flat, loss_value});
    comm_.allreduce_sum(flat, step, static_cast<int>(b));
    flat.mul_(inv);
    if (with_loss) {
      loss = flat.narrow(0, bucket.numel, 1).reshape({}).clone();
      flat = flat.narrow(0, 0, bucket.numel);
      loss_done = true;
    }
    unflatten_bucket(bucket, flat, grads);
  }
  if (!loss_done) {
    at::Tensor l = loss_value.clone();
    comm_.allreduce_sum(l, step, static_cast<int>(buckets_.size()));
    loss = l.mul_(inv).reshape({});
  }
}

void DataParallel::after_update(int step, Model& model) {
  // One rank's parameters drift from the others' (a rank-local update, e.g. an
  // optimizer state restored on one rank only): silent desynchronisation.
  if (fault_on(Fault::rank_param_drift) && faulty_rank() && step == kFaultStep) {
    at::NoGradGuard ng;
    model.parameters().front().second.add_(1e-3);
  }
}

std::pair<double, double> parameter_checksum(Model& model) {
  at::NoGradGuard ng;
  // Summed on the device, one host sync for the pair.
  std::vector<at::Tensor> sums, squares;
  for (auto& [name, p] : model.parameters()) {
    at::Tensor d = p.detach().to(at::kDouble);
    sums.push_back(d.sum());
    squares.push_back(d.pow(2).sum());
  }
  if (sums.empty()) return {0.0, 0.0};
  at::Tensor both = at::stack({at::stack(sums).sum(), at::stack(squares).sum()}).cpu();
  return {both[0].item<double>(), both[1].item<double>()};
}

}  // namespace nsa::dist
