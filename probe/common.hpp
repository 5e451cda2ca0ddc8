// Shared pieces of stacksim-probe: error-checking macros, sample statistics, the timing loop and the
// YAML record writer. The timing rules follow /work/shared/probe/ANCHORS.md section 10: warm up, make
// every timed window >= 1 ms by batching (CUDA events resolve ~0.5 us), take several samples and
// keep the median with min/max and p10/p90; raw time and bytes are written, derived rates are left
// to the calibrator.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace stacksim::probe {

[[noreturn]] inline void die(const char* what, const char* detail, const char* file, int line) {
  std::fprintf(stderr, "stacksim-probe: %s failed at %s:%d: %s\n", what, file, line, detail);
  std::exit(1);
}

#define PROBE_CUDA(call)                                                                                              \
  do {                                                                                                                \
    const cudaError_t probe_err_ = (call);                                                                            \
    if (probe_err_ != cudaSuccess) ::stacksim::probe::die(#call, cudaGetErrorString(probe_err_), __FILE__, __LINE__); \
  } while (0)

#define PROBE_CUBLAS(call)                                                                   \
  do {                                                                                       \
    const cublasStatus_t probe_st_ = (call);                                                 \
    if (probe_st_ != CUBLAS_STATUS_SUCCESS)                                                  \
      ::stacksim::probe::die(#call, cublasLtGetStatusString(probe_st_), __FILE__, __LINE__); \
  } while (0)

struct Options {
  bool quick = false;
  int device = 0;
};

// Median, spread and count of per-call times, in seconds.
struct Stats {
  double median_s = 0, min_s = 0, max_s = 0, p10_s = 0, p90_s = 0;
  int reps = 0;
};
Stats summarize(std::vector<double> samples_s);

// Seconds per call of `work` (which enqueues one unit on `stream`), timed with CUDA events around
// a batch of calls sized so that the window lasts >= min_window_s (capped at max_batch).
Stats time_on_stream(cudaStream_t stream, const std::function<void()>& work, int warmup, int reps,
                     double min_window_s = 1e-3, int max_batch = 1000);

// Seconds per call of a blocking host-side `work`, timed with steady_clock.
Stats time_on_host(const std::function<void()>& work, int warmup, int reps, double min_window_s = 1e-3,
                   int max_batch = 1000);

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One `- {key: value, ...}` measurement record, plus the statistics fields.
class Record {
 public:
  Record& add(const std::string& key, const std::string& value);  // a plain scalar, written as is
  Record& add(const std::string& key, double value);
  Record& add(const std::string& key, long long value);
  Record& stats(const Stats& s);
  std::string text() const { return "    - {" + body_ + "}\n"; }

 private:
  std::string body_;
};

// Collects the output file: machine fields, benchmark sections in order, skipped notes.
class Output {
 public:
  void machine(const std::string& key, const std::string& value);  // quoted
  void machine_raw(const std::string& key, const std::string& yaml);
  void add(const std::string& section, const Record& r);
  void skip(const std::string& benchmark, const std::string& reason);
  std::string text() const;

 private:
  std::vector<std::pair<std::string, std::string>> machine_;
  std::vector<std::pair<std::string, std::string>> sections_;  // section -> records text, in order
  std::vector<std::string> skipped_;
};

std::string quoted(const std::string& s);

}  // namespace stacksim::probe
