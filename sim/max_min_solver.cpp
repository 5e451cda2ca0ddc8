#include "sim/max_min_solver.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

namespace stacksim::sim {

void MaxMinSolver::solve(const std::vector<SolverConstraint>& constraints,
                         const std::vector<SolverVariable>& variables, const std::vector<uint32_t>& vars,
                         std::vector<double>& rates) {
  const double inf = std::numeric_limits<double>::infinity();
  if (remaining_.size() < constraints.size()) {
    remaining_.resize(constraints.size());
    weight_sum_.resize(constraints.size());
    epoch_.resize(constraints.size(), 0);
    version_.resize(constraints.size(), 0);
    members_.resize(constraints.size());
  }
  ++current_epoch_;
  touched_.clear();

  // Effective bound of each variable: its own bound and every fat-pipe constraint it crosses.
  struct Var { uint32_t id; double bound; bool fixed; };
  std::vector<Var> vs;
  vs.reserve(vars.size());
  for (uint32_t v : vars) {
    const SolverVariable& sv = variables[v];
    double b = sv.bound;
    for (uint32_t e = 0; e < sv.num_elements; ++e) {
      const SolverElement& el = sv.elements[e];
      const SolverConstraint& c = constraints[el.constraint];
      if (el.weight <= 0) continue;
      if (c.fat_pipe) {
        b = std::min(b, c.capacity / el.weight);
        continue;
      }
      if (epoch_[el.constraint] != current_epoch_) {
        epoch_[el.constraint] = current_epoch_;
        remaining_[el.constraint] = c.capacity;
        weight_sum_[el.constraint] = 0;
        members_[el.constraint].clear();
        touched_.push_back(el.constraint);
      }
      weight_sum_[el.constraint] += el.weight;
      members_[el.constraint].push_back(static_cast<uint32_t>(vs.size()));
    }
    vs.push_back({v, b, false});
  }

  // Heap entries (level, constraint, version); stale versions are skipped.
  struct Entry { double level; uint32_t c; uint32_t version; };
  auto later = [](const Entry& a, const Entry& b) {
    if (a.level != b.level) return a.level > b.level;
    return a.c > b.c;  // deterministic tie-break
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(later)> heap(later);
  for (uint32_t c : touched_) {
    version_[c] = 0;
    heap.push({remaining_[c] / weight_sum_[c], c, 0});
  }
  // Variables ordered by bound, so the next bound-limited variable is found in O(1).
  std::vector<uint32_t> by_bound;
  by_bound.reserve(vs.size());
  for (uint32_t i = 0; i < vs.size(); ++i)
    if (vs[i].bound < inf) by_bound.push_back(i);
  std::sort(by_bound.begin(), by_bound.end(), [&](uint32_t a, uint32_t b) {
    if (vs[a].bound != vs[b].bound) return vs[a].bound < vs[b].bound;
    return a < b;
  });
  size_t next_bound = 0;
  size_t unfixed = vs.size();

  auto fix = [&](uint32_t i, double rate) {
    Var& x = vs[i];
    if (x.fixed) return;
    x.fixed = true;
    --unfixed;
    rates[x.id] = rate;
    const SolverVariable& sv = variables[x.id];
    for (uint32_t e = 0; e < sv.num_elements; ++e) {
      const SolverElement& el = sv.elements[e];
      if (el.weight <= 0 || constraints[el.constraint].fat_pipe) continue;
      const uint32_t c = el.constraint;
      remaining_[c] -= el.weight * rate;
      weight_sum_[c] -= el.weight;
      ++version_[c];
      if (weight_sum_[c] > 1e-300) heap.push({std::max(0.0, remaining_[c]) / weight_sum_[c], c, version_[c]});
    }
  };

  while (unfixed > 0) {
    while (!heap.empty() && (heap.top().version != version_[heap.top().c] || weight_sum_[heap.top().c] <= 1e-300))
      heap.pop();
    while (next_bound < by_bound.size() && vs[by_bound[next_bound]].fixed) ++next_bound;
    const double level_c = heap.empty() ? inf : heap.top().level;
    const double level_b = next_bound < by_bound.size() ? vs[by_bound[next_bound]].bound : inf;
    if (level_c == inf && level_b == inf) {
      // Unconstrained and unbounded: infinitely fast (completes at once).
      for (uint32_t i = 0; i < vs.size(); ++i)
        if (!vs[i].fixed) fix(i, inf);
      break;
    }
    if (level_b <= level_c) {
      fix(by_bound[next_bound], level_b);
      continue;
    }
    const uint32_t c = heap.top().c;
    heap.pop();
    // Saturate c: every unfixed member gets the level. Copy: fix() edits other members lists.
    const std::vector<uint32_t> members = members_[c];
    for (uint32_t i : members)
      if (!vs[i].fixed) fix(i, level_c);
  }
}

}  // namespace stacksim::sim
