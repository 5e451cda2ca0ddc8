// CollectiveTimes (fast_estimate.hpp): the tuner's analytical collective times, memoised.
#include "models/workload/fast_estimate.hpp"

namespace stacksim::workload {

double CollectiveTimes::seconds(const coll::Collective& c) {
  const auto key = std::make_tuple(static_cast<int>(c.op), c.peer, c.dispatch, c.bytes, c.ranks);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  // Outside the lock: a pure function of the key, so a race only computes it twice.
  const double s = coll::estimate_seconds(cluster_, tuning_, c);
  std::lock_guard<std::mutex> lock(mutex_);
  cache_.emplace(key, s);
  return s;
}

}  // namespace stacksim::workload
