#include "models/collectives/collective.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "sim/engine.hpp"

namespace stacksim::coll {

const char* op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce: return "all_reduce";
    case CollectiveOp::ReduceScatter: return "reduce_scatter";
    case CollectiveOp::AllGather: return "all_gather";
    case CollectiveOp::AllToAll: return "all_to_all";
    case CollectiveOp::Broadcast: return "broadcast";
    case CollectiveOp::SendRecv: return "send_recv";
  }
  return "collective";
}

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::Auto: return "auto";
    case Algorithm::Ring: return "ring";
    case Algorithm::Tree: return "tree";
    case Algorithm::Hierarchical: return "hierarchical";
    case Algorithm::InSwitch: return "nvls";
  }
  return "auto";
}

double bus_factor(CollectiveOp op, int n) {
  switch (op) {
    case CollectiveOp::AllReduce: return 2.0 * (n - 1) / n;
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather:
    case CollectiveOp::AllToAll: return double(n - 1) / n;
    default: return 1.0;
  }
}

namespace {

// One flow: bytes from one rank to another, either along the routed path or on explicit links.
struct Flow {
  int src = 0, dst = 0;
  double bytes = 0;
  std::vector<topo::LinkId> links;  // explicit (NVLS half-paths); empty = route src -> dst
};

struct Phase {
  std::vector<Flow> flows;
  bool in_switch = false;  // NVLS efficiency applies
};

struct Plan {
  Algorithm algorithm = Algorithm::Ring;
  std::vector<Phase> phases;
  double bus_bytes = 0;  // per rank, for protocol caps
};

// Ranks grouped by node, in the group's order.
std::vector<std::vector<int>> by_node(const topo::Cluster& c, const std::vector<int>& ranks) {
  std::map<int, size_t> index;
  std::vector<std::vector<int>> nodes;
  for (int r : ranks) {
    const int node = c.node_of_gpu(r);
    auto it = index.find(node);
    if (it == index.end()) {
      index[node] = nodes.size();
      nodes.push_back({r});
    } else {
      nodes[it->second].push_back(r);
    }
  }
  return nodes;
}

// A ring carrying `volume` bytes per rank over `ranks`.
Phase ring_phase(const topo::Cluster& c, const std::vector<int>& ranks, double volume) {
  Phase p;
  const int n = static_cast<int>(ranks.size());
  if (n < 2 || volume <= 0) return p;
  const auto nodes = by_node(c, ranks);
  const size_t g = nodes.front().size();
  bool uniform = true;
  for (const auto& nd : nodes) uniform = uniform && nd.size() == g;
  if (nodes.size() == 1 || g == 1 || !uniform) {
    for (int i = 0; i < n; ++i) p.flows.push_back({ranks[i], ranks[(i + 1) % n], volume, {}});
    return p;
  }
  // Channelised multi-node ring: g channels, each carrying volume / g.
  const size_t N = nodes.size();
  for (size_t a = 0; a < N; ++a) {
    const auto& nd = nodes[a];
    if (g > 1)
      for (size_t j = 0; j < g; ++j)  // intra-node hop j -> j+1 is used by g-1 of the g channels
        p.flows.push_back({nd[j], nd[(j + 1) % g], volume * double(g - 1) / g, {}});
    const auto& next = nodes[(a + 1) % N];
    for (size_t ch = 0; ch < g; ++ch)
      p.flows.push_back({nd[(ch + g - 1) % g], next[ch], volume / g, {}});
  }
  return p;
}

Plan make_plan(const topo::Cluster& c, const CommTuning& t, const Collective& col, Algorithm algo) {
  Plan plan;
  plan.algorithm = algo;
  const int n = static_cast<int>(col.ranks.size());
  const double S = col.bytes;
  plan.bus_bytes = bus_factor(col.op, n) * S;
  switch (col.op) {
    case CollectiveOp::SendRecv: {
      const int dst = col.peer >= 0 ? col.peer : col.ranks.back();
      plan.phases.push_back({{{col.ranks.front(), dst, S, {}}}, false});
      plan.bus_bytes = S;
      return plan;
    }
    case CollectiveOp::AllToAll: {
      Phase p;
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          if (i != j) p.flows.push_back({col.ranks[i], col.ranks[j], S / n, {}});
      plan.phases.push_back(p);
      return plan;
    }
    case CollectiveOp::Broadcast:
      plan.phases.push_back(ring_phase(c, col.ranks, S));
      return plan;
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather:
      plan.phases.push_back(ring_phase(c, col.ranks, double(n - 1) / n * S));
      return plan;
    case CollectiveOp::AllReduce:
      break;
  }
  if (algo == Algorithm::InSwitch) {
    // Each GPU's port carries S up to the switch and S back down.
    Phase p;
    p.in_switch = true;
    for (int i = 0; i < n; ++i) {
      const topo::Route r = c.gpu_route(col.ranks[i], col.ranks[(i + 1) % n]);
      if (r.links.size() != 2) throw std::logic_error("NVLS needs GPU -> NVSwitch -> GPU routes");
      const topo::Route back = c.gpu_route(col.ranks[(i + 1) % n], col.ranks[i]);
      p.flows.push_back({col.ranks[i], col.ranks[i], S, {r.links[0]}});      // up: GPU i -> switch
      p.flows.push_back({col.ranks[i], col.ranks[i], S, {back.links[1]}});   // down: switch -> GPU i
    }
    plan.phases.push_back(p);
    return plan;
  }
  if (algo == Algorithm::Hierarchical) {
    const auto nodes = by_node(c, col.ranks);
    const size_t g = nodes.front().size();
    Phase rs, ag, inter;
    for (const auto& nd : nodes) {
      Phase x = ring_phase(c, nd, double(nd.size() - 1) / nd.size() * S);
      rs.flows.insert(rs.flows.end(), x.flows.begin(), x.flows.end());
    }
    for (size_t slot = 0; slot < g; ++slot) {
      std::vector<int> rail;
      for (const auto& nd : nodes)
        if (slot < nd.size()) rail.push_back(nd[slot]);
      const int N = static_cast<int>(rail.size());
      Phase x = ring_phase(c, rail, 2.0 * (N - 1) / N * S / g);
      inter.flows.insert(inter.flows.end(), x.flows.begin(), x.flows.end());
    }
    ag = rs;
    for (Phase* p : {&rs, &inter, &ag})
      if (!p->flows.empty()) plan.phases.push_back(*p);
    return plan;
  }
  plan.phases.push_back(ring_phase(c, col.ranks, 2.0 * (n - 1) / n * S));
  return plan;
}

bool single_node(const topo::Cluster& c, const std::vector<int>& ranks) {
  for (int r : ranks)
    if (c.node_of_gpu(r) != c.node_of_gpu(ranks.front())) return false;
  return true;
}

bool nvls_possible(const topo::Cluster& c, const CommTuning& t, const Collective& col) {
  if (col.op != CollectiveOp::AllReduce || t.nvls_efficiency <= 0 || !single_node(c, col.ranks)) return false;
  const topo::Route r = c.gpu_route(col.ranks[0], col.ranks[1]);
  return r.links.size() == 2 && c.device(c.link_target(r.links[0])).kind == topo::DeviceKind::NvSwitch &&
         c.device(c.link_target(r.links[0])).in_switch_reduction;
}

struct Realised {
  double efficiency;   // applied to each flow (volume inflation)
  double latency_s;
  double bound_per_bus_Bps;  // per-flow rate cap per bus byte ratio (0 = none)
  double estimate_s;
  std::string protocol;
};

// Efficiency of a flow: the network's where the route's bottleneck is a NIC/fabric link, else the
// protocol's (NVLink, PCIe), else NVLS.
double flow_efficiency(const topo::Cluster& c, const CommTuning& t, const Protocol& p, const Phase& ph,
                       const topo::Route& r) {
  if (ph.in_switch) return t.nvls_efficiency;
  double bw = std::numeric_limits<double>::infinity();
  topo::LinkKind kind = topo::LinkKind::NvLink;
  for (topo::LinkId l : r.links)
    if (c.link(l).bandwidth_Bps < bw) { bw = c.link(l).bandwidth_Bps; kind = c.link(l).kind; }
  return kind == topo::LinkKind::Network ? t.network_efficiency : p.efficiency;
}

topo::Route route_of(const topo::Cluster& c, const Flow& f, uint64_t key) {
  if (!f.links.empty()) {
    topo::Route r;
    r.links = f.links;
    r.bottleneck_Bps = std::numeric_limits<double>::infinity();
    for (topo::LinkId l : f.links) {
      r.latency_s += c.link(l).latency_s;
      r.bottleneck_Bps = std::min(r.bottleneck_Bps, c.link(l).bandwidth_Bps);
    }
    return r;
  }
  return c.gpu_route(f.src, f.dst, key);
}

// Predicted time of a plan under a protocol, ignoring contention (used to choose like NCCL's tuner).
double estimate(const topo::Cluster& c, const CommTuning& t, const Plan& plan, const Protocol& p,
                bool multi_node) {
  double total = p.latency_s + (multi_node ? t.network_latency_s : 0.0);
  for (const Phase& ph : plan.phases) {
    double worst = 0;
    for (size_t i = 0; i < ph.flows.size(); ++i) {
      const Flow& f = ph.flows[i];
      const topo::Route r = route_of(c, f, i);
      double rate = r.bottleneck_Bps * flow_efficiency(c, t, p, ph, r);
      if (p.bus_cap_Bps > 0 && plan.bus_bytes > 0) rate = std::min(rate, p.bus_cap_Bps * f.bytes / plan.bus_bytes);
      worst = std::max(worst, f.bytes / rate + r.latency_s);
    }
    total += worst;
  }
  return total;
}

struct Choice {
  Plan plan;
  Protocol protocol;
  bool multi_node = false;
};

Choice choose(const topo::Cluster& c, const CommTuning& t, const Collective& col) {
  if (col.ranks.size() < 2) throw std::invalid_argument("a collective needs at least 2 ranks");
  for (int r : col.ranks)
    if (r < 0 || r >= c.num_gpus())
      throw std::invalid_argument("collective names GPU " + std::to_string(r) + ", which does not exist");
  if (!(col.bytes >= 0)) throw std::invalid_argument("collective size must be >= 0");
  Choice best;
  best.multi_node = !single_node(c, col.ranks);
  std::vector<Algorithm> algos;
  if (col.algorithm == Algorithm::Auto) {
    algos = {Algorithm::Ring};
    if (nvls_possible(c, t, col)) algos.push_back(Algorithm::InSwitch);
  } else if (col.algorithm == Algorithm::InSwitch) {
    if (!nvls_possible(c, t, col))
      throw std::invalid_argument("NVLS needs an all-reduce inside one node whose NVSwitch reduces in-switch");
    algos = {Algorithm::InSwitch};
  } else if (col.algorithm == Algorithm::Tree) {
    algos = {Algorithm::Hierarchical};  // latency-optimised multi-node reduction: see header
  } else {
    algos = {col.algorithm};
  }
  double best_t = std::numeric_limits<double>::infinity();
  for (Algorithm a : algos) {
    Plan plan = make_plan(c, t, col, a);
    for (const Protocol& p : t.protocols) {
      if (a == Algorithm::InSwitch && p.bus_cap_Bps > 0) continue;  // NVLS runs the Simple protocol
      const double e = estimate(c, t, plan, p, best.multi_node);
      if (e < best_t) {
        best_t = e;
        best.plan = plan;
        best.protocol = p;
      }
    }
  }
  return best;
}

}  // namespace

