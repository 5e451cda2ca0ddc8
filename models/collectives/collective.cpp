// Collectives: the tuner (algorithm x protocol by analytical estimate) and the translation of a
// plan into engine tasks. Model and assumptions: collective.hpp; decompositions: plan.cpp.
#include "models/collectives/collective.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "models/collectives/plan.hpp"
#include "sim/engine.hpp"

namespace stacksim::coll {

const char* op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce:
      return "all_reduce";
    case CollectiveOp::ReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::AllGather:
      return "all_gather";
    case CollectiveOp::AllToAll:
      return "all_to_all";
    case CollectiveOp::Broadcast:
      return "broadcast";
    case CollectiveOp::SendRecv:
      return "send_recv";
  }
  return "collective";
}

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::Auto:
      return "auto";
    case Algorithm::Ring:
      return "ring";
    case Algorithm::Tree:
      return "tree";
    case Algorithm::Hierarchical:
      return "hierarchical";
    case Algorithm::InSwitch:
      return "nvls";
    case Algorithm::InSwitchTree:
      return "nvls_tree";
  }
  return "auto";
}

double bus_factor(CollectiveOp op, int n) {
  switch (op) {
    case CollectiveOp::AllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather:
    case CollectiveOp::AllToAll:
      return double(n - 1) / n;
    default:
      return 1.0;
  }
}

double ramp_fraction(const CommTuning& t, double bytes) {
  if (t.ramp_end_bytes <= 0 || bytes >= t.ramp_end_bytes) return 1.0;
  if (bytes <= t.ramp_start_bytes) return t.ramp_start_fraction;
  const double x = std::log2(bytes / t.ramp_start_bytes) / std::log2(t.ramp_end_bytes / t.ramp_start_bytes);
  return t.ramp_start_fraction + (1.0 - t.ramp_start_fraction) * x;
}

