// What arrives at a serving deployment: the request stream (benchmark_serving / bench_serving /
// GenAI-Perf conventions) and its length distributions. Generation is deterministic: a counter-
// based hash of (seed, request index, stream), so the same workload gives the same requests on any
// machine, and request i does not depend on how many were drawn before it.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace stacksim::serving {

enum class ArrivalMode {
  Offline,      // every request queued at t = 0 (trtllm-bench throughput, vLLM offline benchmark)
  Concurrency,  // closed loop: `concurrency` requests in flight, a new one as each finishes
  Poisson,      // open loop: exponential gaps at `rate_per_s`
  Gamma,        // open loop: gamma gaps at `rate_per_s` with shape `gamma_shape` (burstiness; 1 = Poisson)
  FixedBatch,   // static batches of `batch_size`: the next batch starts when the last one ends
  Trace,        // the requests of `trace`, as given
};
const char* arrival_mode_name(ArrivalMode m);

struct LengthDist {
  enum class Kind { Fixed, Uniform, Normal, Histogram };
  Kind kind = Kind::Fixed;
  double mean_tokens = 128;  // fixed: the length; normal: the mean
  double stddev_tokens = 0;  // normal
  long long min_tokens = 1;  // uniform bounds; every draw is clamped to [min, max]
  long long max_tokens = 1 << 30;
  // Histogram: (upper edge in tokens, weight) in increasing edges; a draw picks a bin by weight and
  // a length uniformly inside it (lower edge = the previous bin's upper edge, or min_tokens).
  std::vector<std::pair<long long, double>> bins;
  double expected_tokens() const;  // the mean a draw has (after clamping, approximately)
};

struct TraceRequest {
  double arrival_s = 0;
  long long input_tokens = 0;
  long long output_tokens = 0;
};

struct Workload {
  ArrivalMode mode = ArrivalMode::Offline;
  long long num_requests = 1000;  // trace: ignored (its size)
  double rate_per_s = 0;          // poisson, gamma
  double gamma_shape = 1;         // gamma
  int concurrency = 0;            // concurrency
  int batch_size = 0;             // fixed_batch
  LengthDist input, output;
  std::vector<TraceRequest> trace;  // sorted by arrival_s, arrival_s >= 0
  uint64_t seed = 0;
  std::string origin;  // file the workload came from, for error messages
};

struct Request {
  long long id = 0;
  double arrival_s = 0;  // offline/concurrency/fixed batch: set by the simulator
  long long input_tokens = 0;
  long long output_tokens = 0;
};

// config::InputError (key "serving.workload.<field>") for a bad workload: no requests, a rate <= 0
// in an open-loop mode, concurrency or batch < 1, negative or decreasing trace times, lengths < 1.
void check_workload(const Workload& w);
// Request i of the stream (its arrival gap is drawn, not accumulated: the simulator sums the gaps).
Request draw_request(const Workload& w, long long index);
// The gap before request i in an open-loop mode (0 otherwise).
double draw_gap_s(const Workload& w, long long index);
// A trace file: CSV with a header naming arrival_s (or timestamp), input_tokens (or
// prompt_tokens / input_len), output_tokens (or output_len), or JSONL with the same keys.
// config::InputError naming the file, the line and the column on a bad row.
std::vector<TraceRequest> load_trace(const std::string& path);

}  // namespace stacksim::serving
