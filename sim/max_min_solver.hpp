// Weighted max-min fair sharing by progressive filling (SimGrid's lmm::MaxMin, Bertsekas &
// Gallager "Data Networks" 6.5.2). Variables are activity rates x_i with an optional bound b_i;
// a Shared constraint j enforces sum_i w_ij * x_i <= C_j, a FatPipe constraint w_ij * x_i <= C_j
// for each i alone. All variables rise together; when a constraint saturates, its variables are
// fixed at the current level and their consumption is removed from their other constraints; a
// variable reaching its bound is fixed there. A heap of constraint levels (remaining capacity over
// the summed weight of unfixed variables), updated in place, finds the next saturation in
// O(log m). A shared constraint that only one variable of the solve crosses is that variable's
// bound (capacity / weight) and stays out of the heap. Cost: O((V*d + C) log C) for V variables of
// degree d over C constraints, both counting only constraints that two variables or more cross.
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
  void solve(const std::vector<SolverConstraint>& constraints, const std::vector<SolverVariable>& variables,
             const std::vector<uint32_t>& vars, std::vector<double>& rates);

 private:
  void fix(const std::vector<SolverConstraint>& constraints, const std::vector<SolverVariable>& variables,
           const std::vector<uint32_t>& vars, uint32_t i, double rate, std::vector<double>& rates);
  void update_changed();
  // Indexed binary min-heap of constraints on (level_, id): one entry per constraint, moved in place
  // when its level changes, so it never holds more than the constraints of the solve.
  bool before(uint32_t a, uint32_t b) const;
  void sift_up(uint32_t pos);
  void sift_down(uint32_t pos);
  void heap_remove(uint32_t c);

  std::vector<uint32_t> heap_;      // constraint ids
  std::vector<uint32_t> heap_pos_;  // per constraint: its index in heap_, or kNotInHeap
  std::vector<double> level_;       // per constraint: remaining / weight_sum
  // Per constraint (indexed by constraint id, valid where epoch_ == current_epoch_).
  std::vector<double> remaining_;   // capacity not yet taken by fixed variables
  std::vector<double> weight_sum_;  // summed weights of unfixed member variables
  std::vector<uint32_t> unfixed_;   // number of unfixed member variables (exact emptiness test)
  std::vector<uint32_t> epoch_;
  std::vector<uint32_t> begin_;  // members of c: member_list_[begin_[c], fill_[c])
  std::vector<uint32_t> fill_;
  std::vector<uint32_t> member_list_;
  std::vector<uint32_t> touched_;  // constraints of this solve, in first-touch order
  std::vector<uint32_t> changed_;  // constraints changed by the current fixing step
  std::vector<uint32_t> changed_mark_;
  // Per solved variable (indexed by position in `vars`).
  std::vector<double> bound_;  // own bound and fat-pipe limits
  std::vector<uint8_t> fixed_;
  std::vector<uint32_t> by_bound_;
  uint32_t current_epoch_ = 0;
  uint32_t step_ = 0;
};

}  // namespace stacksim::sim
