#include "models/serving/metrics.hpp"

#include <algorithm>
#include <cmath>

namespace stacksim::serving {

int StreamingStat::bucket(double v) const { return static_cast<int>(std::floor(std::log(v / kMin) / kLogStep)); }

void StreamingStat::fold() {
  hist_.assign(static_cast<size_t>(std::log(1e9 / kMin) / kLogStep) + 2, 0);
  for (double v : exact_) {
    if (v <= kMin)
      ++at_or_below_min_;
    else
      ++hist_[std::min<size_t>(static_cast<size_t>(bucket(v)), hist_.size() - 1)];
  }
  exact_.clear();
  exact_.shrink_to_fit();
}

void StreamingStat::add(double v) {
  ++count_;
  sum_ += v;
  max_ = count_ == 1 ? v : std::max(max_, v);
  if (hist_.empty()) {
    exact_.push_back(v);
    if (exact_.size() > kExactSamples) fold();
    return;
  }
  if (v <= kMin)
    ++at_or_below_min_;
  else
    ++hist_[std::min<size_t>(static_cast<size_t>(bucket(v)), hist_.size() - 1)];
}

double StreamingStat::percentile(double p) const {
  if (count_ == 0) return 0;
  if (hist_.empty()) {
    std::vector<double> s = exact_;
    std::sort(s.begin(), s.end());
    const double pos = p / 100 * static_cast<double>(s.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, s.size() - 1);
    return s[lo] + (pos - static_cast<double>(lo)) * (s[hi] - s[lo]);
  }
  const long long rank = static_cast<long long>(std::ceil(p / 100 * static_cast<double>(count_)));
  long long seen = at_or_below_min_;
  if (seen >= rank) return kMin;
  for (size_t b = 0; b < hist_.size(); ++b) {
    seen += hist_[b];
    if (seen >= rank) return std::min(max_, kMin * std::exp((static_cast<double>(b) + 0.5) * kLogStep));
  }
  return max_;
}

}  // namespace stacksim::serving
