// A child that misbehaves on purpose, for the supervisor's tests.
//   supervisor_test_child MODE CELL_DIR
// Events go to CELL_DIR/events.jsonl through the real EventWriter.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/protocol/events.h"

namespace {
using harness::protocol::EventWriter;
using nlohmann::json;

char g_stacks_path[4096];

void write_stacks(int) {
  int fd = open(g_stacks_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  const char text[] = "phase stack (innermost last):\n  step 1\n  forward\n  nsa layer 1\n";
  (void)!write(fd, text, sizeof text - 1);
  close(fd);
}

[[noreturn]] void sleep_forever() {
  while (true) pause();
}

void steps(EventWriter& w, int from, int to) {
  for (int s = from; s < to; ++s) {
    w.emit("step_begin", {{"step", s}});
    w.emit("phase_begin", {{"name", "forward"}, {"step", s}});
    w.emit("phase_end", {{"name", "forward"}, {"step", s}, {"ms", 1.0}});
    w.emit("step_end", {{"step", s}, {"loss", 5.0 - s}, {"step_ms", 10.0}, {"tok_s", 1000.0},
                        {"tokens", 10}, {"skipped", false}, {"host_syncs", 1}});
  }
}

// Forks `n` grandchildren that sleep forever; records their pids in CELL_DIR/grandchildren.txt.
void fork_sleepers(const std::string& dir, int n) {
  std::string pids;
  for (int i = 0; i < n; ++i) {
    pid_t p = fork();
    if (p == 0) sleep_forever();
    pids += std::to_string(p) + "\n";
  }
  std::ofstream(dir + "/grandchildren.txt") << pids;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: supervisor_test_child MODE CELL_DIR\n");
    return 2;
  }
  const std::string mode = argv[1];
  const std::string dir = argv[2];
  std::snprintf(g_stacks_path, sizeof g_stacks_path, "%s/%s", dir.c_str(), harness::protocol::kStacksFile);
  if (mode == "garbage") {
    std::ofstream(dir + "/events.jsonl") << "this is not json\n{\"also\": \"no ev field\"}\n[1,2,3]\n";
    std::printf("garbage on stdout\n");
    return 0;
  }
  if (mode == "exit_silent") return 3;
  EventWriter w(dir + "/" + harness::protocol::kEventsFile);
  // "mono": CLOCK_MONOTONIC, one clock for every process of the machine (the
  // events' "t" counts from each writer's own start), so tests can order
  // events of different cells.
  const double mono = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  w.emit("start", {{"pid", getpid()}, {"cell", "test"}, {"steps", 4}, {"mono", mono}});
  if (mode == "pass") {
    steps(w, 0, 4);
    w.emit("done", {{"steps_completed", 4}});
    return 0;
  }
  if (mode == "pass_env") {  // proves the extra environment reached the child
    const char* v = std::getenv("SUPERVISOR_TEST_VALUE");
    const char* cuda = std::getenv("CUDA_VISIBLE_DEVICES");
    const char* local_rank = std::getenv("LOCAL_RANK");  // a rank of a world_size cell
    w.emit("probe", {{"name", "env"},
                     {"data", {{"value", v ? v : ""}, {"cuda", cuda ? cuda : "(unset)"},
                               {"local_rank", local_rank ? local_rank : ""}}}});
    steps(w, 0, 2);
    w.emit("done", {{"steps_completed", 2}});
    return 0;
  }
  if (mode == "barrier_env") {
    // Records CUDA_VISIBLE_DEVICES, then waits (20 s at most, under the 30 s stall deadline) until
    // SUPERVISOR_TEST_BARRIER_N children have reached the barrier directory:
    // passing proves that many ran at the same time, each with what it recorded.
    const char* cuda = std::getenv("CUDA_VISIBLE_DEVICES");
    const char* threads = std::getenv("OMP_NUM_THREADS");
    w.emit("probe", {{"name", "env"}, {"data", {{"cuda", cuda ? cuda : "(unset)"}, {"omp", threads ? threads : "(unset)"}}}});
    const std::string barrier = std::getenv("SUPERVISOR_TEST_BARRIER") ? std::getenv("SUPERVISOR_TEST_BARRIER") : dir;
    const int n = std::atoi(std::getenv("SUPERVISOR_TEST_BARRIER_N") ? std::getenv("SUPERVISOR_TEST_BARRIER_N") : "1");
    std::ofstream(barrier + "/" + std::to_string(getpid())) << (cuda ? cuda : "") << "\n";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (true) {
      int arrived = 0;
      for (auto& e : std::filesystem::directory_iterator(barrier)) arrived += e.is_regular_file() ? 1 : 0;
      if (arrived >= n) break;
      if (std::chrono::steady_clock::now() > deadline) return 5;  // not concurrent: no done event, a crash
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    steps(w, 0, 2);
    w.emit("done", {{"steps_completed", 2}});
    return 0;
  }
  if (mode == "pass_leaves_grandchild") {
    fork_sleepers(dir, 1);
    steps(w, 0, 2);
    w.emit("done", {{"steps_completed", 2}});
    return 0;
  }
  if (mode == "spin_first") {  // events flow, but the first step never ends
    w.emit("step_begin", {{"step", 0}});
    for (int i = 0;; ++i) {
      w.emit("progress", {{"what", "tokens"}, {"done", i}, {"total", 1 << 30}, {"step", 0}});
      usleep(50 * 1000);
    }
  }
  steps(w, 0, 1);
  if (mode == "hang" || mode == "stacks" || mode == "ignore_term") {
    if (mode == "stacks") signal(SIGUSR1, write_stacks);
    if (mode == "ignore_term") {
      signal(SIGTERM, SIG_IGN);
      signal(SIGUSR1, SIG_IGN);
    }
    w.emit("step_begin", {{"step", 1}});
    w.emit("phase_begin", {{"name", "forward"}, {"step", 1}});
    w.emit("phase_begin", {{"name", "nsa"}, {"step", 1}, {"layer", 1}});
    sleep_forever();
  }
  if (mode == "fork_hang") {
    fork_sleepers(dir, 2);
    w.emit("step_begin", {{"step", 1}});
    sleep_forever();
  }
  if (mode == "spin") {
    w.emit("step_begin", {{"step", 1}});
    for (int i = 0;; ++i) {
      w.emit("progress", {{"what", "tokens"}, {"done", i}, {"total", 1 << 30}, {"step", 1}});
      usleep(50 * 1000);
    }
  }
  if (mode == "busy_silent" || mode == "busy_forever") {  // computes without a word
    w.emit("step_begin", {{"step", 1}});
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(mode == "busy_silent" ? 3 : 3600);
    // Two spinning threads, as a multi-threaded CPU step would: the process's
    // CPU time then stays above half the wall time even on a loaded machine
    // (tests run side by side), which is what the watchdog reads.
    auto spin = [until] {
      volatile double x = 0;
      while (std::chrono::steady_clock::now() < until) x = x + 1.0;
    };
    std::thread helper(spin);
    spin();
    helper.join();
    w.emit("step_end", {{"step", 1}, {"loss", 4.0}, {"step_ms", 3000.0}, {"tok_s", 1.0},
                        {"tokens", 10}, {"skipped", false}, {"host_syncs", 0}});
    w.emit("done", {{"steps_completed", 2}});
    return 0;
  }
  if (mode == "sigkill") {  // holds 64 MiB for a moment, then dies as the OOM killer would end it
    std::vector<char> held(64u << 20, 1);
    volatile char* keep = held.data();  // the pages stay touched and in use
    keep[held.size() - 1] = 2;
    usleep(500 * 1000);
    raise(SIGKILL);
  }
  if (mode == "segv") raise(SIGSEGV);
  if (mode == "abort") std::abort();
  if (mode == "exception") {
    std::fprintf(stderr, "nsa-harness cell: error: std::runtime_error: shape mismatch in layer 1\n");
    return 3;
  }
  if (mode == "inplace") {
    const char* msg = "one of the variables needed for gradient computation has been modified by an inplace "
                      "operation: [torch.FloatTensor [8, 64]], which is output 0 of SigmoidBackward0, is at "
                      "version 2; expected version 1 instead.";
    w.emit("error", {{"kind", "c10::Error"}, {"message", msg}, {"step", 1}});
    std::fprintf(stderr, "error: %s\n", msg);
    return 1;
  }
  if (mode == "cuda") {
    w.emit("probe", {{"name", "flight_recorder"}, {"data", {{"last_kernel", "nsa_sel_fwd_kernel"}}}});
    w.emit("error", {{"kind", "c10::Error"},
                     {"message", "CUDA error: an illegal memory access was encountered"},
                     {"step", 1}});
    std::fprintf(stderr, "terminate called after throwing an instance of 'c10::Error'\n"
                         "  what():  CUDA error: an illegal memory access was encountered\n");
    return 1;
  }
  if (mode == "cuda_async") {  // like a real async fault: only blocking launches name the faulting kernel
    const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
    const bool sync = blocking && std::string(blocking) == "1";
    w.emit("probe", {{"name", "flight_recorder"},
                     {"data", {{"last_kernel", sync ? "faulting_kernel<float>" : "later_kernel"}}}});
    w.emit("error", {{"kind", "c10::Error"},
                     {"message", "CUDA error: an illegal memory access was encountered"},
                     {"step", 1}});
    return 1;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
