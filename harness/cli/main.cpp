// nsa-harness: the command line. Subcommands come from one table; each lives in
// its own file (cmd_*.cpp). One top-level catch maps errors to exit codes.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "harness/cli/commands.h"
#include "harness/cli/usage_hint.h"
#include "harness/core/text.h"
#include "harness/run/run_dir.h"
#include "harness/run/version_info.h"

int main(int argc, char** argv) {
  using namespace harness::cli;
  CLI::App app{"nsa-harness: run NSA scenario matrices, watch every run, write go/no-go reports"};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version",
      [] {
        std::string text = harness::run::render_versions(harness::run::build_versions());
        return text.substr(0, text.size() - 1);  // CLI11 ends the line itself
      },
      "print the version, the git revision and the torch, CUDA and cuDNN versions built in, and exit");
  std::string self = self_executable(argv[0]);

  RunOptions run;
  auto* c_run = app.add_subcommand("run", "run a scenario matrix (default: scenarios/default.yaml)");
  c_run->add_option("scenario", run.scenario, "scenario file");
  c_run->add_option("--out", run.out, "run directory (default runs/<name>-<time>)");
  c_run->add_option("--only", run.only, "only cells whose id matches this glob (';' separates several)");
  c_run->add_option("--device", run.device, "override the scenario's device")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  c_run->add_option("--jobs", run.jobs, "cells run side by side")->check(CLI::PositiveNumber);
  c_run->add_option("--gpus-per-cell", run.gpus_per_cell,
                    "GPUs each GPU cell holds (its own CUDA_VISIBLE_DEVICES); --jobs N runs N cells side by side")
      ->check(CLI::PositiveNumber);
  c_run->add_option("--cells-per-gpu", run.cells_per_gpu,
                    "GPU cells that may share one GPU at a time (host-bound cells: sequential prefill, batch 1; "
                    "a shared cell's absolute timing limits are not judged); needs --jobs to run them side by side")
      ->check(CLI::PositiveNumber);
  c_run->add_option("--shard", run.shard, "run only slice I of N of the matrix (I/N, from 0); `merge` joins slices");
  c_run->add_flag("--resume", run.resume, "skip cells that already have a result in --out");
  c_run->add_flag("--dry-run", run.dry_run, "list the cells (id, device, every setting that differs) and exit");
  c_run->add_option("--rerun-failed", run.rerun_failed,
                    "re-run the cells of run DIR that did not pass (scenario: DIR's, unless given), into DIR or "
                    "--out, keeping its passed cells; the report covers the whole matrix");
  bool no_escalate = false;
  c_run->add_flag("--no-escalate", no_escalate,
                  "do not re-run CUDA crashes with CUDA_LAUNCH_BLOCKING=1 and compute-sanitizer");

  std::vector<std::string> validate_files;
  auto* c_validate = app.add_subcommand("validate", "check scenario files without running them");
  c_validate->add_option("files", validate_files, "scenario files")->required();

  std::string report_dir, report_out;
  auto* c_report = app.add_subcommand("report", "re-render report.md (and the other reports) from results.json");
  c_report->add_option("dir", report_dir, "run directory")->required();
  c_report->add_option("-o,--output", report_out, "markdown file to write (default DIR/report.md)");

  std::string cmp_a, cmp_b;
  auto* c_compare = app.add_subcommand("compare", "outcome and step-time changes between two runs");
  c_compare->add_option("a", cmp_a, "baseline run directory")->required();
  c_compare->add_option("b", cmp_b, "new run directory")->required();
  bool allow_different = false;
  c_compare->add_flag("--allow-different", allow_different,
                      "compare runs of different scenarios (different scenario hash; refused otherwise)");

  std::string flight_dir, flight_cell;
  int flight_last = 8;
  auto* c_flight = app.add_subcommand("flight", "read a cell's flight recorder: last kernels per stream, launches in flight");
  c_flight->add_option("dir", flight_dir, "run directory")->required();
  c_flight->add_option("--cell", flight_cell, "cell id")->required();
  c_flight->add_option("--last", flight_last, "kernels shown per stream")->check(CLI::PositiveNumber);

  std::string repro_dir, repro_cell, repro_out;
  bool minimize = false;
  auto* c_repro = app.add_subcommand("repro", "write a standalone scenario reproducing one cell");
  c_repro->add_option("dir", repro_dir, "run directory")->required();
  c_repro->add_option("--cell", repro_cell, "cell id")->required();
  c_repro->add_flag("--minimize", minimize, "shrink while the failure signature stays the same");
  c_repro->add_option("-o,--output", repro_out, "scenario file to write (default: print)");

  std::string selftest_out, selftest_mutations;
  int selftest_jobs = 1;
  auto* c_selftest = app.add_subcommand("selftest", "run the fault catalogue: expected vs found");
  c_selftest->add_option("--out", selftest_out, "run directory");
  c_selftest->add_option("--jobs", selftest_jobs, "cells run side by side")->check(CLI::PositiveNumber);
  c_selftest->add_flag("--mutations{all}", selftest_mutations,
                       "instead: every planted mutation (or --mutations=a,b) against the unit tests and the default scenario");
  std::string selftest_tests_filter;
  c_selftest->add_option("--tests-filter", selftest_tests_filter,
                         "with --mutations: nsa_model_test's --gtest_filter ('*': every test; default: the layer's tests)");

  std::vector<std::string> merge_dirs;
  std::string merge_out;
  auto* c_merge = app.add_subcommand("merge", "join the run directories of `run --shard I/N` slices into one run");
  c_merge->add_option("dirs", merge_dirs, "shard run directories")->required();
  c_merge->add_option("--out", merge_out, "merged run directory")->required();

  SlurmOptions slurm;
  auto* c_slurm = app.add_subcommand("slurm", "write (and with --submit, submit) a Slurm job array of shards plus its merge");
  c_slurm->add_option("scenario", slurm.scenario, "scenario file")->required();
  c_slurm->add_option("--out", slurm.out, "run directory: shards in DIR/shard-I, the merged run in DIR")->required();
  c_slurm->add_option("--partition", slurm.partition, "Slurm partition");
  c_slurm->add_option("--time", slurm.time, "time limit per task (Slurm format, e.g. 01:00:00)");
  c_slurm->add_option("--gpus-per-task", slurm.gpus_per_task, "GPUs per array task (0: none)")
      ->check(CLI::NonNegativeNumber);
  c_slurm->add_option("--shards", slurm.shards, "array tasks, one slice of the matrix each")->check(CLI::PositiveNumber);
  c_slurm->add_flag("--submit", slurm.submit, "submit with sbatch and print the job ids");

  std::string list_what;
  auto* c_list = app.add_subcommand("list", "list flags, faults, probes or configs");
  c_list->add_option("what", list_what, "flags | faults | probes | configs")
      ->required()
      ->check(CLI::IsMember({"flags", "faults", "probes", "configs"}));

  std::string cell_spec, cell_out;
  auto* c_cell = app.add_subcommand("cell", "internal: run one cell in this process (what `run` spawns)");
  c_cell->add_option("--spec", cell_spec, "cell.json")->required();
  c_cell->add_option("--out", cell_out, "cell directory")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A misspelled name gets its closest real ones; other usage errors CLI11's message.
    const std::string hint = e.get_exit_code() == 0 ? "" : usage_hint(app, {argv + 1, argv + argc});
    if (!hint.empty()) {
      fmt::print(stderr, "nsa-harness: {}\n", hint);
      return kExitInvalidInput;
    }
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitInvalidInput;
  }
  try {
    // Quoted where needed: the report prints it, and people paste it.
    for (int i = 0; i < argc; ++i) run.command_line += (i ? " " : "") + harness::shell_word(argv[i]);
    run.self_exe = self;
    run.escalate = !no_escalate;
    if (*c_run) return cmd_run(run);
    if (*c_validate) return cmd_validate(validate_files);
    if (*c_report) return cmd_report(report_dir, report_out);
    if (*c_compare) return cmd_compare(cmp_a, cmp_b, allow_different);
    if (*c_flight) return cmd_flight(flight_dir, flight_cell, flight_last);
    if (*c_repro) return cmd_repro(repro_dir, repro_cell, minimize, repro_out, self);
    if (*c_selftest && !selftest_mutations.empty())
      return cmd_selftest_mutations({selftest_mutations, selftest_out, selftest_tests_filter, selftest_jobs, self});
    if (*c_selftest) return cmd_selftest(self, selftest_out, selftest_jobs);
    if (*c_list) return cmd_list(list_what);
    if (*c_merge) return cmd_merge(merge_dirs, merge_out, run.command_line);
    if (*c_slurm) {
      slurm.self_exe = self;
      return cmd_slurm(slurm);
    }
    if (*c_cell) return cmd_cell(cell_spec, cell_out);
  } catch (const harness::run::InputError& e) {
    fmt::print(stderr, "nsa-harness: {}\n", e.what());
    return kExitInvalidInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "nsa-harness: {}\n", e.what());
    return kExitHarnessFailure;
  }
  return kExitInvalidInput;
}
