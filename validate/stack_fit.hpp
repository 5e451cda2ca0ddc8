// `stacksim fit CASES... -o stacks/fitted.yaml`: fits the stack parameters (stack_profile.hpp) per
// framework family, judged by leave-one-source-out cross-validation.
//
// A re-simulation per trial would take minutes each, so every training case runs ONCE at the
// reference stack and keeps its breakdown; the fit works on log ratios with the first-order
// effect of each parameter on the step time T:
//   T'/T = 1 + f_compute (1/e - 1) + f_comm (1/c - 1) + g K / T
// (f: the shares of compute and of exposed communication in T, K: GPU kernels per step, e, c, g:
// compute efficiency, communication efficiency, per-kernel gap). The fitted values are then
// applied in the real simulator: each source's rows re-simulated with the parameters fitted
// without that source (the CV errors reported), and the 80 % bands taken from those residuals.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "services/stack_profile.hpp"
#include "validate/validation.hpp"

namespace stacksim::analysis {

// One training case as the fit sees it.
struct FitRow {
  std::string id, source, family, architecture;
  int num_gpus = 0;
  double base_log = 0;       // log(predicted / measured step time) at the reference stack
  double compute_share = 0;  // GEMM, attention, element-wise, optimizer and bubble over T
  double comm_share = 0;     // exposed TP/CP/EP/PP/DP communication over T
  double kernels_per_s = 0;  // K / T
  bool time_like = true;     // the published metric is a time (else a rate)
};

FitRow fit_row(const CaseOutcome& o);
// log(T'/T) for the parameters (the first-order model above).
double first_order_log(const FitRow& r, const StackParameters& p);

struct FitReport {
  StackFit fit;
  std::vector<std::string> lines;  // the per-family table, printed
};

// Runs the whole procedure over the case files; progress on `progress` when it is a terminal.
// `rows_csv` (optional): writes the rows the fit used with their CV errors, for audit.
FitReport fit_stacks(const std::vector<std::string>& case_files, std::ostream& progress, bool tty,
                     const std::string& rows_csv = "");

}  // namespace stacksim::analysis
