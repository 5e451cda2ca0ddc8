// Engine implementation (model and event discipline in engine.hpp). Per activity it keeps the
// remaining work as of its last rate change, the rate and the change time, so work is brought up to
// date only when its rate changes or it finishes (SimGrid's lazy update). Finish predictions round
// up to the picosecond; a prediction made before a later rate change is recognised as stale by its
// version and skipped.
#include "sim/engine.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/event_queue.hpp"
#include "sim/max_min_solver.hpp"

namespace stacksim::sim {
namespace {

// Event kinds in the queue. Payload: LatencyDone the activity id; Finish the activity id in the
// low 32 bits and its rate version at prediction time in the high 32 bits; Timer the caller's tag.
enum EventKind : uint8_t { kLatencyDone, kFinish, kTimer };

enum class State : uint8_t { Latency, Flowing, Done };

struct Activity {
  double remaining = 0;
  double rate = 0;
  double bound = kUnbounded;
  Time last_update;
  uint64_t tag = 0;
  uint32_t version = 0;
  State state = State::Latency;
  SmallVector<SolverElement, 1> elements;
  SmallVector<uint32_t, 1> slot;  // position in each resource's member list
};

struct Resource {
  ResourceSpec spec;
  std::vector<ActivityId> members;  // flowing activities
  double consumed = 0;
};

}  // namespace

struct Engine::Impl {
  std::vector<Resource> resources;
  std::vector<SolverConstraint> constraints;
  std::vector<Activity> acts;
  EventQueue queue;
  Time now;
  EngineStats stats;
  CompletionHandler on_done;
  TimerHandler on_timer;
  MaxMinSolver solver;
  std::vector<ResourceId> dirty_resources;
  // Per resource: dirty / visited marks, apart from Resource so the component flood stays in cache.
  std::vector<uint32_t> resource_mark;
  uint32_t epoch = 0;
  std::vector<uint32_t> act_epoch;
  // Scratch for solves.
  std::vector<SolverVariable> vars;
  std::vector<double> rates;
  std::vector<uint32_t> component;
  std::vector<uint32_t> all_vars;  // 0, 1, ..., component.size() - 1
  std::vector<ResourceId> stack;

  void push_finish(Time t, ActivityId id, uint32_t version) {
    queue.push(t, kFinish, static_cast<uint64_t>(version) << 32 | id);
  }

  void advance(Activity& a) {
    // Brings remaining work and resource consumption up to `now` at the current rate.
    if (a.state == State::Flowing && a.rate > 0 && now > a.last_update) {
      const double dt = (now - a.last_update).seconds();
      const double done = std::isinf(a.rate) ? a.remaining : a.rate * dt;
      a.remaining = std::max(0.0, a.remaining - done);
      if (!std::isinf(a.rate))
        for (const auto& e : a.elements) resources[e.constraint].consumed += e.weight * a.rate * dt;
    }
    a.last_update = now;
  }

  void begin_flow(ActivityId id) {
    Activity& a = acts[id];
    a.last_update = now;
    if (a.remaining <= 0 || (a.elements.empty() && std::isinf(a.bound))) {
      finish(id);
      return;
    }
    a.state = State::Flowing;
    if (a.elements.empty()) {  // only its own bound limits it
      a.rate = a.bound;
      ++a.version;
      push_finish(now + Time::from_seconds_ceil(a.remaining / a.rate), id, a.version);
      return;
    }
    a.slot.resize(a.elements.size());
    for (size_t i = 0; i < a.elements.size(); ++i) {
      Resource& r = resources[a.elements[i].constraint];
      a.slot[i] = static_cast<uint32_t>(r.members.size());
      r.members.push_back(id);
      mark(a.elements[i].constraint);
    }
  }

  void mark(ResourceId r) {
    if (resource_mark[r] != epoch + 1) {
      resource_mark[r] = epoch + 1;
      dirty_resources.push_back(r);
    }
  }