namespace {

using detail::Flow;
using detail::Phase;
using detail::Plan;

// Fraction of the bottleneck link rate a flow reaches: NVLS on in-switch phases, the network's on
// NIC-bound flows, else the protocol's (NVLink, PCIe); uncapped protocols ramp with the size.
double flow_efficiency(const topo::Cluster& c, const CommTuning& t, const Protocol& p, const Plan& plan,
                       const Phase& ph, const Flow& f) {
  const double ramp = p.bus_cap_Bps > 0 ? 1.0 : ramp_fraction(t, plan.ramp_bytes);
  double bw = std::numeric_limits<double>::infinity();
  topo::LinkKind kind = topo::LinkKind::NvLink;
  for (topo::LinkId l : f.route.links)
    if (c.link(l).bandwidth_Bps < bw) {
      bw = c.link(l).bandwidth_Bps;
      kind = c.link(l).kind;
    }
  if (kind == topo::LinkKind::Network) return t.network_efficiency;
  return ph.in_switch ? t.nvls_efficiency * ramp : p.efficiency * ramp;
}

double phase_latency(const Protocol& p, const Phase& ph) {
  return ph.intra_steps * p.step_latency_s + ph.inter_steps * p.network_step_latency_s;
}

// NVLS and NVLSTree reduce in the switch: NVLS's call latency, its efficiency, Simple only.
bool reduces_in_switch(Algorithm a) { return a == Algorithm::InSwitch || a == Algorithm::InSwitchTree; }

double call_latency(const CommTuning& t, const Protocol& p, const Plan& plan) {
  return reduces_in_switch(plan.algorithm) ? t.nvls_latency_s : p.latency_s;
}

// Per-flow rate cap of a protocol with a per-rank bus-bandwidth cap (0 = none), in bytes/s.
double flow_cap_Bps(const Protocol& p, const Plan& plan, const Flow& f) {
  if (p.bus_cap_Bps <= 0 || plan.bus_bytes <= 0) return 0;
  return p.bus_cap_Bps * f.bytes / plan.bus_bytes;
}

// Adds a phase's flows (bytes / efficiency) to the links they cross (`touched` lists the links
// first loaded) and returns the longest time a flow's protocol cap allows it (0 without caps).
double add_phase_load(const topo::Cluster& c, const CommTuning& t, const Protocol& p, const Plan& plan, const Phase& ph,
                      std::vector<double>& load, std::vector<topo::LinkId>& touched) {
  double capped = 0;
  for (const Flow& f : ph.flows) {
    const double work = f.bytes / flow_efficiency(c, t, p, plan, ph, f);
    for (topo::LinkId l : f.route.links) {
      if (load[l] == 0) touched.push_back(l);
      load[l] += work;
    }
    const double cap = flow_cap_Bps(p, plan, f);
    if (cap > 0) capped = std::max(capped, f.bytes / cap);
  }
  return capped;
}

// The most loaded of the `touched` links' time; clears their load and the list.
double drain_load(const topo::Cluster& c, std::vector<double>& load, std::vector<topo::LinkId>& touched) {
  double time = 0;
  for (topo::LinkId l : touched) {
    time = std::max(time, load[l] / c.link(l).bandwidth_Bps);
    load[l] = 0;
  }
  touched.clear();
  return time;
}

// Bandwidth time of a phase without other traffic: the most loaded link (bytes / efficiency over
// its rate) or the protocol cap. `load` is scratch space, one entry per link, all zero.
double phase_bandwidth_time(const topo::Cluster& c, const CommTuning& t, const Protocol& p, const Plan& plan,
                            const Phase& ph, std::vector<double>& load) {
  std::vector<topo::LinkId> touched;
  const double capped = add_phase_load(c, t, p, plan, ph, load, touched);
  return std::max(capped, drain_load(c, load, touched));
}

double max_route_latency(const Phase& ph) {
  double x = 0;
  for (const Flow& f : ph.flows) x = std::max(x, f.route.latency_s);
  return x;
}

// The plan's time without other traffic (the tuner's estimate): call latency, then per phase
// its bandwidth time, route latency and step latencies. Exact for the plans as run alone, since
// every flow of a phase is paced to the phase's bandwidth time (see append_choice).
double estimate(const topo::Cluster& c, const CommTuning& t, const Plan& plan, const Protocol& p,
                std::vector<double>& load) {
  double total = call_latency(t, p, plan);
  for (const Phase& ph : plan.phases)
    total += phase_bandwidth_time(c, t, p, plan, ph, load) + max_route_latency(ph) + phase_latency(p, ph);
  return total;
}

struct Choice {
  Plan plan;
  Protocol protocol;
  double estimate_s = 0;
};

void check(const topo::Cluster& c, const Collective& col) {
  if (col.ranks.size() < 2) throw std::invalid_argument("a collective needs at least 2 ranks");
  for (int r : col.ranks)
    if (r < 0 || r >= c.num_gpus())
      throw std::invalid_argument("collective names GPU " + std::to_string(r) + ", but the cluster has " +
                                  std::to_string(c.num_gpus()));
  if (col.peer >= c.num_gpus())
    throw std::invalid_argument("send_recv peer " + std::to_string(col.peer) + " does not exist");
  if (!(col.bytes >= 0)) throw std::invalid_argument("collective size must be >= 0 bytes");
}

Choice choose(const topo::Cluster& c, const CommTuning& t, const Collective& col) {
  check(c, col);
  if (t.protocols.empty()) throw std::invalid_argument("the collective tuning has no protocol");
  std::vector<Algorithm> algos;
  if (col.algorithm != Algorithm::Auto) {
    if (reduces_in_switch(col.algorithm) && t.nvls_efficiency <= 0)
      throw std::invalid_argument("NVLS requested, but the tuning of '" + t.intra_generation +
                                  "' has no in-switch reduction");
    algos = {col.algorithm};
  } else {
    algos = {Algorithm::Ring};
    if (col.op == CollectiveOp::AllReduce) {
      const auto nodes = detail::ranks_by_node(c, col.ranks);
      if (nodes.size() > 1 && detail::uniform_nodes(nodes)) {
        algos.push_back(Algorithm::Tree);
        algos.push_back(Algorithm::Hierarchical);
        if (t.nvls_efficiency > 0 && detail::nvls_tree_capable(c, nodes)) algos.push_back(Algorithm::InSwitchTree);
      }
      if (t.nvls_efficiency > 0 && detail::nvls_capable(c, col.ranks)) algos.push_back(Algorithm::InSwitch);
    }
  }
  std::vector<double> load(c.num_links(), 0.0);
  Choice best;
  best.estimate_s = std::numeric_limits<double>::infinity();
  for (Algorithm a : algos) {
    Plan plan = detail::make_plan(c, col, a);
    int best_p = -1;
    double best_e = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < t.protocols.size(); ++i) {
      if (reduces_in_switch(a) && t.protocols[i].bus_cap_Bps > 0) continue;  // NVLS runs Simple
      const double e = estimate(c, t, plan, t.protocols[i], load);
      if (e < best_e) {
        best_e = e;
        best_p = static_cast<int>(i);
      }
    }
    if (best_p >= 0 && best_e < best.estimate_s) {
      best.estimate_s = best_e;
      best.protocol = t.protocols[best_p];
      best.plan = std::move(plan);
    }
  }
  if (!(best.estimate_s < std::numeric_limits<double>::infinity()))
    throw std::invalid_argument("no protocol of the tuning can run " + std::string(op_name(col.op)));
  return best;
}

