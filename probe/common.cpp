#include "probe/common.hpp"

#include <algorithm>
#include <cmath>

namespace stacksim::probe {
namespace {

// Nearest-rank percentile of sorted samples (as nccl-tests' -I p99 column).
double percentile(const std::vector<double>& sorted, double p) {
  const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string number(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

Stats summarize(std::vector<double> s) {
  Stats st;
  if (s.empty()) return st;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  st.median_s = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  st.min_s = s.front();
  st.max_s = s.back();
  st.p10_s = percentile(s, 0.10);
  st.p90_s = percentile(s, 0.90);
  st.reps = static_cast<int>(n);
  return st;
}

Stats time_on_stream(cudaStream_t stream, const std::function<void()>& work, int warmup, int reps, double min_window_s,
                     int max_batch) {
  cudaEvent_t start, stop;
  PROBE_CUDA(cudaEventCreate(&start));
  PROBE_CUDA(cudaEventCreate(&stop));
  auto window = [&](int batch) {
    PROBE_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < batch; ++i) work();
    PROBE_CUDA(cudaEventRecord(stop, stream));
    PROBE_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    PROBE_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return ms * 1e-3;
  };
  for (int i = 0; i < warmup; ++i) work();
  PROBE_CUDA(cudaStreamSynchronize(stream));
  const double single = std::max(window(1), 1e-7);
  const int batch = std::clamp(static_cast<int>(std::ceil(min_window_s / single)), 1, max_batch);
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) samples.push_back(window(batch) / batch);
  PROBE_CUDA(cudaEventDestroy(start));
  PROBE_CUDA(cudaEventDestroy(stop));
  return summarize(samples);
}

Stats time_on_host(const std::function<void()>& work, int warmup, int reps, double min_window_s, int max_batch) {
  for (int i = 0; i < warmup; ++i) work();
  auto window = [&](int batch) {
    const double t0 = now_s();
    for (int i = 0; i < batch; ++i) work();
    return now_s() - t0;
  };
  const double single = std::max(window(1), 1e-9);
  const int batch = std::clamp(static_cast<int>(std::ceil(min_window_s / single)), 1, max_batch);
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) samples.push_back(window(batch) / batch);
  return summarize(samples);
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    out += c;
  }
  return out + "\"";
}

Record& Record::add(const std::string& key, const std::string& value) {
  body_ += (body_.empty() ? "" : ", ") + key + ": " + value;
  return *this;
}
Record& Record::add(const std::string& key, double value) { return add(key, number(value)); }
Record& Record::add(const std::string& key, long long value) { return add(key, std::to_string(value)); }
Record& Record::stats(const Stats& s) {
  add("seconds", s.median_s);
  add("seconds_min", s.min_s);
  add("seconds_max", s.max_s);
  add("seconds_p10", s.p10_s);
  add("seconds_p90", s.p90_s);
  return add("reps", static_cast<long long>(s.reps));
}

void Output::machine(const std::string& key, const std::string& value) { machine_.emplace_back(key, quoted(value)); }
void Output::machine_raw(const std::string& key, const std::string& yaml) { machine_.emplace_back(key, yaml); }

void Output::add(const std::string& section, const Record& r) {
  for (auto& [name, text] : sections_)
    if (name == section) {
      text += r.text();
      return;
    }
  sections_.emplace_back(section, r.text());
}

void Output::skip(const std::string& benchmark, const std::string& reason) {
  skipped_.push_back("  - {benchmark: " + benchmark + ", reason: " + quoted(reason) + "}\n");
  std::fprintf(stderr, "stacksim-probe: skipped %s: %s\n", benchmark.c_str(), reason.c_str());
}

std::string Output::text() const {
  std::string s = "# Measurements written by stacksim-probe (docs/probe.md); fit with `stacksim calibrate`.\n";
  s += "format: stacksim-probe/1\nmachine:\n";
  for (const auto& [k, v] : machine_) s += "  " + k + ": " + v + "\n";
  s += sections_.empty() ? "benchmarks: {}\n" : "benchmarks:\n";
  for (const auto& [name, records] : sections_) s += "  " + name + ":\n" + records;
  if (!skipped_.empty()) {
    s += "skipped:\n";
    for (const auto& line : skipped_) s += line;
  }
  return s;
}

}  // namespace stacksim::probe
