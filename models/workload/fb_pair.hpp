// The fast tier's F&B pair (DualPipe, ep_overlap): a forward chunk and a backward chunk started
// together on one GPU, as the replay runs them, each a chain of stream segments.
#pragma once
#include <algorithm>
#include <vector>

#include "models/workload/replay.hpp"

namespace stacksim::workload {

// Collectives that run at once beside one op (each marked overlaps_next): those of one group
// share its links, max-min, so their times add up (a context-parallel K/V all-gather and dK/dV
// reduce-scatter under one attention backward); different groups run side by side.
struct ConcurrentCollectives {
  double s[7] = {0, 0, 0, 0, 0, 0, 0};  // seconds alone, summed per Group
  void add(Group g, double t) { s[static_cast<int>(g)] += t; }
  double seconds() const { return *std::max_element(s, s + 7); }
  int group() const { return static_cast<int>(std::max_element(s, s + 7) - s); }  // the longest
};

// Compute (GPU seconds) or a collective wait (seconds alone, on one group's links).
struct PairSegment {
  int group;  // -1: compute; else the collective's Group
  double s;
};

// When both chains are done: compute shares the GPU max-min (half each while both compute, all
// of it while the other waits on a collective); collectives of one group at once share its links
// the same way (the two chunks' all-to-alls leave through the same NICs), of different groups
// they take their own time.
double pair_seconds(const std::vector<PairSegment>& a, const std::vector<PairSegment>& b);

}  // namespace stacksim::workload
