#include "harness/child/cell_runner.h"

#include <ATen/DeviceAccelerator.h>
#include <ATen/Parallel.h>
#include <torch/version.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <cstdlib>
#include <filesystem>

#include "harness/child/dist_rank.h"
#include "harness/child/graph_tap.h"
#include "harness/child/phase_stack.h"
#include "harness/probes/probe.h"
#include "nsa/data_prefetch.h"
#include "nsa/determinism.h"
#include "nsa/faults.h"
#include "nsa/mutations.h"
#ifdef NSA_WITH_CUDA_KERNELS
#include "nsa/cuda/layer_routing.h"
#endif

namespace harness::child {
namespace {
namespace ev = protocol::ev;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The median cost of each probe's step hook over the run (warm-up step
// included: one step of twelve does not move a median), largest first, as the
// probe table "probe_costs" — what the report's Observation Cost section lists.
void emit_probe_costs(protocol::EventWriter& events, std::map<std::string, std::vector<double>>& costs) {
  nlohmann::json rows = nlohmann::json::array();
  for (auto& [name, v] : costs) {
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    const double median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    rows.push_back({{"name", name}, {"median_ms", median}, {"steps", v.size()}});
  }
  std::sort(rows.begin(), rows.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a.at("median_ms").get<double>() > b.at("median_ms").get<double>();
  });
  if (!rows.empty()) events.emit(protocol::ev::probe, {{"name", "probe_costs"}, {"data", rows}});
}

// Bridges the model's observer hooks to events, the phase stack and the probes' tap.
class ChildObserver : public nsa::Observer {
 public:
  ChildObserver(protocol::EventWriter& events, PhaseStack& stack, TensorTap& tap)
      : events_(events), stack_(stack), tap_(tap) {}
  void set_probes(std::vector<std::unique_ptr<Probe>>* probes) { probes_ = probes; }
  void set_step(int step) { step_ = step; stack_.set_step(step); }
  void set_capture(bool on) { capture_ = on; }

  void phase_begin(std::string_view name, int layer) override {
    stack_.push(name, layer);
    if (probes_) for (auto& p : *probes_) p->on_phase(true, name, layer, step_);
    nlohmann::json e = {{"name", name}, {"step", step_}};
    if (layer >= 0) e["layer"] = layer;
    events_.emit(ev::phase_begin, std::move(e));
  }
  void phase_end(std::string_view name, int layer) override {
    stack_.pop();
    if (probes_) for (auto& p : *probes_) p->on_phase(false, name, layer, step_);
    nlohmann::json e = {{"name", name}, {"step", step_}};
    if (layer >= 0) e["layer"] = layer;
    events_.emit(ev::phase_end, std::move(e));
  }
  void progress(std::string_view what, int64_t done, int64_t total) override {
    events_.emit(ev::progress, {{"what", what}, {"done", done}, {"total", total}, {"step", step_}});
  }
  bool wants_tensors() const override { return capture_; }
  void tensor(std::string_view name, int layer, int branch, const at::Tensor& t) override {
    if (capture_) tap_.entries.push_back({std::string(name), layer, branch, t});
  }
  void sync_point(std::string_view) override { ++tap_.sync_points; }
  void route(std::string_view branch, std::string_view impl) override { tap_.routes[std::string(branch)] = impl; }

