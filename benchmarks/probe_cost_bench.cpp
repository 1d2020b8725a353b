// What each probe costs, on the tiny model on the CPU: one benchmark per
// registered probe, timing its hooks for one step (on_start for the probes that
// work once at start: parity, causality, precision, routing) against a step of
// training itself (BM_TrainStep) as the yardstick.
//   build/benchmarks/probe_cost_bench --benchmark_format=json
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>

#include "harness/probes/probe.h"
#include "nsa/trainer.h"

namespace {
using namespace harness;

struct Fixture {
  CellSpec spec;
  nsa::Runtime rt;
  std::unique_ptr<nsa::Model> model;
  std::unique_ptr<nsa::Trainer> trainer;
  std::unique_ptr<nsa::DataSource> data;
  std::unique_ptr<protocol::EventWriter> events;
  TensorTap tap;
  at::Tensor batch;
  nsa::StepStats stats;

  Fixture() {
    spec.model = nsa::load_model_config("tiny");
    spec.train.seq_len = 64;
    spec.train.batch = 2;
    rt.resolve();
    at::manual_seed(1);
    model = std::make_unique<nsa::Model>(spec.model, at::TensorOptions().dtype(at::kFloat));
    trainer = std::make_unique<nsa::Trainer>(*model, nsa::TrainConfig{});
    data = std::make_unique<nsa::DataSource>("synthetic", 1);
    events = std::make_unique<protocol::EventWriter>("/dev/null");
    batch = data->next_batch(spec.train.batch, spec.train.seq_len);
    stats = trainer->step(1, batch, rt);
  }
  ProbeContext context() {
    ProbeContext ctx{spec, *model, *trainer, rt, *events, tap, at::Device(at::kCPU), "/tmp"};
    ctx.step = 1;
    ctx.batch = batch;
    ctx.stats = stats;
    return ctx;
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void BM_TrainStep(benchmark::State& state) {
  auto& f = fixture();
  int step = 2;
  for (auto _ : state) benchmark::DoNotOptimize(f.trainer->step(step++, f.batch, f.rt).loss);
}
BENCHMARK(BM_TrainStep)->Unit(benchmark::kMillisecond);

void BM_Probe(benchmark::State& state, std::string name) {
  auto& f = fixture();
  const ProbeInfo* info = nullptr;
  for (auto& p : probe_registry())
    if (p.name == name) info = &p;
  auto probe = info->make(ProbeSpec{});
  if (!probe) {
    state.SkipWithError("probe has nothing to do in a CPU build");
    return;
  }
  for (auto _ : state) {
    auto ctx = f.context();
    probe->on_start(ctx);
    probe->on_step_end(ctx);
  }
}

int register_all = [] {
  for (auto& p : probe_registry())
    benchmark::RegisterBenchmark(("BM_Probe/" + p.name).c_str(), BM_Probe, p.name)->Unit(benchmark::kMillisecond);
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
