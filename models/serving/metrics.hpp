// Bounded-memory statistics of request metrics. The first kExactSamples values are kept and their
// percentiles are exact (linear interpolation between order statistics, numpy's default, as
// vLLM's benchmark_serving reports them); beyond that the values fold into a log-spaced histogram
// (buckets 0.1 % wide) and percentiles come from it, within 0.1 %. The mean is always exact.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace stacksim::serving {

class StreamingStat {
 public:
  static constexpr size_t kExactSamples = 1 << 16;
  void add(double v);
  long long count() const { return count_; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
  double max() const { return max_; }
  double percentile(double p) const;  // p in [0, 100]; 0 without samples

 private:
  static constexpr double kMin = 1e-9, kLogStep = 0.001;
  void fold();
  int bucket(double v) const;
  long long count_ = 0;
  double sum_ = 0, max_ = 0;
  std::vector<double> exact_;
  std::vector<long long> hist_;  // empty until the exact store is full
  long long at_or_below_min_ = 0;
};

}  // namespace stacksim::serving
