// The engine's pending-event set: a 4-ary min-heap keyed by (time, insertion sequence), so events
// at one time come out in the order they were pushed (ns-3 m_uid, OMNeT++ insertOrder) and a run is
// deterministic. An entry is 24 bytes: the time, the sequence number with a 2-bit kind below it
// (unique sequence numbers make the kind irrelevant to the order), and a 64-bit payload. A 4-ary
// heap halves the depth of a binary one and reads each node's children from one or two cache
// lines; the hold-model benchmark (benchmarks/engine_bench.cpp) measures it.
//
// Cancellation is lazy: the engine tags payloads with a version and skips stale entries on pop.
// Complexity: push O(log4 n), pop O(4 log4 n) comparisons.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/time.hpp"

namespace stacksim::sim {

class EventQueue {
 public:
  struct Entry {
    Time time;
    uint64_t order;  // sequence << 2 | kind
    uint64_t payload;
    uint8_t kind() const { return static_cast<uint8_t>(order & 3); }
  };
  static constexpr uint8_t kMaxKind = 3;

  // `kind` <= kMaxKind.
  void push(Time time, uint8_t kind, uint64_t payload) {
    heap_.push_back({time, (next_seq_++ << 2) | kind, payload});
    sift_up(heap_.size() - 1);
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Entry& top() const { return heap_.front(); }
  Entry pop() {
    const Entry e = heap_.front();
    const Entry last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(last);
    return e;
  }

 private:
  static bool before(const Entry& a, const Entry& b) { return a.time != b.time ? a.time < b.time : a.order < b.order; }
  void sift_up(size_t pos) {
    const Entry e = heap_[pos];
    while (pos > 0) {
      const size_t parent = (pos - 1) / 4;
      if (!before(e, heap_[parent])) break;
      heap_[pos] = heap_[parent];
      pos = parent;
    }
    heap_[pos] = e;
  }
  // Moves `e` down from the root's hole to its place.
  void sift_down(const Entry& e) {
    const size_t n = heap_.size();
    size_t pos = 0;
    while (true) {
      const size_t first = 4 * pos + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t end = first + 4 < n ? first + 4 : n;
      for (size_t c = first + 1; c < end; ++c)
        if (before(heap_[c], heap_[best])) best = c;
      if (!before(heap_[best], e)) break;
      heap_[pos] = heap_[best];
      pos = best;
    }
    heap_[pos] = e;
  }

  std::vector<Entry> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace stacksim::sim
