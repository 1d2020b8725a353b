#pragma once
// The two hand-built runs the golden reports in testdata/ were written for,
// by hand, from the report spec (markdown_report.h) — never from the output.
#include <cmath>

#include "harness/core/results.h"
#include "harness/testing/results.h"

namespace harness::testing {

inline StepRecord step(int n, double loss, double ms) {
  StepRecord s;
  s.step = n;
  s.loss = loss;
  s.step_ms = ms;
  s.tok_s = 256 * 1000 / ms;
  return s;
}

// 2×2: prefill={sequential,batched} × seq_len={128,512}; sequential hangs at step 5.
inline RunResult prefill_hang_run() {
  RunResult r;
  r.scenario = {{"name", "prefill_hang"}, {"file", "scenarios/prefill_hang.yaml"}, {"hash", "3f2a9c1d"}};
  r.platform = {{"gpu", "NVIDIA H200"}, {"sm", "9.0"},        {"driver", "580.65.06"},
                {"cuda", "13.0"},       {"libtorch", "2.11.0"}, {"git", "a1b2c3d"}};
  r.started_at = "2026-11-22T10:15:00Z";
  r.command_line = "nsa-harness run scenarios/prefill_hang.yaml";
  r.decision = Decision::conditional_go;
  r.summary = "Ran 4 of 4 cells: 2 pass, 2 hang.\n\nDecision CONDITIONAL GO: batched prefill passes.";

  Finding hang = finding("stall", Severity::blocking, "no event for 30 s", 5, "phase forward/prefill token 37");
  hang.detail = "The child wrote no event for 30.0 s in sequential prefill; stacks were taken before the kill.";
  hang.evidence = {{"last_event_age_s", 30.5}, {"stack", "#0 nsa::prefill_sequential\n#1 nsa::Attention::forward"}};

  auto cell = [](std::string prefill, std::string seq, Outcome o, int done, double loss, double tok_s, double ms) {
    CellResult c;
    c.axes = {{"prefill", prefill}, {"seq_len", seq}};
    c.id = "prefill=" + prefill + ",seq_len=" + seq;
    c.outcome = o;
    c.steps_completed = done;
    c.steps_planned = 8;
    c.metrics.last_loss = loss;
    c.metrics.tok_s = tok_s;
    c.metrics.step_ms_median = ms;
    return c;
  };
  CellResult seq128 = cell("sequential", "128", Outcome::hang, 4, 5.1234, 812.34, 315.0);
  seq128.reason = "stall";
  seq128.findings = {hang};
  seq128.repro_command = "nsa-harness run scenarios/prefill_hang.yaml --only 'prefill=sequential,seq_len=128'";
  seq128.artifacts = {"cells/prefill=sequential,seq_len=128/events.jsonl",
                      "cells/prefill=sequential,seq_len=128/stacks.txt"};
  seq128.steps = {step(1, 5.5, 310), step(2, 5.4, 315), step(3, 5.3, 320), step(4, 5.1234, 315)};
  CellResult bat128 = cell("batched", "128", Outcome::pass, 8, 3.5, 2048.0, 125.0);
  bat128.artifacts = {"cells/prefill=batched,seq_len=128/events.jsonl"};
  bat128.steps = {step(1, 5.5, 130), step(2, std::nan(""), 125), step(3, 4.0, 120)};
  CellResult seq512 = cell("sequential", "512", Outcome::hang, 4, 5.25, 401.5, 1275.0);
  seq512.reason = "stall";
  seq512.findings = {hang};
  seq512.repro_command = "nsa-harness run scenarios/prefill_hang.yaml --only 'prefill=sequential,seq_len=512'";
  CellResult bat512 = cell("batched", "512", Outcome::pass, 8, 3.75, 1024.0, 500.0);
  r.cells = {seq128, bat128, seq512, bat512};

  r.attributions = {{"prefill", "sequential", "batched",
                     "prefill=batched (NSA_PREFILL_BATCHED=1) bypasses the hang (stall) at step 5 seen with "
                     "prefill=sequential (NSA_PREFILL_BATCHED=0) in 2 of 2 pairs",
                     {seq128.id, bat128.id, seq512.id, bat512.id}}};
  r.gates = {{"max_step_ms", seq128.id, "≤ 1000 ms", "n/a", false},
             {"max_step_ms", bat128.id, "≤ 1000 ms", "130.0 ms (slowest step)", true}};
  r.next_actions = {"[stall] read the stack dump.", "Until fixed, run with prefill=batched (NSA_PREFILL_BATCHED=1)."};
  return r;
}

// A CUPTI trace summary as the child records it (its "trace" probe table),
// read through the summary's one deserializer.
inline TraceSummary trace_summary_fixture() {
  using nlohmann::json;
  auto syncs = [](int step, int stream, int device, int dtoh, int blocking) {
    return json{{"step", step},          {"stream_syncs", stream}, {"device_syncs", device}, {"event_syncs", 0},
                {"dtoh_copies", dtoh},   {"dtoh_blocking", blocking},
                {"host_syncs", stream + device + blocking}};
  };
  return json{
      {"kernel_count", 16},
      {"kernel_ns", 2000000},
      {"kernel_busy_ns", 2000000},  // one stream at a time
      {"kernels",
       {{{"name", "_ZN3nsa4cuda21nsa_window_fwd_kernelIfEEvNS0_10AttnParamsE"},
         {"display_name", "void nsa::cuda::nsa_window_fwd_kernel<float>(nsa::cuda::AttnParams)"},
         {"count", 8}, {"total_ns", 1250400}, {"mean_ns", 156300.0}, {"share", 0.6252}},
        {{"name", "_ZN3nsa4cuda23nsa_selected_fwd_kernelIfEEvNS0_10AttnParamsE"},
         {"display_name", "void nsa::cuda::nsa_selected_fwd_kernel<float>(nsa::cuda::AttnParams)"},
         {"count", 8}, {"total_ns", 749600}, {"mean_ns", 93700.0}, {"share", 0.3748}}}},
      {"phases",
       {{{"path", "forward/layer 0/attention"}, {"kernels", 10}, {"gpu_ns", 1500000}, {"share", 0.75}},
        {{"path", "backward"}, {"kernels", 6}, {"gpu_ns", 500000}, {"share", 0.25}}}},
      {"steps", {syncs(1, 2, 0, 3, 1), syncs(2, 40, 1, 40, 0)}},
      {"outside_steps", syncs(-1, 0, 1, 0, 0)},
      {"truncated", false}}
      .get<TraceSummary>();
}
// fp16 goes non-finite at step 2; an fp32 cell passes at another length; bf16 is skipped.
inline RunResult fp16_nan_run() {
  RunResult r;
  r.scenario = {{"name", "fp16_nan"}, {"description", "fp16 against fp32 on the tiny config"}};
  r.platform = {{"gpu", "NVIDIA H100 80GB HBM3"}, {"date", "2026-11-23T08:00:00Z"}};
  r.decision = Decision::no_go;

  // make_cell: the id from the axes, 8 steps planned (all completed by a pass).
  CellResult fp32 = make_cell({{"seq_len", "128"}, {"precision", "fp32"}}, Outcome::pass);
  fp32.metrics.last_loss = 2.5;
  fp32.metrics.tok_s = 300.0;
  fp32.metrics.step_ms_median = 10.0;
  fp32.trace = trace_summary_fixture();
  fp32.expect = nlohmann::json{{"outcome", "pass"}};
  fp32.expect_met = true;

  CellResult fp16 = make_cell({{"seq_len", "512"}, {"precision", "fp16"}}, Outcome::fail);
  fp16.reason = "non_finite";
  fp16.steps_completed = 2;
  fp16.metrics.last_loss = std::nan("");
  Finding nf = finding("non_finite", Severity::blocking, "non-finite loss at step 2", 2, "layer 1 / slc / softmax");
  nf.evidence = {{"first_non_finite", {{"step", 2}, {"layer", 1}, {"branch", "slc"}, {"op", "softmax"}, {"value", "nan"}}},
                 {"rerun_fp32", "finite"}};
  fp16.findings = {nf, finding("adamw_eps_underflow", Severity::warning, "AdamW eps 1e-8 rounds to 0 in fp16",
                               std::nullopt, "optimizer")};
  fp16.expect = nlohmann::json{{"outcome", "fail"}, {"reason", "non_finite"}};
  fp16.expect_met = true;

  CellResult bf16 = make_cell({{"seq_len", "512"}, {"precision", "bf16"}}, Outcome::skip);
  bf16.reason = "no_cuda";
  bf16.findings = {finding("no_cuda", Severity::info, "no CUDA device")};

  r.cells = {fp32, fp16, bf16};
  r.gates = {{"min_tok_s", fp32.id, "≥ 250 tok/s", "300.0 tok/s", true},
             {"require_finite", fp16.id, "all losses finite", "non-finite at step 2", false}};
  return r;
}

}  // namespace harness::testing