sim::TaskId append_choice(sim::TaskGraph& g, const topo::Cluster& c, const std::vector<sim::ResourceId>& link_res,
                          const CommTuning& t, const Collective& col, const Choice& ch,
                          const std::vector<sim::TaskId>& deps, uint16_t category, sim::TrackId track,
                          const std::vector<sim::ResourceId>* gpu_res) {
  const uint32_t name =
      g.intern(std::string(op_name(col.op)) + " (" + algorithm_name(ch.plan.algorithm) + ", " + ch.protocol.name + ")");
  const bool take_sms = gpu_res != nullptr && t.sm_fraction > 0;
  std::vector<sim::TaskId> before;
  for (sim::TaskId d : deps)
    if (d != sim::kNoTask) before.push_back(d);
  double latency = call_latency(t, ch.protocol, ch.plan);
  std::vector<int> flows_of_rank;
  std::vector<double> load(c.num_links(), 0.0);
  for (const Phase& ph : ch.plan.phases) {
    latency += phase_latency(ch.protocol, ph);
    // A pipelined phase moves in lockstep: no flow runs ahead of the busiest link, so each flow is
    // paced to finish at the phase's bandwidth time (other traffic can still slow it further).
    const double pace_s = phase_bandwidth_time(c, t, ch.protocol, ch.plan, ph, load);
    if (take_sms) {
      flows_of_rank.assign(c.num_gpus(), 0);
      for (const Flow& f : ph.flows) ++flows_of_rank[f.src];
    }
    std::vector<sim::TaskId> flows;
    if (!take_sms && !ph.flows.empty()) {
      // The phase's flows, paced to one finish, behave as ONE activity over the union of their
      // links: work W = the largest (efficiency-inflated) flow volume, each link weighted by the
      // bytes it carries over W. Same times alone and under contention, far fewer activities
      // (identical flows merged, STYLE.md 3.3 habit 2).
      std::map<topo::LinkId, double> carried;
      double work = 0, max_route_latency = 0, bound = sim::kUnbounded;
      for (const Flow& f : ph.flows) {
        const double v = f.bytes / flow_efficiency(c, t, ch.protocol, ch.plan, ph, f);
        for (topo::LinkId l : f.route.links) carried[l] += v;
        work = std::max(work, v);
        max_route_latency = std::max(max_route_latency, f.route.latency_s);
      }
      for (const Flow& f : ph.flows) {
        const double eff = flow_efficiency(c, t, ch.protocol, ch.plan, ph, f);
        const double v = f.bytes / eff, cap = flow_cap_Bps(ch.protocol, ch.plan, f);
        if (cap > 0 && v > 0) bound = std::min(bound, cap / eff * work / v);
      }
      if (pace_s > 0 && work > 0) bound = std::min(bound, work / pace_s);
      sim::TaskSpec spec;
      spec.activity.work = work;
      if (work > 0)
        for (const auto& [l, bytes] : carried) spec.activity.usages.push_back({link_res[l], bytes / work});
      spec.activity.bound = bound;
      spec.activity.latency = sim::Time::from_seconds(latency + max_route_latency);
      spec.category = category;
      spec.track = track;
      spec.name = name;
      const sim::TaskId id = g.add(spec);
      for (sim::TaskId d : before) g.add_dependency(d, id);
      before = {id};
      latency = 0;
      continue;
    }
    flows.reserve(ph.flows.size());
    for (const Flow& f : ph.flows) {
      const double eff = flow_efficiency(c, t, ch.protocol, ch.plan, ph, f);
      const double cap = flow_cap_Bps(ch.protocol, ch.plan, f);
      // Rates in bytes/s, or in units of the flow's nominal rate when it also holds SMs.
      const double unit = take_sms ? f.route.bottleneck_Bps : 1.0;
      sim::TaskSpec spec;
      spec.activity.work = f.bytes / eff / unit;
      spec.activity.usages.reserve(f.route.links.size() + 1);
      for (topo::LinkId l : f.route.links) spec.activity.usages.push_back({link_res[l], unit});
      if (take_sms) spec.activity.usages.push_back({(*gpu_res)[f.src], t.sm_fraction / flows_of_rank[f.src]});
      double bound = cap > 0 ? cap / eff : sim::kUnbounded;
      if (pace_s > 0) bound = std::min(bound, f.bytes / eff / pace_s);
      if (bound < sim::kUnbounded) spec.activity.bound = bound / unit;
      spec.activity.latency = sim::Time::from_seconds(latency + f.route.latency_s);
      spec.category = category;
      spec.track = flows.empty() ? track : sim::kNoTrack;  // one row per collective in traces
      spec.name = name;
      const sim::TaskId id = g.add(spec);
      for (sim::TaskId d : before) g.add_dependency(d, id);
      flows.push_back(id);
    }
    latency = 0;
    sim::TaskSpec join;
    join.category = category;
    join.name = name;
    const sim::TaskId j = g.add(join);
    for (sim::TaskId f : flows) g.add_dependency(f, j);
    if (flows.empty())
      for (sim::TaskId d : before) g.add_dependency(d, j);
    before = {j};
  }
  if (ch.plan.phases.empty()) {
    sim::TaskSpec join;
    join.category = category;
    const sim::TaskId j = g.add(join);
    for (sim::TaskId d : before) g.add_dependency(d, j);
    return j;
  }
  return before.front();
}

}  // namespace

