// A progress bar on stderr for one phase of a long search, drawn only on a terminal (so pipes and
// CI logs stay clean); tick() is thread-safe.
#pragma once
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace stacksim::analysis {

class Progress {
 public:
  // `every`: redraw once per that many ticks (and on the last).
  Progress(bool on, const char* phase, size_t total, size_t every = 64)
      : on_(on && total > 0 && isatty(2)), phase_(phase), total_(total), every_(every) {}
  ~Progress() {
    if (on_) std::fprintf(stderr, "\r%-60s\r", "");
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void tick() {
    const size_t n = ++done_;
    if (!on_ || (n % every_ != 0 && n != total_)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const int width = 30, filled = static_cast<int>(width * n / total_);
    std::fprintf(stderr, "\r%s [%s%s] %zu/%zu", phase_, std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), n, total_);
    std::fflush(stderr);
  }

 private:
  bool on_;
  const char* phase_;
  size_t total_, every_;
  std::atomic<size_t> done_{0};
  std::mutex mutex_;
};

}  // namespace stacksim::analysis
