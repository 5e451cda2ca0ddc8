// CollectiveTimes (fast_estimate.hpp): the tuner's analytical collective times, memoised.
#include "models/workload/fast_estimate.hpp"

namespace stacksim::workload {

double CollectiveTimes::seconds(const coll::Collective& c) { return seconds(std::vector<coll::Collective>{c}); }

double CollectiveTimes::seconds(const std::vector<coll::Collective>& at_once) {
  const coll::Collective& c = at_once.front();
  std::vector<std::vector<int>> ranks;
  for (const coll::Collective& x : at_once) ranks.push_back(x.ranks);
  const auto key = std::make_tuple(static_cast<int>(c.op), c.peer, c.dispatch, c.bytes, std::move(ranks));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  // Outside the lock: a pure function of the key, so a race only computes it twice.
  const double s = coll::estimate_concurrent_seconds(cluster_, tuning_, at_once);
  std::lock_guard<std::mutex> lock(mutex_);
  cache_.emplace(key, s);
  return s;
}

std::vector<std::vector<int>> CollectiveTimes::sharing_first(const std::vector<std::vector<int>>& groups) {
  if (groups.size() < 2) return groups;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = sharing_.find(groups);
    if (it != sharing_.end()) return it->second;
  }
  // A group's links: the routes between ring neighbours (a ring's flows; the other algorithms
  // reach the same NICs and switch ports).
  const auto ring_links = [&](const std::vector<int>& g, std::vector<char>& mark, bool set) {
    bool hit = false;
    for (size_t j = 0; j < g.size() && !(hit && !set); ++j)
      for (topo::LinkId l : cluster_.gpu_route(g[j], g[(j + 1) % g.size()]).links) {
        if (set) mark[l] = 1;
        hit = hit || mark[l];
      }
    return hit;
  };
  std::vector<char> first(cluster_.num_links(), 0);
  ring_links(groups.front(), first, true);
  std::vector<std::vector<int>> out{groups.front()};
  for (size_t i = 1; i < groups.size(); ++i)
    if (ring_links(groups[i], first, false)) out.push_back(groups[i]);
  std::lock_guard<std::mutex> lock(mutex_);
  return sharing_.emplace(groups, std::move(out)).first->second;
}

}  // namespace stacksim::workload
