// Progressive filling for weighted max-min sharing; the maths is in max_min_solver.hpp.
#include "sim/max_min_solver.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stacksim::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr uint32_t kNotInHeap = std::numeric_limits<uint32_t>::max();

bool shares(const SolverConstraint& c, const SolverElement& e) { return e.weight > 0 && !c.fat_pipe; }

}  // namespace

// Lower level first; ties to the lower constraint id, so the saturation order is a function of
// the levels alone.
bool MaxMinSolver::before(uint32_t a, uint32_t b) const {
  if (level_[a] != level_[b]) return level_[a] < level_[b];
  return a < b;
}

void MaxMinSolver::sift_up(uint32_t pos) {
  const uint32_t c = heap_[pos];
  while (pos > 0) {
    const uint32_t parent = (pos - 1) / 2;
    if (!before(c, heap_[parent])) break;
    heap_[pos] = heap_[parent];
    heap_pos_[heap_[pos]] = pos;
    pos = parent;
  }
  heap_[pos] = c;
  heap_pos_[c] = pos;
}

void MaxMinSolver::sift_down(uint32_t pos) {
  const uint32_t c = heap_[pos];
  const uint32_t size = static_cast<uint32_t>(heap_.size());
  while (true) {
    uint32_t child = 2 * pos + 1;
    if (child >= size) break;
    if (child + 1 < size && before(heap_[child + 1], heap_[child])) ++child;
    if (!before(heap_[child], c)) break;
    heap_[pos] = heap_[child];
    heap_pos_[heap_[pos]] = pos;
    pos = child;
  }
  heap_[pos] = c;
  heap_pos_[c] = pos;
}

void MaxMinSolver::heap_remove(uint32_t c) {
  const uint32_t pos = heap_pos_[c];
  heap_pos_[c] = kNotInHeap;
  const uint32_t last = heap_.back();
  heap_.pop_back();
  if (last == c) return;
  heap_[pos] = last;
  heap_pos_[last] = pos;
  sift_up(pos);
  sift_down(heap_pos_[last]);
}

// Fixes variable i at `rate` and takes its consumption off its shared constraints. Their heap
// positions are refreshed once per fixing step by update_changed(), not once per variable: a
// saturation can fix hundreds of variables that cross the same constraint.
void MaxMinSolver::fix(const std::vector<SolverConstraint>& constraints, const std::vector<SolverVariable>& variables,
                       const std::vector<uint32_t>& vars, uint32_t i, double rate, std::vector<double>& rates) {
  fixed_[i] = 1;
  rates[vars[i]] = rate;
  const SolverVariable& sv = variables[vars[i]];
  for (uint32_t e = 0; e < sv.num_elements; ++e) {
    const SolverElement& el = sv.elements[e];
    const uint32_t c = el.constraint;
    // Out of the heap (private, saturated or emptied): nothing reads its sums again this solve.
    if (!shares(constraints[c], el) || heap_pos_[c] == kNotInHeap) continue;
    remaining_[c] -= el.weight * rate;
    weight_sum_[c] -= el.weight;
    --unfixed_[c];
    if (changed_mark_[c] != step_) {
      changed_mark_[c] = step_;
      changed_.push_back(c);
    }
  }
}

// Fixing a variable at a level L <= the level of each constraint it crosses never lowers those
// levels ((R - wL) / (W - w) >= R / W when L <= R / W), so entries mostly sift down; sifting up as
// well keeps the heap exact under rounding.
void MaxMinSolver::update_changed() {
  for (uint32_t c : changed_) {
    if (heap_pos_[c] == kNotInHeap) continue;
    if (unfixed_[c] == 0) {
      heap_remove(c);
      continue;
    }
    level_[c] = std::max(0.0, remaining_[c]) / weight_sum_[c];
    sift_up(heap_pos_[c]);
    sift_down(heap_pos_[c]);
  }
  changed_.clear();
  ++step_;
}

