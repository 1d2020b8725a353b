#pragma once
// Progress of a matrix run: on a terminal one line rewritten in place
// ("[3/12] 2 running · pass 2 · crash 1 · last: <id> → crash"); otherwise one
// plain line per finished cell, for logs and CI. Thread-safe.
#include <map>
#include <mutex>
#include <ostream>
#include <string>

#include "harness/core/results.h"

namespace harness::supervisor {

class RunProgress {
 public:
  RunProgress(std::ostream* out, bool tty, int total);

  void started(const std::string& id);
  void resumed(const CellResult& r);
  void finished(const CellResult& r);
  // A started cell that ends without a result (cancelled, or the harness failed): "not run (why)".
  void stopped(const std::string& id, const std::string& why);
  void done();  // ends the in-place line

 private:
  void redraw_locked(const std::string& last);

  std::ostream* out_;
  bool tty_;
  int total_;
  int finished_ = 0;
  int running_ = 0;
  std::map<std::string, int> by_outcome_;
  std::mutex mu_;
};

}  // namespace harness::supervisor
