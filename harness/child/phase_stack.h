#pragma once
// The child's current phase stack ("step 5 > forward > layer 1 > attention"),
// kept in a fixed buffer so a signal handler can write it out with write(2)
// alone when the supervisor asks for stacks of a stalled child.
#include <string>
#include <string_view>
#include <vector>

namespace harness::child {

class PhaseStack {
 public:
  void push(std::string_view name, int layer);
  void pop();
  void set_step(int step);
  // Installs the handler for protocol::kStackSignal writing to `path`.
  void install_signal_handler(const std::string& path);
  std::string text() const;
  // The stack as it stood when an exception began unwinding it (the phases'
  // guards pop on the way out, so by the catch text() says only "step N"):
  // where an error happened, not where it was caught. text() when none did.
  std::string text_at_throw() const;

 private:
  void publish();  // copies the rendered stack into the signal-safe buffer
  std::vector<std::string> frames_;
  int step_ = 0;
  std::string at_throw_;  // set by the first pop during unwinding, cleared by set_step
};

}  // namespace harness::child
