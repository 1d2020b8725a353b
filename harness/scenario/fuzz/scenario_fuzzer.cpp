// libFuzzer target: any bytes as a scenario file, through the whole loader and
// validator (YAML → tree → settings → matrix → cells). A ScenarioError is the
// right answer to bad input; anything else escaping, a crash, a sanitizer
// report, more than a second (-timeout) or more than 1 GB (-rss_limit_mb) for
// one input is a bug. scripts/fuzz-scenarios.sh builds and runs it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/scenario/diagnostic.h"
#include "harness/scenario/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  harness::LoadOptions options;
  options.configs_dir = NSA_CONFIGS_DIR;
  try {
    // Named inside the scenarios folder so `extends: base.yaml` and model
    // names resolve as they do for the real files.
    harness::Scenario s = harness::load_scenario_text(text, NSA_SCENARIOS_DIR "/fuzz-input.yaml", options);
    (void)s;
  } catch (const harness::ScenarioError& e) {
    // Every diagnostic must format: what() is what the CLI prints.
    if (e.diagnostics.empty()) {
      std::fprintf(stderr, "ScenarioError without a diagnostic\n");
      std::abort();
    }
    (void)std::string(e.what()).size();
  }
  // Any other exception propagates: libFuzzer reports it as a crash, which is
  // what the CLI's exit 4 "internal error" would be for a user.
  return 0;
}
