// The discrete-event engine: resources with a capacity, activities that consume them, and a clock.
//
// Model (SimGrid's lmm, STYLE.md 1.1): an activity has `work` units to complete (bytes, flops, or
// "seconds of a whole GPU"); while it runs it holds each resource r in `usages` with a weight w_r,
// i.e. at rate x it consumes w_r * x of r's capacity. Rates come from weighted max-min fairness
// (progressive filling) over all running activities, capped by each activity's `bound`. An activity
// first waits its fixed `latency`, then its work flows. k identical flows can be one activity with
// weight k on the shared resources (same per-flow rate, k times the consumption).
//
// Event discipline: events are ordered by (time, insertion sequence), so ties resolve in insertion
// order and runs are bit-for-bit deterministic. All events of one timestamp are processed as a
// batch, then the sharing problem is re-solved once, only for the connected component(s) of
// resources touched by activities that started or ended (selective update); completion times are
// re-predicted only for activities whose rate changed (lazy update).
//
// Complexity: start/finish O(log n) queue work + the re-solve of the touched component.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/small_vector.hpp"
#include "sim/time.hpp"

namespace stacksim::sim {

using ResourceId = uint32_t;
using ActivityId = uint32_t;
inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

enum class Sharing {
  Shared,   // the consumptions of all activities add up to at most the capacity (a link direction)
  FatPipe,  // each activity alone may use up to the capacity (a non-blocking crossbar)
};

struct ResourceSpec {
  std::string name;
  double capacity = 0.0;  // work units per second (bytes_per_s for links, 1.0 for "a whole GPU")
  Sharing sharing = Sharing::Shared;
};

struct Usage {
  ResourceId resource = 0;
  double weight = 1.0;  // capacity consumed per unit of the activity's rate
};

struct ActivitySpec {
  double work = 0.0;             // units to complete; 0 = a pure delay of `latency`
  SmallVector<Usage, 1> usages;  // resources held while the work flows
  double bound = kUnbounded;     // cap on the rate (NIC/protocol limits, roofline rate)
  Time latency = Time::zero();   // fixed delay before the work starts to flow
};

struct EngineStats {
  uint64_t events = 0;             // activity completions + timers processed
  uint64_t batches = 0;            // distinct timestamps processed
  uint64_t solves = 0;             // component re-solves
  uint64_t solved_activities = 0;  // activities whose rate was recomputed, summed over solves
  uint64_t activities_started = 0;
};

// An activity, latency or timer would end beyond the simulated-time horizon (Time::max(), about
// 26 days): some rate or duration of the model is out of any realistic range.
class HorizonError : public std::range_error {
 public:
  using std::range_error::range_error;
};

class Engine {
 public:
  // Called when an activity completes (work done) or a timer fires; `tag` is the caller's.
  using CompletionHandler = std::function<void(ActivityId, uint64_t tag)>;
  using TimerHandler = std::function<void(uint64_t tag)>;

  Engine();
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Resources. Capacity must be > 0 (std::invalid_argument otherwise).
  ResourceId add_resource(const ResourceSpec& spec);
  void set_capacity(ResourceId id, double capacity);  // allowed only while no activity uses it
  size_t num_resources() const;
  const ResourceSpec& resource(ResourceId id) const;

  void on_completion(CompletionHandler handler);
  void on_timer(TimerHandler handler);

  // Starts an activity now. Rates are (re)computed at the end of the current timestamp batch.
  ActivityId start(const ActivitySpec& spec, uint64_t tag);
  // Room for n more activities (a caller that knows how many it will start saves regrowth).
  void reserve_activities(size_t n);
  // Schedules a timer event at absolute time `at` (>= now).
  void schedule_timer(Time at, uint64_t tag);

  // Runs until nothing is pending or the clock would pass `until`. Returns the final clock.
  // Running to completion (until = Time::max()) with an event beyond the time horizon (about 26
  // days) throws HorizonError.
  Time run(Time until = Time::max());
  Time now() const;

  // The current rate of a running activity (0 while in its latency phase or finished).
  double rate(ActivityId id) const;
  // Capacity-seconds consumed on a resource so far (divide by capacity*time for utilisation).
  double consumed(ResourceId id) const;
  const EngineStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stacksim::sim
