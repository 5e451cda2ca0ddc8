#include "models/serving/expert_balance.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace stacksim::serving {
namespace {

// Load CV of one expert over a layer's experts without a balancer. TensorRT-LLM tech blog 4
// ("Scaling Expert Parallelism in TensorRT-LLM, part 1", examples/ep_load_balancer output for
// DeepSeek-R1 at EP32, 8 experts per rank, no EPLB): per-rank load mean 1024, std 492, and the
// busiest rank (max - mean) / mean 1.564 averaged over the MoE layers. The rank loads are heavier-
// tailed than a normal, so c_e is set where the model meets the busiest rank (the quantity that
// sets the step): 1.564 = z(32) sqrt(c_e^2 / 8 (1 - 1/32)) -> c_e = 2.17 (the std alone gives 1.36).
constexpr double kExpertLoadCv = 2.17;
// Rank load CV left by EPLB placement: the same blog after EPLB (EP36, 288 slots): std 54.0 / 1024,
// (max - mean) / mean 0.115 = z(36) x 0.054.
constexpr double kBalancedRankLoadCv = 0.054;

double normal_pdf(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); }
double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

}  // namespace

double expected_max_standard_normal(int n) {
  if (n <= 1) return 0;
  thread_local std::map<int, double> memo;  // serving compare and purchase run deployments on threads
  auto it = memo.find(n);
  if (it != memo.end()) return it->second;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1) dx, trapezoid on [-10, 10].
  constexpr int kSteps = 4000;
  constexpr double lo = -10, hi = 10, dx = (hi - lo) / kSteps;
  double sum = 0;
  for (int i = 0; i <= kSteps; ++i) {
    const double x = lo + i * dx;
    const double f = x * n * normal_pdf(x) * std::pow(normal_cdf(x), n - 1);
    sum += (i == 0 || i == kSteps) ? f / 2 : f;
  }
  return memo.emplace(n, sum * dx).first->second;
}

double busiest_expert_rank_factor(int experts, int ep, double copies, bool load_balancer) {
  if (ep <= 1 || experts <= 0 || copies <= 0) return 1;
  const double ranks = ep;
  const double experts_per_rank = std::max(1.0, static_cast<double>(experts) / ranks);
  const double popularity_cv2 = load_balancer ? kBalancedRankLoadCv * kBalancedRankLoadCv
                                              : kExpertLoadCv * kExpertLoadCv / experts_per_rank * (1 - 1 / ranks);
  const double sampling_cv2 = (ranks - 1) / copies;
  const double factor = 1 + expected_max_standard_normal(ep) * std::sqrt(popularity_cv2 + sampling_cv2);
  // The busiest rank cannot receive more than every copy.
  return std::min(factor, ranks);
}

}  // namespace stacksim::serving
