// Weighted max-min fair sharing by progressive filling (SimGrid's lmm::MaxMin, Bertsekas &
// Gallager "Data Networks" 6.5.2). Variables are activity rates x_i with an optional bound b_i;
// a Shared constraint j enforces sum_i w_ij * x_i <= C_j, a FatPipe constraint w_ij * x_i <= C_j
// for each i alone. All variables rise together; when a constraint saturates, its variables are
// fixed at the current level and their consumption is removed from their other constraints; a
// variable reaching its bound is fixed there. A heap of constraint levels (remaining capacity over
// the summed weight of unfixed variables) with lazy invalidation finds the next saturation in
// O(log m). Cost: O((V*d + C) log C) for V variables of degree d over C constraints.
#pragma once
#include <cstdint>
#include <vector>

namespace stacksim::sim {

struct SolverElement {
  uint32_t constraint;
  double weight;
};

struct SolverVariable {
  const SolverElement* elements;
  uint32_t num_elements;
  double bound;  // +inf when unbounded
};

struct SolverConstraint {
  double capacity;
  bool fat_pipe;
};

// Solves for the variables listed in `vars` (indices into `variables`), using only the
// constraints they touch. `rates[v]` receives each solved rate. Scratch arrays sized to the
// number of constraints are kept between calls.
class MaxMinSolver {
 public:
  void solve(const std::vector<SolverConstraint>& constraints,
             const std::vector<SolverVariable>& variables, const std::vector<uint32_t>& vars,
             std::vector<double>& rates);

 private:
  std::vector<double> remaining_;
  std::vector<double> weight_sum_;
  std::vector<uint32_t> epoch_;
  std::vector<uint32_t> version_;
  std::vector<std::vector<uint32_t>> members_;  // unfixed variables per touched constraint
  std::vector<uint32_t> touched_;
  uint32_t current_epoch_ = 0;
};

}  // namespace stacksim::sim
