#include "models/workload/fb_pair.hpp"

namespace stacksim::workload {

double pair_seconds(const std::vector<PairSegment>& a, const std::vector<PairSegment>& b) {
  size_t i = 0, j = 0;
  double ra = a.empty() ? 0 : a[0].s, rb = b.empty() ? 0 : b[0].s, t = 0;
  while (i < a.size() || j < b.size()) {
    const int ga = i < a.size() ? a[i].group : -2, gb = j < b.size() ? b[j].group : -2;
    const double shared = ga == gb ? 0.5 : 1.0;  // both compute, or both on one group's links
    const double rate_a = i < a.size() ? shared : 0.0, rate_b = j < b.size() ? shared : 0.0;
    double dt = 1e300;
    if (rate_a > 0) dt = std::min(dt, ra / rate_a);
    if (rate_b > 0) dt = std::min(dt, rb / rate_b);
    t += dt;
    ra -= dt * rate_a, rb -= dt * rate_b;
    if (i < a.size() && ra <= 1e-15 * (1 + t)) ra = ++i < a.size() ? a[i].s : 0;
    if (j < b.size() && rb <= 1e-15 * (1 + t)) rb = ++j < b.size() ? b[j].s : 0;
  }
  return t;
}

}  // namespace stacksim::workload