 private:
  protocol::EventWriter& events_;
  PhaseStack& stack_;
  TensorTap& tap_;
  std::vector<std::unique_ptr<Probe>>* probes_ = nullptr;
  int step_ = 0;
  bool capture_ = false;
};

// Copies every parameter into `into` (allocated on first use and reused):
// one multi-tensor copy per dtype rather than an allocation and a copy kernel
// per parameter.
void snapshot_parameters(nsa::Model& model, std::vector<at::Tensor>& into) {
  std::vector<at::Tensor> params;
  for (auto& [n, p] : model.parameters()) params.push_back(p.detach());
  if (into.size() != params.size()) {
    into.clear();
    for (auto& p : params) into.push_back(at::empty_like(p));
  }
  at::NoGradGuard no_grad;
  at::_foreach_copy_(into, params);
}

// `local_rank`: a world_size > 1 cell's rank takes the GPU of its own index
// among the ones the supervisor gave the cell, or shares them round-robin
// when the ranks outnumber them (nsa/dist/process_group.h: Gloo then).
at::Device resolve_device(const std::string& wanted, int local_rank) {
  const bool have_cuda = at::hasCUDA();
  if (wanted == "cuda" && !have_cuda) throw std::runtime_error("no_cuda: the cell asks for CUDA and no CUDA device is available");
  const bool cuda = wanted == "cuda" || (wanted == "auto" && have_cuda);
  if (!cuda) return at::Device(at::kCPU);
  const int gpu = nsa::dist::rank_gpu(local_rank, static_cast<int>(at::getNumGPUs()));
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(gpu));
}

// Every wait of a rank (store, collectives) ends by this deadline; the
// supervisor's stall deadline is shorter, so a hang is diagnosed (stacks,
// flight records) before a rank gives up on its own.
double dist_timeout_s(const CellSpec& spec) { return spec.watchdog.stall_timeout_s + spec.watchdog.step_timeout_s; }

void sync_device(const at::Device& d) {
  if (d.is_cuda()) at::accelerator::synchronizeDevice(d.index());
}

// "data" on the phase stack (no events) while the step waits for its batch: a
// stalled producer shows in the stacks the supervisor asks for, and an error
// from it names the phase.
class DataFrame {
 public:
  explicit DataFrame(PhaseStack& stack) : stack_(stack) { stack_.push("data", -1); }
  ~DataFrame() { stack_.pop(); }
  DataFrame(const DataFrame&) = delete;
  DataFrame& operator=(const DataFrame&) = delete;

 private:
  PhaseStack& stack_;
};

nlohmann::json platform_json(const at::Device& d) {
  nlohmann::json p = {{"device", d.str()}, {"libtorch", TORCH_VERSION}, {"threads", at::get_num_threads()}};
  return p;
}

std::string error_kind(const std::string& msg) {
  if (msg.rfind("no_cuda:", 0) == 0) return "no_cuda";
  return "exception";
}

}  // namespace