void MaxMinSolver::solve(const std::vector<SolverConstraint>& constraints, const std::vector<SolverVariable>& variables,
                         const std::vector<uint32_t>& vars, std::vector<double>& rates) {
  const size_t num_constraints = constraints.size();
  if (remaining_.size() < num_constraints) {
    remaining_.resize(num_constraints);
    weight_sum_.resize(num_constraints);
    unfixed_.resize(num_constraints);
    epoch_.resize(num_constraints, 0);
    heap_pos_.resize(num_constraints, kNotInHeap);
    level_.resize(num_constraints);
    begin_.resize(num_constraints);
    fill_.resize(num_constraints);
    changed_mark_.resize(num_constraints, 0);
  }
  ++current_epoch_;
  ++step_;
  touched_.clear();
  changed_.clear();
  for (uint32_t c : heap_) heap_pos_[c] = kNotInHeap;  // normally empty: every solve drains it
  heap_.clear();
  const uint32_t n = static_cast<uint32_t>(vars.size());
  bound_.resize(n);
  fixed_.assign(n, 0);

  // Pass 1: the sums over each shared constraint: capacity, summed weight and member count.
  for (uint32_t i = 0; i < n; ++i) {
    const SolverVariable& sv = variables[vars[i]];
    for (uint32_t e = 0; e < sv.num_elements; ++e) {
      const SolverElement& el = sv.elements[e];
      if (!shares(constraints[el.constraint], el)) continue;
      if (epoch_[el.constraint] != current_epoch_) {
        epoch_[el.constraint] = current_epoch_;
        remaining_[el.constraint] = constraints[el.constraint].capacity;
        weight_sum_[el.constraint] = 0;
        unfixed_[el.constraint] = 0;
      }
      weight_sum_[el.constraint] += el.weight;
      ++unfixed_[el.constraint];
    }
  }
  // Effective bounds: the own bound, every fat pipe crossed and every shared constraint that no
  // other variable of this solve crosses. Such a private constraint saturates exactly when the
  // variable reaches capacity / weight (the level it would have in the heap, to the bit), so it is
  // a bound and stays out of the heap: a collective's flow crossing hundreds of links of its own
  // costs one bound instead of hundreds of heap entries.
  size_t num_members = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const SolverVariable& sv = variables[vars[i]];
    double b = sv.bound;
    for (uint32_t e = 0; e < sv.num_elements; ++e) {
      const SolverElement& el = sv.elements[e];
      const SolverConstraint& c = constraints[el.constraint];
      if (el.weight <= 0) continue;
      if (c.fat_pipe || unfixed_[el.constraint] == 1) {
        b = std::min(b, c.capacity / el.weight);
        continue;
      }
      if (heap_pos_[el.constraint] == kNotInHeap) {
        heap_pos_[el.constraint] = 0;  // listed once; its real position is set below
        touched_.push_back(el.constraint);
      }
      ++num_members;
    }
    bound_[i] = b;
  }
  for (uint32_t c : touched_) heap_pos_[c] = kNotInHeap;

  // Pass 2: member lists in one flat array (CSR), each in variable order.
  member_list_.resize(num_members);
  uint32_t offset = 0;
  for (uint32_t c : touched_) {
    begin_[c] = fill_[c] = offset;
    offset += unfixed_[c];
  }
  for (uint32_t i = 0; i < n; ++i) {
    const SolverVariable& sv = variables[vars[i]];
    for (uint32_t e = 0; e < sv.num_elements; ++e)
      if (shares(constraints[sv.elements[e].constraint], sv.elements[e]) && unfixed_[sv.elements[e].constraint] > 1)
        member_list_[fill_[sv.elements[e].constraint]++] = i;
  }

  for (uint32_t c : touched_) {
    level_[c] = remaining_[c] / weight_sum_[c];
    heap_pos_[c] = static_cast<uint32_t>(heap_.size());
    heap_.push_back(c);
  }
  for (uint32_t pos = static_cast<uint32_t>(heap_.size()) / 2; pos-- > 0;) sift_down(pos);

  // Variables ordered by bound, so the next bound-limited variable is found in O(1).
  by_bound_.clear();
  for (uint32_t i = 0; i < n; ++i)
    if (bound_[i] < kInf) by_bound_.push_back(i);
  std::sort(by_bound_.begin(), by_bound_.end(), [&](uint32_t a, uint32_t b) {
    if (bound_[a] != bound_[b]) return bound_[a] < bound_[b];
    return a < b;
  });
  size_t next_bound = 0;
  size_t unfixed = n;

  while (unfixed > 0) {
    while (next_bound < by_bound_.size() && fixed_[by_bound_[next_bound]]) ++next_bound;
    const double level_c = heap_.empty() ? kInf : level_[heap_.front()];
    const double level_b = next_bound < by_bound_.size() ? bound_[by_bound_[next_bound]] : kInf;
    if (level_c == kInf && level_b == kInf) {
      // Neither constrained nor bounded: infinitely fast (the engine completes it at once).
      for (uint32_t i = 0; i < n; ++i)
        if (!fixed_[i]) rates[vars[i]] = kInf;
      break;
    }
    if (level_b <= level_c) {
      fix(constraints, variables, vars, by_bound_[next_bound], level_b, rates);
      --unfixed;
    } else {
      // Saturate the constraint: every unfixed member gets its level.
      const uint32_t c = heap_.front();
      heap_remove(c);
      for (uint32_t k = begin_[c]; k < fill_[c]; ++k) {
        const uint32_t i = member_list_[k];
        if (fixed_[i]) continue;
        fix(constraints, variables, vars, i, level_c, rates);
        --unfixed;
      }
    }
    update_changed();
  }
}

}  // namespace stacksim::sim