sim::TaskId append_collective(sim::TaskGraph& g, const topo::Cluster& c, const std::vector<sim::ResourceId>& link_res,
                              const CommTuning& t, const Collective& col, const std::vector<sim::TaskId>& deps,
                              uint16_t category, sim::TrackId track, const std::vector<sim::ResourceId>* gpu_res) {
  if (link_res.size() != c.num_links())
    throw std::invalid_argument("link_resources must be Cluster::bind's map (one resource per link)");
  if (gpu_res != nullptr && gpu_res->size() < static_cast<size_t>(c.num_gpus()))
    throw std::invalid_argument("gpu_compute_resources must hold one resource per GPU of the cluster");
  return append_choice(g, c, link_res, t, col, choose(c, t, col), deps, category, track, gpu_res);
}

sim::TaskId append_collective(sim::TaskGraph& g, const topo::Cluster& c, const std::vector<sim::ResourceId>& link_res,
                              const CommTuning& t, const Collective& col, const std::vector<sim::TaskId>& deps,
                              uint16_t category, sim::TrackId track, CollectiveCache& cache) {
  const auto key = std::make_tuple(static_cast<int>(col.op), static_cast<int>(col.algorithm), col.peer, col.dispatch,
                                   col.bytes, col.ranks);
  auto it = cache.chains.find(key);
  if (it == cache.chains.end()) {
    const size_t first = g.size();
    const sim::TaskId last = append_collective(g, c, link_res, t, col, deps, category, track, nullptr);
    // Cache only plain chains (each task after the previous one), which the merged phases are.
    std::vector<sim::TaskSpec> chain;
    bool plain = last == g.size() - 1;
    for (size_t id = first; plain && id < g.size(); ++id) {
      chain.push_back(g.task(static_cast<sim::TaskId>(id)));
      if (id > first) {
        const auto next = g.successors(static_cast<sim::TaskId>(id - 1));
        plain = next.size() == 1 && next[0] == id;
      }
    }
    if (plain && !chain.empty()) cache.chains.emplace(key, std::move(chain));
    return last;
  }
  sim::TaskId prev = sim::kNoTask;
  for (sim::TaskSpec spec : it->second) {
    spec.category = category;
    spec.track = track;
    const sim::TaskId id = g.add(spec);
    if (prev == sim::kNoTask) {
      for (sim::TaskId d : deps)
        if (d != sim::kNoTask) g.add_dependency(d, id);
    } else {
      g.add_dependency(prev, id);
    }
    prev = id;
  }
  return prev;
}