int run_cell(const CellSpec& spec, const std::string& out_dir) {
  namespace fs = std::filesystem;
  fs::create_directories(out_dir);
  protocol::EventWriter events((fs::path(out_dir) / protocol::kEventsFile).string());
  PhaseStack stack;
  stack.install_signal_handler((fs::path(out_dir) / protocol::kStacksFile).string());
  TensorTap tap;
  ChildObserver observer(events, stack, tap);
  int step = 0;
  try {
    nsa::Runtime rt;
    rt.flags = nsa::Flags::from_environment();
    for (auto& [k, v] : spec.flags) rt.flags.set(k, v);
    rt.resolve();
    nsa::faults.disable_all();
    nsa::faults.enable(spec.faults);
    nsa::faults.enable_csv(rt.flags.get_string("NSA_FAULT"));
    nsa::mutations.enable_csv(rt.flags.get_string("NSA_MUTATION"));
    const int world_size = std::max(1, spec.train.world_size);
    std::optional<RankEnv> rank_env;
    if (world_size > 1) {
      rank_env = rank_env_from_environment(world_size);
      if (spec.train.batch % world_size != 0)
        throw std::runtime_error("batch " + std::to_string(spec.train.batch) + " does not split over world_size " +
                                 std::to_string(world_size) + " ranks");
    }
    const at::Device device = resolve_device(spec.device, rank_env ? rank_env->local_rank : 0);
    // One intra-op thread per CPU cell unless OMP_NUM_THREADS says otherwise
    // (recorded in the platform table either way). These models' ops are too
    // small to gain from a thread pool, and a pool spinning at every barrier
    // collapses when the cores are shared: the default scenario took 46 s with
    // 2 threads and 18 s with 1 on a 2-core machine at load 2, and cells side by
    // side (--jobs) each want a core of their own.
    if (device.is_cpu() && std::getenv("OMP_NUM_THREADS") == nullptr) at::set_num_threads(1);
    // Before the model's first CUDA work: cuBLAS reads its workspace setting
    // when it creates a handle.
    if (spec.train.deterministic) nsa::use_deterministic_algorithms();
#ifdef NSA_WITH_CUDA_KERNELS
    nsa::cuda::register_with_layer();
#endif
    at::manual_seed(spec.train.seed);

    nsa::TrainConfig tc;
    tc.steps = spec.train.steps;
    tc.lr = spec.train.lr;
    tc.warmup_steps = spec.train.warmup_steps;
    tc.weight_decay = spec.train.weight_decay;
    tc.grad_clip = spec.train.grad_clip;
    tc.precision = nsa::precision_from_string(spec.train.precision);
    tc.master_weights = spec.train.master_weights;
    nsa::Model model(spec.model, at::TensorOptions().dtype(nsa::param_dtype_for(tc)).device(device));
    nsa::Trainer trainer(model, tc);
    nsa::DataSource source(spec.train.data, spec.train.seed);  // here, so a bad file fails before any setup
    std::unique_ptr<DistRank> dist;
    if (rank_env) {
      const int gpus = device.is_cuda() ? static_cast<int>(at::getNumGPUs()) : 0;
      const std::string backend = nsa::dist::choose_backend(device.is_cuda(), world_size, gpus);
      dist = std::make_unique<DistRank>(*rank_env, backend, dist_timeout_s(spec), events);
      dist->data_parallel().broadcast_parameters(model);
      trainer.set_grad_sync(&dist->data_parallel());
    }
    auto probes = make_probes(spec);
    rt.observer = &observer;
    observer.set_probes(&probes);

    events.emit(ev::start, {{"pid", ::getpid()}, {"cell", spec.id}, {"steps", spec.train.steps},
                            {"device", device.str()}, {"platform", platform_json(device)},
                            {"faults", nsa::faults.active_names()}, {"parameters", model.parameters().size()},
                            {"rank", rank_env ? rank_env->rank : 0}, {"world_size", world_size},
                            {"backend", dist ? dist->backend() : ""}});
    ProbeContext ctx{spec, model, trainer, rt, events, tap, device, out_dir};
    ctx.rank = rank_env ? rank_env->rank : 0;
    // The probes' once-per-cell checks (parity against the float64 oracle,
    // causality's perturbed forwards) come before step 1 and can take minutes
    // at long contexts (m7c_125m at 16k, 2026-11-28: causality 118 s, parity,
    // then at every block boundary, past 190 s on an H200 machine): on the
    // phase stack, so that a first-step timeout says it was in them, not in
    // the model's build.
    stack.push("the probes' start checks", -1);
    for (auto& p : probes) p->on_start(ctx);
    stack.pop();

    // Each rank trains on its slice of the global batch (tokens counted per rank).
    const auto rows = dist ? dist->data_parallel().slice(spec.train.batch) : std::pair<int64_t, int64_t>{0, spec.train.batch};
    const int64_t tokens = (rows.second - rows.first) * spec.train.seq_len;
    // Every rank draws the whole global batch (the same data stream as one
    // process) and keeps its rows; a thread draws them ahead of the steps,
    // pinned for a GPU so the copy can overlap, and waits no longer than a rank's collectives.
    nsa::PrefetchOptions prefetch;
    prefetch.rows = rows;
    prefetch.pin_memory = device.is_cuda();
    prefetch.deadline_s = dist_timeout_s(spec);
    prefetch.limit = spec.train.steps;
    nsa::BatchPrefetcher data(std::move(source), spec.train.batch, spec.train.seq_len, prefetch);
    std::map<std::string, std::vector<double>> costs;  // observing, per probe, ms per step
    std::vector<at::Tensor> snapshot;                   // the parameters before a step, when a probe asks
    CudaGraphRecord graph;                              // how the steps ran (nsa/step_graph.h)
    // Does a probe want tensors at a step the graph may replay? Then the
    // capture takes them for the replays (graph_tap.h).
    bool tensors_later = false;
    for (int s = nsa::kEagerStepsBeforeGraph + 1; s <= spec.train.steps && !tensors_later; ++s)
      for (auto& p : probes) tensors_later |= p->wants_tensors(s);
    GraphTap graph_tap(tensors_later);
    // A probe that will want the parameters before some step gets their
    // buffer now, filled once: the first snapshot's allocation (and the copy
    // kernels' first load) is set-up, not the cost of the step that samples
    // (on an H200 the 125M model's first snapshot took ~15 ms, a later one
    // ~0.7). The buffer is held from here on, as it would be from that step on.
    bool params_later = false;
    for (int s = 1; s <= spec.train.steps && !params_later; ++s)
      for (auto& p : probes) params_later |= p->wants_params_before(s);
    if (params_later) {
      snapshot_parameters(model, snapshot);
      sync_device(device);
    }
    for (step = 1; step <= spec.train.steps; ++step) {
      // Time spent observing outside the timed step (parameter snapshots, the
      // probes' step-end hooks) is reported per step as the metric probe_ms, so
      // step_ms + probe_ms is what a step costs with the probes on.
      // Under `probes: alternate` odd steps run unobserved: no tensors, no
      // snapshot, no hooks, no trace records — the yardstick for the even ones.
      const bool observed = !spec.observe_alternate || step % 2 == 0;
      bool capture = false, keep_params = false, inside = false;
      for (auto& p : probes) {
        p->set_observing(observed);
        if (observed) {
          capture |= p->wants_tensors(step), keep_params |= p->wants_params_before(step);
          inside |= p->watches_inside(step);
        }
      }
      // Tensors come from a replay too, once the graph holds them; the
      // parameter snapshot is taken outside the step either way.
      inside |= capture && graph_tap.needs_eager_for_tensors();
      graph.watched_steps += inside ? 1 : 0;
      tap.clear();
      observer.set_step(step);
      observer.set_capture(capture || graph_tap.arms_observer());
      events.emit(ev::step_begin, {{"step", step}});
      if (dist) dist->set_step(step);
      // data_ms: waiting for the batch and copying it to the device, synced
      // so the copy stays out of step_ms.
      const auto data_t0 = Clock::now();
      at::Tensor batch;
      {
        DataFrame frame(stack);
        batch = data.next().tokens.to(device, /*non_blocking=*/true);
        sync_device(device);
      }
      const double data_ms = ms_since(data_t0);
      double probe_ms = 0;
      if (keep_params) {
        auto snap_t0 = Clock::now();
        snapshot_parameters(model, snapshot);
        sync_device(device);
        const double snap_ms = ms_since(snap_t0);
        probe_ms += snap_ms;
        costs["(parameter snapshots)"].push_back(snap_ms);
      }
      auto t0 = Clock::now();
      nsa::StepStats st;
      {
        nsa::Phase phase(rt, "step");
        // A step no probe watches from inside may replay the captured CUDA graph.
        st = trainer.step(step, batch, rt, /*may_replay=*/!inside);
      }
      sync_device(device);
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      graph_tap.after_step(trainer.last_exec(), capture, tap);
      nlohmann::json e = {{"step", step},       {"step_ms", ms},              {"data_ms", data_ms},
                          {"tok_s", tokens / (ms / 1000.0)}, {"tokens", tokens},
                          {"skipped", st.skipped}, {"host_syncs", tap.sync_points},
                          {"lr", st.lr},         {"loss_scale", st.loss_scale}};
      e["loss"] = std::isfinite(st.loss) ? nlohmann::json(st.loss) : nlohmann::json(std::isnan(st.loss) ? "nan" : "inf");
      e["grad_norm"] = std::isfinite(st.grad_norm) ? nlohmann::json(st.grad_norm) : nlohmann::json("non-finite");
      if (spec.observe_alternate) e["observed"] = observed;
      e["exec"] = nsa::step_exec_name(trainer.last_exec());
      if (dist) {
        // comm_ms: blocked in collectives, i.e. waiting for the slowest rank;
        // step_ms − comm_ms is this rank's own work (what finds a straggler).
        e["rank"] = rank_env->rank;
        e["comm_ms"] = dist->take_wait_ms();
      }
      events.emit(ev::step_end, std::move(e));
      ctx.step = step;
      ctx.batch = batch;
      ctx.stats = st;
      if (keep_params) ctx.params_before = snapshot;
      observer.set_capture(false);
      auto hooks_t0 = Clock::now();
      if (observed) {
        // A phase of its own, so the trace puts the probes' kernels and syncs
        // under "probes" and a hang in a probe names it.
        nsa::Phase phase(rt, "probes");
        for (auto& p : probes) {
          // Per probe, host time of its hook; GPU work it queued is paid by
          // whichever hook (or the sync below) waits for it first.
          auto p_t0 = Clock::now();
          p->on_step_end(ctx);
          costs[p->name()].push_back(ms_since(p_t0));
        }
      }
      ctx.params_before.clear();
      sync_device(device);
      probe_ms += ms_since(hooks_t0);
      events.emit(ev::metric, {{"name", "probe_ms"}, {"step", step}, {"value", probe_ms}});
    }
    emit_probe_costs(events, costs);
    graph.captured_at = trainer.graph_captured_at();
    graph.replays = trainer.graph_replays();
    graph.off_reason = trainer.graph_off_reason();
    if (graph.captured_at == 0 && graph.off_reason.empty() && graph.watched_steps > 0)
      graph.off_reason = "every step a graph could have run was watched from inside by a probe";
    if (device.is_cuda()) events.emit(ev::probe, {{"name", "cuda_graph"}, {"step", spec.train.steps}, {"data", graph}});
    const WeightCopiesRecord copies{model.compute_copy_count(), trainer.weight_copies_off_reason()};
    events.emit(ev::probe, {{"name", "weight_copies"}, {"step", spec.train.steps}, {"data", copies}});
    observer.set_step(spec.train.steps);
    for (auto& p : probes) p->on_run_end(ctx);
    if (dist) dist->finish();
    events.emit(ev::done, {{"steps_completed", spec.train.steps}});
    return 0;
  } catch (const c10::OutOfMemoryError& e) {
    // Its own kind: the allocator's message says how much was asked and how
    // much was free; the step and phase say where.
    events.emit(ev::error, {{"kind", "out_of_memory"}, {"message", e.what_without_backtrace()}, {"step", step},
                            {"phase", stack.text_at_throw()}, {"type", "c10::OutOfMemoryError"}});
  } catch (const std::bad_alloc& e) {
    events.emit(ev::error, {{"kind", "out_of_memory"}, {"message", std::string("std::bad_alloc: ") + e.what()},
                            {"step", step}, {"phase", stack.text_at_throw()}});
  } catch (const c10::Error& e) {
    events.emit(ev::error, {{"kind", "exception"}, {"message", e.what_without_backtrace()}, {"step", step},
                            {"phase", stack.text_at_throw()}, {"type", "c10::Error"}});
  } catch (const std::exception& e) {
    std::string msg = e.what();
    events.emit(ev::error, {{"kind", error_kind(msg)}, {"message", msg}, {"step", step}, {"phase", stack.text_at_throw()}});
  }
  return 1;
}

}  // namespace harness::child
