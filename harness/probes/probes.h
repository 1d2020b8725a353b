#pragma once
// Factories of the registered probes (one file each), registered under their
// names in probe.cpp. The declarations below share one shape by design: one
// factory per probe.
#include <memory>

#include "harness/probes/probe.h"

namespace harness {
std::unique_ptr<Probe> make_timing_probe(const ProbeSpec&);
std::unique_ptr<Probe> make_memory_probe(const ProbeSpec&);
std::unique_ptr<Probe> make_syncs_probe(const ProbeSpec&);
std::unique_ptr<Probe> make_precision_probe(const ProbeSpec&);
std::unique_ptr<Probe> make_finite_probe(const ProbeSpec&);
std::unique_ptr<Probe> make_invariants_probe(const ProbeSpec&);
std::unique_ptr<Probe> make_causality_probe(const ProbeSpec&);
std::unique_ptr<Probe> make_parity_probe(const ProbeSpec&);
std::unique_ptr<Probe> make_routing_probe(const ProbeSpec&);
std::unique_ptr<Probe> make_gates_probe(const ProbeSpec&);
std::unique_ptr<Probe> make_grad_coverage_probe(const ProbeSpec&);
std::unique_ptr<Probe> make_learning_probe(const ProbeSpec&);
std::unique_ptr<Probe> make_cupti_probe(const ProbeSpec&);
std::unique_ptr<Probe> make_checksum_probe(const ProbeSpec&);
// The steps the checksum probe samples: the first, every `every`-th, the last.
bool checksum_due(int step, int every, int last_step);

// Helpers shared by probes.
bool all_finite(const at::Tensor& t);
std::string fmt_double(double v);
}  // namespace harness