double estimate_seconds(const topo::Cluster& c, const CommTuning& t, const Collective& col) {
  return choose(c, t, col).estimate_s;
}

double estimate_concurrent_seconds(const topo::Cluster& c, const CommTuning& t, const std::vector<Collective>& cols) {
  if (cols.size() == 1) return estimate_seconds(c, t, cols.front());
  std::vector<Choice> choices;
  size_t phases = 0;
  for (const Collective& col : cols) {
    choices.push_back(choose(c, t, col));
    phases = std::max(phases, choices.back().plan.phases.size());
  }
  // Each collective runs its plan as chosen alone; phase k of every plan at once (same shapes
  // move in lockstep), its flows summed on the links they share.
  std::vector<double> load(c.num_links(), 0.0);
  std::vector<topo::LinkId> touched;
  double total = 0;
  for (const Choice& ch : choices) total = std::max(total, call_latency(t, ch.protocol, ch.plan));
  for (size_t k = 0; k < phases; ++k) {
    double time = 0, latency = 0;
    for (const Choice& ch : choices) {
      if (k >= ch.plan.phases.size()) continue;
      const Phase& ph = ch.plan.phases[k];
      time = std::max(time, add_phase_load(c, t, ch.protocol, ch.plan, ph, load, touched));
      latency = std::max(latency, max_route_latency(ph) + phase_latency(ch.protocol, ph));
    }
    time = std::max(time, drain_load(c, load, touched));
    total += time + latency;
  }
  return total;
}

CollectiveTiming time_collective(const topo::Cluster& c, const CommTuning& t, const Collective& col) {
  const Choice ch = choose(c, t, col);
  sim::Engine engine;
  const auto res = c.bind(engine);
  sim::TaskGraph g;
  append_choice(g, c, res, t, col, ch, {}, 0, sim::kNoTrack, nullptr);
  const sim::ExecutionResult r = sim::execute(engine, g);
  CollectiveTiming out;
  out.seconds = r.makespan.seconds();
  out.algbw_Bps = out.seconds > 0 ? col.bytes / out.seconds : 0;
  out.busbw_Bps = out.algbw_Bps * bus_factor(col.op, static_cast<int>(col.ranks.size()));
  out.algorithm = ch.plan.algorithm;
  out.protocol = ch.protocol.name;
  out.estimate_s = ch.estimate_s;
  return out;
}

}  // namespace stacksim::coll
