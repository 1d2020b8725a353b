// repro_step5: seed 000's minimal repro, linking nsa directly (no harness).
// Trains the tiny model and prints one line per step; a step that does not end
// within --timeout-s is reported as a hang and the program exits 124.
//
//   repro_step5 --steps 8 --fault step5_deadlock            # sequential prefill (default)
//   [repro] step 1 ok | loss 5.55…      (steps 1–4 alike)
//   [repro] step 5 did not finish within 20 s: HANG (sequential prefill)
//
//   repro_step5 --steps 8 --fault step5_deadlock --batched  # NSA_PREFILL_BATCHED=1
//   [repro] step 1 ok | loss 5.55…      (… through step 8)
//   [repro] completed
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "nsa/data.h"
#include "nsa/faults.h"
#include "nsa/trainer.h"

int main(int argc, char** argv) {
  CLI::App app{"Seed 000's step-5 repro on the tiny NSA model"};
  int steps = 8;
  bool batched = false;
  std::string fault;
  double timeout_s = 20;
  app.add_option("--steps", steps, "training steps")->check(CLI::PositiveNumber);
  app.add_flag("--batched", batched, "batched prefill (NSA_PREFILL_BATCHED=1) instead of sequential");
  app.add_option("--fault", fault, "a planted fault to switch on (see nsa-harness list faults)");
  app.add_option("--timeout-s", timeout_s, "a step longer than this is reported as a hang");
  CLI11_PARSE(app, argc, argv);

  nsa::Runtime rt;
  rt.flags = nsa::Flags::from_environment();
  rt.flags.set("NSA_PREFILL_BATCHED", batched ? "1" : "0");
  rt.resolve();
  if (!fault.empty()) nsa::faults.enable_csv(fault);
  at::manual_seed(1234);
  nsa::ModelConfig cfg = nsa::load_model_config("tiny");
  nsa::Model model(cfg, at::TensorOptions().dtype(at::kFloat));
  nsa::TrainConfig tc;
  tc.steps = steps;
  nsa::Trainer trainer(model, tc);
  nsa::DataSource data("synthetic", 1234);

  // Watchdog: the repro must end even when the model does not.
  std::atomic<int> current{0};
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    int seen = -1;
    auto since = std::chrono::steady_clock::now();
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      int s = current.load();
      if (s != seen) seen = s, since = std::chrono::steady_clock::now();
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count() > timeout_s) {
        std::printf("[repro] step %d did not finish within %.0f s: HANG (%s prefill)\n", s, timeout_s,
                    batched ? "batched" : "sequential");
        std::fflush(stdout);
        std::_Exit(124);
      }
    }
  });
  for (int s = 1; s <= steps; ++s) {
    current = s;
    auto st = trainer.step(s, data.next_batch(2, 64), rt);
    std::printf("[repro] step %d ok | loss %.4f\n", s, st.loss);
    std::fflush(stdout);
  }
  done = true;
  watchdog.join();
  std::printf("[repro] completed\n");
  return 0;
}