  void finish(ActivityId id) {
    Activity& a = acts[id];
    if (a.state == State::Flowing && !a.elements.empty()) {
      for (size_t i = 0; i < a.elements.size(); ++i) {
        Resource& r = resources[a.elements[i].constraint];
        const uint32_t pos = a.slot[i];
        const ActivityId last = r.members.back();
        r.members[pos] = last;
        r.members.pop_back();
        if (last != id) {
          Activity& l = acts[last];
          for (size_t k = 0; k < l.elements.size(); ++k)
            if (l.elements[k].constraint == a.elements[i].constraint && l.slot[k] == r.members.size()) {
              l.slot[k] = pos;
              break;
            }
        }
        mark(a.elements[i].constraint);
      }
    }
    a.state = State::Done;
    a.rate = 0;
    a.remaining = 0;
    // A replay starts millions of activities: give back the per-activity arrays at once.
    a.elements.release();
    a.slot.release();
    ++stats.events;
    if (on_done) on_done(id, a.tag);
  }

  // Re-solves every connected component (resources linked by shared flowing activities) that
  // contains a resource touched in this batch.
  void solve_dirty() {
    if (dirty_resources.empty()) return;
    ++epoch;  // resources marked with epoch are the dirty set; visited marks use epoch+1
    const uint32_t visit = epoch + 1;
    ++epoch;
    std::vector<ResourceId> seeds;
    seeds.swap(dirty_resources);
    for (ResourceId seed : seeds) {
      if (resource_mark[seed] == visit) continue;
      // Flood the component from this seed.
      component.clear();
      stack.clear();
      stack.push_back(seed);
      resource_mark[seed] = visit;
      while (!stack.empty()) {
        const ResourceId r = stack.back();
        stack.pop_back();
        for (ActivityId id : resources[r].members) {
          if (act_epoch.size() <= id) act_epoch.resize(acts.size(), 0);
          if (act_epoch[id] == visit) continue;
          act_epoch[id] = visit;
          component.push_back(id);
          for (const auto& e : acts[id].elements)
            if (resource_mark[e.constraint] != visit) {
              resource_mark[e.constraint] = visit;
              stack.push_back(e.constraint);
            }
        }
      }
      if (component.empty()) continue;
      std::sort(component.begin(), component.end());  // deterministic order
      vars.resize(component.size());
      rates.assign(component.size(), 0.0);
      for (size_t i = 0; i < component.size(); ++i) {
        const Activity& a = acts[component[i]];
        vars[i] = {a.elements.data(), static_cast<uint32_t>(a.elements.size()), a.bound};
      }
      while (all_vars.size() < component.size()) all_vars.push_back(static_cast<uint32_t>(all_vars.size()));
      all_vars.resize(component.size());
      solver.solve(constraints, vars, all_vars, rates);
      ++stats.solves;
      stats.solved_activities += component.size();
      for (size_t i = 0; i < component.size(); ++i) {
        const ActivityId id = component[i];
        Activity& a = acts[id];
        if (a.rate == rates[i] && a.version > 0) continue;  // unchanged: its finish event stands
        advance(a);
        a.rate = rates[i];
        ++a.version;
        if (a.rate > 0) {
          const Time dt = std::isinf(a.rate) ? Time::zero() : Time::from_seconds_ceil(a.remaining / a.rate);
          push_finish(now + dt, id, a.version);
        }
      }
    }
  }
};

Engine::Engine() : impl_(std::make_unique<Impl>()) {}
Engine::~Engine() = default;

ResourceId Engine::add_resource(const ResourceSpec& spec) {
  if (!(spec.capacity > 0) || std::isinf(spec.capacity))
    throw std::invalid_argument("resource '" + spec.name + "': capacity must be positive and finite");
  impl_->resources.push_back({spec, {}, 0.0});
  impl_->resource_mark.push_back(0);
  impl_->constraints.push_back({spec.capacity, spec.sharing == Sharing::FatPipe});
  return static_cast<ResourceId>(impl_->resources.size() - 1);
}

void Engine::set_capacity(ResourceId id, double capacity) {
  if (!(capacity > 0) || std::isinf(capacity))
    throw std::invalid_argument("resource capacity must be positive and finite");
  if (!impl_->resources.at(id).members.empty()) throw std::logic_error("set_capacity on a resource in use");
  impl_->resources[id].spec.capacity = capacity;
  impl_->constraints[id].capacity = capacity;
}

size_t Engine::num_resources() const { return impl_->resources.size(); }
const ResourceSpec& Engine::resource(ResourceId id) const { return impl_->resources.at(id).spec; }
void Engine::on_completion(CompletionHandler h) { impl_->on_done = std::move(h); }
void Engine::on_timer(TimerHandler h) { impl_->on_timer = std::move(h); }

void Engine::reserve_activities(size_t n) {
  impl_->acts.reserve(impl_->acts.size() + n);
  impl_->act_epoch.reserve(impl_->acts.size() + n);
}

ActivityId Engine::start(const ActivitySpec& spec, uint64_t tag) {
  Impl& m = *impl_;
  if (spec.work < 0 || std::isnan(spec.work)) throw std::invalid_argument("activity work must be >= 0");
  if (!(spec.bound > 0)) throw std::invalid_argument("activity bound must be > 0");
  const ActivityId id = static_cast<ActivityId>(m.acts.size());
  Activity a;
  a.remaining = spec.work;
  a.bound = spec.bound;
  a.tag = tag;
  a.last_update = m.now;
  a.elements.reserve(spec.usages.size());
  for (const Usage& u : spec.usages) {
    if (u.resource >= m.resources.size()) throw std::out_of_range("activity uses an unknown resource");
    if (u.weight < 0) throw std::invalid_argument("usage weight must be >= 0");
    if (u.weight > 0) a.elements.push_back({u.resource, u.weight});
  }
  m.acts.push_back(std::move(a));
  ++m.stats.activities_started;
  m.queue.push(m.now + spec.latency, kLatencyDone, id);
  return id;
}

void Engine::schedule_timer(Time at, uint64_t tag) {
  if (at < impl_->now) throw std::invalid_argument("timer in the past");
  impl_->queue.push(at, kTimer, tag);
}

Time Engine::run(Time until) {
  Impl& m = *impl_;
  while (!m.queue.empty()) {
    const Time t = m.queue.top().time;
    if (t >= Time::max() && until == Time::max()) {
      // Past the horizon (finish times saturate there): only stale predictions may be left.
      const EventQueue::Entry e = m.queue.pop();
      if (e.kind() == kFinish) {
        const Activity& a = m.acts[static_cast<ActivityId>(e.payload)];
        if (a.state != State::Flowing || a.version != static_cast<uint32_t>(e.payload >> 32)) continue;
      }
      throw HorizonError(
          "the simulation would run past its horizon of about 26 days of simulated time: a rate, "
          "bandwidth or duration of the scenario is out of any realistic range");
    }
    if (t > until) break;
    m.now = t;
    ++m.stats.batches;
    // Process the whole batch at time t (handlers may add events at t; they join the batch).
    while (!m.queue.empty() && m.queue.top().time == t) {
      const EventQueue::Entry e = m.queue.pop();
      switch (e.kind()) {
        case kLatencyDone:
          m.begin_flow(static_cast<ActivityId>(e.payload));
          break;
        case kFinish: {
          const auto id = static_cast<ActivityId>(e.payload);
          Activity& a = m.acts[id];
          if (a.state != State::Flowing || a.version != static_cast<uint32_t>(e.payload >> 32))
            break;  // stale prediction
          m.advance(a);
          m.finish(id);
          break;
        }
        case kTimer:
          ++m.stats.events;
          if (m.on_timer) m.on_timer(e.payload);
          break;
      }
      if (m.queue.empty() || m.queue.top().time != t) m.solve_dirty();
    }
  }
  return m.now;
}

Time Engine::now() const { return impl_->now; }

double Engine::rate(ActivityId id) const {
  const auto& a = impl_->acts.at(id);
  return a.state == State::Flowing ? a.rate : 0.0;
}

double Engine::consumed(ResourceId id) const {
  // Integrated up to each member's last rate change, plus what members consumed since then.
  const Impl& m = *impl_;
  const Resource& r = m.resources.at(id);
  double total = r.consumed;
  for (ActivityId a_id : r.members) {
    const Activity& a = m.acts[a_id];
    if (std::isinf(a.rate)) continue;
    const double dt = (m.now - a.last_update).seconds();
    for (const SolverElement& e : a.elements)
      if (e.constraint == id) total += e.weight * a.rate * dt;
  }
  return total;
}
const EngineStats& Engine::stats() const { return impl_->stats; }

}  // namespace stacksim::sim
