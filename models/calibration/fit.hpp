// Least-squares fits behind `stacksim calibrate`, and their cross-validation.
//
// Two model shapes cover every probe benchmark:
//   linear      y = intercept + slope * x      latency-bandwidth (alpha-beta, Hockney 1994):
//                                              x = bytes or kernels or images, y = seconds
//   saturating  y = y_max * x / (x + x_half)   GEMM rate against the K depth: a fixed per-tile
//                                              prologue/epilogue costs as much as x_half steps of K
// Both minimise *relative* residuals, sum(((model(x) - y) / y)^2): probe sweeps span five or more
// decades of x, and an absolute fit would let the largest sizes decide everything, leaving the
// latency (intercept) to the noise of the biggest transfers. Relative residuals weight each decade
// alike, which is also what the reported MAPE measures.
//
// Parameters are physical, so never negative: a negative intercept is clamped to zero and the slope
// refitted alone (non-negative least squares with two unknowns solved by enumerating the active set).
//
// Cross-validation is k-fold with k = min(5, n): points sorted by x, point i goes to fold i mod k, so
// every fold holds sizes across the whole sweep. The score is the MAPE on the held-out points.
// Everything is deterministic: no random folds, a fixed grid then golden-section refinement.
#pragma once
#include <functional>
#include <vector>

namespace stacksim::calib {

struct Sample {
  double x = 0;
  double y = 0;
};

struct LinearModel {
  double intercept = 0;
  double slope = 0;
  double operator()(double x) const { return intercept + slope * x; }
};

struct SaturatingModel {
  double y_max = 0;
  double x_half = 0;
  double operator()(double x) const { return y_max * x / (x + x_half); }
};

// Needs at least two samples with distinct x and all y > 0 (std::invalid_argument otherwise).
LinearModel fit_linear_relative(const std::vector<Sample>& samples);
// Needs at least two samples with distinct x > 0 and all y > 0. x_half is searched on [0, 1e6].
SaturatingModel fit_saturating_relative(const std::vector<Sample>& samples);

// Mean absolute percentage error of `model` on `samples`, in percent.
double mape_percent(const std::vector<Sample>& samples, const std::function<double(double)>& model);

// k-fold cross-validated MAPE (percent) with k = min(max_folds, n) and deterministic interleaved
// folds; `fit` trains on the other folds and returns the predictor.
using Fitter = std::function<std::function<double(double)>(const std::vector<Sample>&)>;
double kfold_mape_percent(std::vector<Sample> samples, const Fitter& fit, int max_folds = 5);

}  // namespace stacksim::calib
