#include "models/calibration/fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace stacksim::calib {
namespace {

void require_usable(const std::vector<Sample>& samples, const char* what) {
  if (samples.size() < 2) throw std::invalid_argument(std::string(what) + ": needs at least two samples");
  bool distinct = false;
  for (const Sample& s : samples) {
    if (!(s.y > 0) || !std::isfinite(s.y) || !std::isfinite(s.x))
      throw std::invalid_argument(std::string(what) + ": every y must be positive and finite");
    if (s.x != samples.front().x) distinct = true;
  }
  if (!distinct) throw std::invalid_argument(std::string(what) + ": needs at least two distinct x values");
}

// For a fixed x_half the best y_max has a closed form. With u_i = g_i / y_i, g_i = x_i/(x_i + h),
// the relative residual is y_max * u_i - 1, so y_max = sum(u) / sum(u^2) and the residual sum of
// squares is n - sum(u)^2 / sum(u^2).
struct Profile {
  double y_max;
  double sse;
};
Profile saturating_profile(const std::vector<Sample>& samples, double x_half) {
  double su = 0, suu = 0;
  for (const Sample& s : samples) {
    const double u = s.x / (s.x + x_half) / s.y;
    su += u;
    suu += u * u;
  }
  return {su / suu, static_cast<double>(samples.size()) - su * su / suu};
}

}  // namespace

LinearModel fit_linear_relative(const std::vector<Sample>& samples) {
  require_usable(samples, "linear fit");
  const Eigen::Index n = static_cast<Eigen::Index>(samples.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    a(i, 0) = 1.0 / samples[i].y;
    a(i, 1) = samples[i].x / samples[i].y;
  }
  const Eigen::Vector2d p = a.colPivHouseholderQr().solve(b);
  LinearModel m{p(0), p(1)};
  // Active-set step of non-negative least squares: with one parameter pinned at zero the other has
  // the one-column closed form sum(c) / sum(c^2).
  if (m.intercept < 0) {
    m.intercept = 0;
    m.slope = a.col(1).sum() / a.col(1).squaredNorm();
  } else if (m.slope < 0) {
    m.slope = 0;
    m.intercept = a.col(0).sum() / a.col(0).squaredNorm();
  }
  return m;
}

SaturatingModel fit_saturating_relative(const std::vector<Sample>& samples) {
  require_usable(samples, "saturating fit");
  for (const Sample& s : samples)
    if (!(s.x > 0)) throw std::invalid_argument("saturating fit: every x must be positive");
  // Coarse grid: 0 and 100 points per decade over [1, 1e6], then golden-section refinement around
  // the best grid point (the profile SSE is smooth and, in practice, unimodal there).
  std::vector<double> grid{0.0};
  for (int j = 0; j <= 600; ++j) grid.push_back(std::pow(10.0, j / 100.0));
  size_t best = 0;
  double best_sse = saturating_profile(samples, grid[0]).sse;
  for (size_t i = 1; i < grid.size(); ++i) {
    const double sse = saturating_profile(samples, grid[i]).sse;
    if (sse < best_sse) {
      best_sse = sse;
      best = i;
    }
  }
  double lo = grid[best == 0 ? 0 : best - 1];
  double hi = grid[std::min(best + 1, grid.size() - 1)];
  const double inv_phi = (std::sqrt(5.0) - 1.0) / 2.0;
  double c = hi - inv_phi * (hi - lo), d = lo + inv_phi * (hi - lo);
  double fc = saturating_profile(samples, c).sse, fd = saturating_profile(samples, d).sse;
  for (int it = 0; it < 80; ++it) {
    if (fc < fd) {
      hi = d;
      d = c;
      fd = fc;
      c = hi - inv_phi * (hi - lo);
      fc = saturating_profile(samples, c).sse;
    } else {
      lo = c;
      c = d;
      fc = fd;
      d = lo + inv_phi * (hi - lo);
      fd = saturating_profile(samples, d).sse;
    }
  }
  double x_half = 0.5 * (lo + hi);
  if (saturating_profile(samples, x_half).sse > best_sse) x_half = grid[best];
  return {saturating_profile(samples, x_half).y_max, x_half};
}

double mape_percent(const std::vector<Sample>& samples, const std::function<double(double)>& model) {
  if (samples.empty()) return 0.0;
  double sum = 0;
  for (const Sample& s : samples) sum += std::fabs(model(s.x) - s.y) / s.y;
  return 100.0 * sum / static_cast<double>(samples.size());
}

double kfold_mape_percent(std::vector<Sample> samples, const Fitter& fit, int max_folds) {
  const int n = static_cast<int>(samples.size());
  const int k = std::min(max_folds, n);
  if (k < 2) throw std::invalid_argument("cross-validation: needs at least two samples");
  std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.x < b.x; });
  double sum = 0;
  for (int fold = 0; fold < k; ++fold) {
    std::vector<Sample> train, test;
    for (int i = 0; i < n; ++i) (i % k == fold ? test : train).push_back(samples[i]);
    const auto model = fit(train);
    for (const Sample& s : test) sum += std::fabs(model(s.x) - s.y) / s.y;
  }
  return 100.0 * sum / n;
}

}  // namespace stacksim::calib