// Each phase becomes ONE activity over the union of its flows' links: the work is the largest
// flow's (efficiency-inflated) volume W, and a link crossed by flows of volumes v_f gets weight
// sum(v_f / eff_f) / W. Alone on the links this reproduces every flow's time; shared with other
// traffic, the phase advances at the pace of its most loaded link, as a synchronous ring or
// all-to-all does (a step waits for its slowest hop). It also makes a collective one activity
// instead of one per rank (identical flows merged, STYLE.md 3.3 habit 2).
sim::TaskId append_collective(sim::TaskGraph& g, const topo::Cluster& c,
                              const std::vector<sim::ResourceId>& link_res, const CommTuning& t,
                              const Collective& col, const std::vector<sim::TaskId>& deps, uint16_t category,
                              sim::TrackId track, const std::vector<sim::ResourceId>*) {
  const Choice ch = choose(c, t, col);
  const uint32_t name = g.intern(std::string(op_name(col.op)) + " (" + algorithm_name(ch.plan.algorithm) + ", " +
                                 ch.protocol.name + ")");
  std::vector<sim::TaskId> before = deps;
  bool first_phase = true;
  sim::TaskId last = sim::kNoTask;
  for (const Phase& ph : ch.plan.phases) {
    std::map<topo::LinkId, double> load;  // inflated bytes per link
    double work = 0, latency = 0, bus_share = 0;
    for (size_t i = 0; i < ph.flows.size(); ++i) {
      const Flow& f = ph.flows[i];
      const topo::Route r = route_of(c, f, static_cast<uint64_t>(f.src) * 7919 + i);
      const double v = f.bytes / flow_efficiency(c, t, ch.protocol, ph, r);
      for (topo::LinkId l : r.links) load[l] += v;
      if (v > work) { work = v; bus_share = f.bytes; }
      latency = std::max(latency, r.latency_s);
    }
    sim::TaskSpec spec;
    spec.activity.work = work;
    if (work > 0)
      for (const auto& [l, bytes] : load) spec.activity.usages.push_back({link_res[l], bytes / work});
    if (ch.protocol.bus_cap_Bps > 0 && ch.plan.bus_bytes > 0 && bus_share > 0)
      spec.activity.bound = ch.protocol.bus_cap_Bps * work / ch.plan.bus_bytes;
    if (first_phase) latency += ch.protocol.latency_s + (ch.multi_node ? t.network_latency_s : 0.0);
    spec.activity.latency = sim::Time::from_seconds(latency);
    spec.category = category;
    spec.track = track;
    spec.name = name;
    last = g.add(spec);
    for (sim::TaskId d : before)
      if (d != sim::kNoTask) g.add_dependency(d, last);
    before = {last};
    first_phase = false;
  }
  if (last == sim::kNoTask) {
    last = g.add(sim::TaskSpec{});
    for (sim::TaskId d : deps)
      if (d != sim::kNoTask) g.add_dependency(d, last);
  }
  return last;
}

double estimate_seconds(const topo::Cluster& c, const CommTuning& t, const Collective& col) {
  const Choice ch = choose(c, t, col);
  return estimate(c, t, ch.plan, ch.protocol, ch.multi_node);
}

CollectiveTiming time_collective(const topo::Cluster& c, const CommTuning& t, const Collective& col) {
  sim::Engine engine;
  const auto res = c.bind(engine);
  sim::TaskGraph g;
  append_collective(g, c, res, t, col, {}, 0, sim::kNoTrack, nullptr);
  const sim::ExecutionResult r = sim::execute(engine, g);
  CollectiveTiming out;
  out.seconds = r.makespan.seconds();
  const int n = static_cast<int>(col.ranks.size());
  out.algbw_Bps = out.seconds > 0 ? col.bytes / out.seconds : 0;
  out.busbw_Bps = out.algbw_Bps * bus_factor(col.op, n);
  const Choice ch = choose(c, t, col);
  out.algorithm = ch.plan.algorithm;
  out.protocol = ch.protocol.name;
  return out;
}

}  // namespace stacksim::coll
