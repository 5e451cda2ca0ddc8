// Decomposition of collectives into phases of routed flows (collective.hpp, plan.hpp).
//
// Volumes (S = bytes per rank, n ranks, N nodes, g ranks per node), per NCCL's algorithms:
//  - ring all-reduce: every rank sends 2(n-1)/n S to its successor; RS/AG: (n-1)/n S; broadcast:
//    S along an open chain. Multi-node rings run g channels of V/g: channel c leaves node a from
//    local rank c-1 and enters node a+1 at local rank c, so each NIC carries one channel and each
//    intra-node hop j -> j+1 carries (g-1)/g V (the channels that pass through it).
//  - tree all-reduce: NCCL's two binary trees over the nodes (the second mirrors the first, so a
//    leaf of one is interior in the other), each carrying S/2 up (reduce) and S/2 down
//    (broadcast) along every edge, split over the g rails; inside a node a chain carries S each way.
//  - hierarchical all-reduce: ring RS inside each node, ring all-reduce of S/g per rail, ring AG.
//  - NVLS: S up each GPU's switch port and S down.
//  - all-to-all: S/n from every rank to every other (routes of distinct GPU pairs never coincide,
//    so inside a node every pair is a flow); across nodes each GPU sends the data for a whole
//    node to its rail peer there (g S/n), which forwards (N-1) S/n to each local GPU. MoE
//    dispatch with node deduplication (DeepEP) sends a remote node each token once instead of
//    once per expert there (Collective::dispatch).
// Steps (latency): NCCL's counts: ring all-reduce 2(n-1) with 2(N-1) crossing nodes, RS/AG n-1
// with N-1, tree 2(g-1) intra + 2 ceil(log2 N) inter, hierarchical (g-1) + 2(N-1) + (g-1).
#include "models/collectives/plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

namespace stacksim::coll::detail {
namespace {

// Deterministic ECMP key of a flow: different pairs spread over equal-cost paths.
uint64_t ecmp_key(int src, int dst, uint64_t salt) {
  uint64_t x = (static_cast<uint64_t>(src) << 32) ^ static_cast<uint64_t>(dst) ^ (salt * 0x9E3779B97F4A7C15ull);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

// Between nodes the flow is striped over the NICs both GPUs own (NCCL spreads its channels over a
// GPU's NICs), one sub-flow per NIC.
void add_flow(const topo::Cluster& c, Phase& p, int src, int dst, double bytes, uint64_t salt = 0) {
  const int k = c.same_node(src, dst) ? 1 : std::min(c.gpu_gateway_count(src), c.gpu_gateway_count(dst));
  for (int j = 0; j < k; ++j)
    p.flows.push_back({src, dst, bytes / k, c.gpu_route(src, dst, ecmp_key(src, dst, salt), j), j});
}

// Every pair of `ranks` has a direct GPU-to-GPU link (an NVLink mesh, not a switch or PCIe).
bool direct_mesh(const topo::Cluster& c, const std::vector<int>& ranks) {
  for (size_t i = 0; i < ranks.size(); ++i)
    for (size_t j = 0; j < ranks.size(); ++j)
      if (i != j && c.gpu_route(ranks[i], ranks[j]).links.size() != 1) return false;
  return true;
}

// A ring (closed) or chain (open) over `ranks` carrying `volume` bytes per hop, channelised over
// the rails when it spans several nodes with the same number of ranks each.
void add_ring(const topo::Cluster& c, const std::vector<int>& ranks, double volume, bool closed, Phase& p) {
  const int n = static_cast<int>(ranks.size());
  if (n < 2) return;
  const auto nodes = ranks_by_node(c, ranks);
  const size_t g = nodes.front().size();
  if (nodes.size() == 1 && closed && n > 2 && direct_mesh(c, ranks)) {
    // GPUs joined pairwise (NVLink or Infinity Fabric meshes, no switch): NCCL/RCCL build several
    // rings over the mesh, each on links of its own, both directions. A complete graph on n GPUs
    // splits into edge-disjoint Hamiltonian cycles: (n-1)/2 of them for odd n, (n-2)/2 plus a
    // perfect matching for even n (Walecki; K_2m minus a 1-factor). Run both ways, that is
    // n-1 (odd) or n-2 (even) rings, every directed link but the matching's carrying one ring's
    // share: flows i -> i + k for every k but n/2 (the matching), volume / rings each. A 4-GPU
    // mesh: 2 rings (k = 1, 3); an 8-GPU MI300X mesh: 6 rings over 6 of each GPU's 7 links.
    const int rings = n % 2 ? n - 1 : n - 2;
    for (int k = 1; k < n; ++k) {
      if (n % 2 == 0 && k == n / 2) continue;
      for (int i = 0; i < n; ++i) add_flow(c, p, ranks[i], ranks[(i + k) % n], volume / rings);
    }
    return;
  }
  if (nodes.size() == 1 || g == 1 || !uniform_nodes(nodes)) {
    for (int i = 0; i + (closed ? 0 : 1) < n; ++i) add_flow(c, p, ranks[i], ranks[(i + 1) % n], volume);
    return;
  }
  const size_t N = nodes.size();
  for (size_t a = 0; a < N; ++a) {
    const auto& nd = nodes[a];
    for (size_t j = 0; j < g; ++j) add_flow(c, p, nd[j], nd[(j + 1) % g], volume * double(g - 1) / g);
    if (!closed && a + 1 == N) break;
    const auto& next = nodes[(a + 1) % N];
    for (size_t ch = 0; ch < g; ++ch) add_flow(c, p, nd[(ch + g - 1) % g], next[ch], volume / g, ch);
  }
}

// Inter-node flows take the least loaded of kPathChoices equal-cost paths, given the flows of
// the phase placed before them (IB adaptive routing and NCCL's several QPs per connection spread
// a collective's traffic; a single hash per flow would let a collective collide with itself on
// fabric uplinks, which well-run clusters do not show). Deterministic: flows in plan order, ties
// to the first candidate.
constexpr int kPathChoices = 8;

void balance_paths(const topo::Cluster& c, Phase& p) {
  std::vector<double> load(c.num_links(), 0.0);
  auto place = [&](const Flow& f) {
    for (topo::LinkId l : f.route.links) load[l] += f.bytes;
  };
  for (const Flow& f : p.flows)
    if (c.same_node(f.src, f.dst)) place(f);
  for (Flow& f : p.flows) {
    if (c.same_node(f.src, f.dst)) continue;
    // Only switch-to-switch links differ between equal-cost paths: if the hashed path's are idle,
    // no other choice can do better.
    bool free = true;
    for (topo::LinkId l : f.route.links)
      free = free && (load[l] == 0 || c.device(c.link_source(l)).kind != topo::DeviceKind::NetworkSwitch ||
                      c.device(c.link_target(l)).kind != topo::DeviceKind::NetworkSwitch);
    if (free) {
      place(f);
      continue;
    }
    double best_cost = std::numeric_limits<double>::infinity();
    for (int k = 0; k < kPathChoices; ++k) {
      topo::Route r = c.gpu_route(f.src, f.dst, ecmp_key(f.src, f.dst, 1000 + k), f.nic_slot);
      double cost = 0;
      for (topo::LinkId l : r.links) cost = std::max(cost, (load[l] + f.bytes) / c.link(l).bandwidth_Bps);
      if (cost < best_cost) {
        best_cost = cost;
        f.route = std::move(r);
      }
    }
    place(f);
  }
}

int ceil_log2(int x) {
  int k = 0;
  while ((1 << k) < x) ++k;
  return k;
}

Plan plan_ring(const topo::Cluster& c, const Collective& col, int N) {
  Plan plan;
  const int n = static_cast<int>(col.ranks.size());
  const double S = col.bytes;
  Phase p;
  switch (col.op) {
    case CollectiveOp::AllReduce:
      add_ring(c, col.ranks, 2.0 * (n - 1) / n * S, true, p);
      p.intra_steps = 2 * (n - 1) - 2 * (N - 1);
      p.inter_steps = 2 * (N - 1);
      break;
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather:
      add_ring(c, col.ranks, double(n - 1) / n * S, true, p);
      p.intra_steps = (n - 1) - (N - 1);
      p.inter_steps = N - 1;
      break;
    case CollectiveOp::Broadcast:
      add_ring(c, col.ranks, S, false, p);
      p.intra_steps = (n - 1) - (N - 1);
      p.inter_steps = N - 1;
      break;
    default:
      throw std::invalid_argument(std::string("the ring algorithm does not run ") + op_name(col.op));
  }
  plan.phases.push_back(std::move(p));
  return plan;
}

Plan plan_tree(const topo::Cluster& c, const Collective& col, const std::vector<std::vector<int>>& nodes) {
  const int N = static_cast<int>(nodes.size());
  const size_t g = nodes.front().size();
  const double S = col.bytes;
  Phase p;
  for (const auto& nd : nodes)
    for (size_t j = 0; j + 1 < g; ++j) {
      add_flow(c, p, nd[j], nd[j + 1], S);
      add_flow(c, p, nd[j + 1], nd[j], S);
    }
  // NCCL's double binary tree (ncclGetBtree/ncclGetDtree): in tree 0 the parent of position q is
  // (q ^ b) | (b << 1) with b the lowest set bit of q (or q ^ b past the end), so subtrees are
  // contiguous ranges of nodes (mostly under one leaf switch); tree 1 mirrors the positions.
  for (int t = 0; t < 2; ++t)
    for (int q = 1; q < N; ++q) {
      const int bit = q & -q;
      int parent_q = (q ^ bit) | (bit << 1);
      if (parent_q >= N) parent_q = q ^ bit;
      const int v = t == 0 ? q : N - 1 - q, u = t == 0 ? parent_q : N - 1 - parent_q;
      for (size_t r = 0; r < g; ++r) {
        add_flow(c, p, nodes[v][r], nodes[u][r], S / 2 / g, t);
        add_flow(c, p, nodes[u][r], nodes[v][r], S / 2 / g, t);
      }
    }
  p.intra_steps = 2 * static_cast<int>(g - 1);
  p.inter_steps = 2 * ceil_log2(N);
  Plan plan;
  plan.phases.push_back(std::move(p));
  return plan;
}

Plan plan_hierarchical(const topo::Cluster& c, const Collective& col, const std::vector<std::vector<int>>& nodes) {
  const int N = static_cast<int>(nodes.size());
  const size_t g = nodes.front().size();
  const double S = col.bytes;
  Phase rs, inter;
  for (const auto& nd : nodes) add_ring(c, nd, double(g - 1) / g * S, true, rs);
  rs.intra_steps = static_cast<int>(g - 1);
  for (size_t slot = 0; slot < g; ++slot) {
    std::vector<int> rail;
    for (const auto& nd : nodes) rail.push_back(nd[slot]);
    add_ring(c, rail, 2.0 * (N - 1) / N * S / g, true, inter);
  }
  inter.inter_steps = 2 * (N - 1);
  Plan plan;
  if (!rs.flows.empty()) plan.phases.push_back(rs);
  plan.phases.push_back(std::move(inter));
  if (!rs.flows.empty()) plan.phases.push_back(std::move(rs));  // the all-gather mirrors the RS
  return plan;
}

Plan plan_nvls(const topo::Cluster& c, const Collective& col) {
  if (col.op != CollectiveOp::AllReduce || !nvls_capable(c, col.ranks))
    throw std::invalid_argument(
        "NVLS (in-switch reduction) needs an all-reduce inside one node whose NVSwitch reduces in-switch");
  const int n = static_cast<int>(col.ranks.size());
  Phase p;
  p.in_switch = true;
  for (int i = 0; i < n; ++i) {
    const int r = col.ranks[i], next = col.ranks[(i + 1) % n];
    const topo::Route out = c.gpu_route(r, next), in = c.gpu_route(next, r);
    topo::Route up, down;
    up.links = {out.links.front()};
    down.links = {in.links.back()};
    for (topo::Route* h : {&up, &down}) {
      h->latency_s = c.link(h->links.front()).latency_s;
      h->bottleneck_Bps = c.link(h->links.front()).bandwidth_Bps;
    }
    p.flows.push_back({r, r, col.bytes, up});
    p.flows.push_back({r, r, col.bytes, down});
  }
  Plan plan;
  plan.phases.push_back(std::move(p));
  return plan;
}

// NCCL's NVLSTree: inside each node every GPU sends S up its switch port and receives the reduced
// S back (NVLS); across nodes NCCL's double binary tree (as plan_tree) carries S/g per rail, each
// GPU the rail of its own slice. The two run pipelined, so one phase holds both.
Plan plan_nvls_tree(const topo::Cluster& c, const Collective& col, const std::vector<std::vector<int>>& nodes) {
  const int N = static_cast<int>(nodes.size());
  Phase p;
  p.in_switch = true;
  for (const auto& nd : nodes) {
    Collective local = col;
    local.ranks = nd;
    Plan in_node = plan_nvls(c, local);
    for (Flow& f : in_node.phases.front().flows) p.flows.push_back(std::move(f));
  }
  Plan tree = plan_tree(c, col, nodes);
  for (Flow& f : tree.phases.front().flows)
    if (!c.same_node(f.src, f.dst)) p.flows.push_back(std::move(f));
  p.inter_steps = 2 * ceil_log2(N);
  Plan plan;
  plan.phases.push_back(std::move(p));
  return plan;
}

Plan plan_all_to_all(const topo::Cluster& c, const Collective& col, const std::vector<std::vector<int>>& nodes) {
  const int n = static_cast<int>(col.ranks.size());
  const int N = static_cast<int>(nodes.size());
  const double piece = col.bytes / n;
  // Node-deduplicated dispatch (DeepEP): of a token's k copies, k/N would go to each remote node;
  // it goes to the nodes it reaches once each (moe_nodes_per_token of N), the bytes per copy scaled
  // by nodes reached / k.
  const int k = col.dispatch.top_k;
  const double remote = k > 0 && N > 1 ? moe_nodes_per_token(col.dispatch, N) / k : 1.0;
  Phase p;
  p.intra_steps = N == 1 ? 1 : 0;
  p.inter_steps = N == 1 ? 0 : 1;
  if (N == 1 || !uniform_nodes(nodes)) {
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (i != j)
          add_flow(c, p, col.ranks[i], col.ranks[j], c.same_node(col.ranks[i], col.ranks[j]) ? piece : piece * remote);
  } else {
    const size_t g = nodes.front().size();
    for (int a = 0; a < N; ++a)
      for (size_t i = 0; i < g; ++i) {
        // Local pairs: the direct piece plus the forwarding of what arrived from N-1 nodes.
        for (size_t j = 0; j < g; ++j)
          if (i != j) add_flow(c, p, nodes[a][i], nodes[a][j], piece * N);
        for (int b = 0; b < N; ++b)
          if (b != a) add_flow(c, p, nodes[a][i], nodes[b][i], piece * double(g) * remote);
      }
  }
  Plan plan;
  plan.phases.push_back(std::move(p));
  return plan;
}

}  // namespace

std::vector<std::vector<int>> ranks_by_node(const topo::Cluster& c, const std::vector<int>& ranks) {
  std::map<int, size_t> index;
  std::vector<std::vector<int>> nodes;
  for (int r : ranks) {
    const auto [it, inserted] = index.emplace(c.node_of_gpu(r), nodes.size());
    if (inserted) nodes.emplace_back();
    nodes[it->second].push_back(r);
  }
  return nodes;
}

bool uniform_nodes(const std::vector<std::vector<int>>& nodes) {
  for (const auto& nd : nodes)
    if (nd.size() != nodes.front().size()) return false;
  return true;
}

bool nvls_capable(const topo::Cluster& c, const std::vector<int>& ranks) {
  if (ranks.size() < 2) return false;
  for (int r : ranks)
    if (!c.same_node(r, ranks.front())) return false;
  const topo::Route r = c.gpu_route(ranks[0], ranks[1]);
  if (r.links.size() != 2) return false;
  const topo::Device& sw = c.device(c.link_target(r.links[0]));
  return sw.kind == topo::DeviceKind::NvSwitch && sw.in_switch_reduction;
}

bool nvls_tree_capable(const topo::Cluster& c, const std::vector<std::vector<int>>& nodes) {
  if (nodes.size() < 2 || !uniform_nodes(nodes)) return false;
  for (const auto& nd : nodes)
    if (!nvls_capable(c, nd)) return false;
  return true;
}

Plan make_plan(const topo::Cluster& c, const Collective& col, Algorithm algorithm) {
  const auto nodes = ranks_by_node(c, col.ranks);
  const int N = static_cast<int>(nodes.size());
  const int n = static_cast<int>(col.ranks.size());
  Plan plan;
  switch (col.op) {
    case CollectiveOp::SendRecv: {
      const int src = col.ranks.front(), dst = col.peer >= 0 ? col.peer : col.ranks.back();
      Phase p;
      add_flow(c, p, src, dst, col.bytes);
      (c.same_node(src, dst) ? p.intra_steps : p.inter_steps) = 1;
      plan.phases.push_back(std::move(p));
      plan.algorithm = Algorithm::Ring;
      break;
    }
    case CollectiveOp::AllToAll:
      plan = plan_all_to_all(c, col, nodes);
      plan.algorithm = Algorithm::Ring;
      break;
    case CollectiveOp::AllReduce:
      if (algorithm == Algorithm::InSwitch) {
        plan = plan_nvls(c, col);
      } else if (algorithm == Algorithm::InSwitchTree) {
        if (!nvls_tree_capable(c, nodes))
          throw std::invalid_argument(
              "the nvls_tree all-reduce needs 2 or more nodes with the same number of ranks, "
              "each node's NVSwitch reducing in-switch");
        plan = plan_nvls_tree(c, col, nodes);
      } else if (algorithm == Algorithm::Tree || algorithm == Algorithm::Hierarchical) {
        if (N < 2 || !uniform_nodes(nodes))
          throw std::invalid_argument(std::string("the ") + algorithm_name(algorithm) +
                                      " all-reduce needs ranks on 2 or more nodes, the same number on each");
        plan = algorithm == Algorithm::Tree ? plan_tree(c, col, nodes) : plan_hierarchical(c, col, nodes);
      } else {
        plan = plan_ring(c, col, N);
      }
      plan.algorithm = algorithm == Algorithm::Auto ? Algorithm::Ring : algorithm;
      break;
    default:
      if (algorithm != Algorithm::Auto && algorithm != Algorithm::Ring)
        throw std::invalid_argument(std::string(op_name(col.op)) + " runs only as a ring, not " +
                                    algorithm_name(algorithm));
      plan = plan_ring(c, col, N);
      plan.algorithm = Algorithm::Ring;
  }
  plan.bus_bytes = col.op == CollectiveOp::SendRecv ? col.bytes : bus_factor(col.op, n) * col.bytes;
  if (N > 1)
    for (Phase& p : plan.phases) balance_paths(c, p);
  // NCCL splits each rank's buffer over the peers (ring steps, NVLS's per-rank reduction
  // region) and pipelines that share in chunks per channel: the share sets the ramp.
  const bool shared = col.op == CollectiveOp::AllReduce || col.op == CollectiveOp::ReduceScatter ||
                      col.op == CollectiveOp::AllGather || col.op == CollectiveOp::AllToAll;
  plan.ramp_bytes = shared ? col.bytes / n : col.bytes;
  plan.multi_node = N > 1;
  return plan;
}

}  // namespace stacksim::coll::detail

namespace stacksim::coll {

double moe_nodes_per_token(const MoeDispatch& d, int nodes) {
  const int k = d.top_k, N = nodes, G = d.groups, M = d.groups_per_token;
  // k copies to k experts spread evenly over n nodes: 1 - (1 - 1/n)^k of them get at least one.
  const auto spread = [k](double n) { return n * (1.0 - std::pow(1.0 - 1.0 / n, k)); };
  if (k <= 0 || N <= 1) return std::min(1.0, static_cast<double>(N));
  if (G > 0 && M > 0 && M < G) {
    if (G % N == 0) {
      // Each node holds G/N whole groups; M of the G groups chosen: a node is reached unless all
      // M avoid its groups (C(G - G/N, M) / C(G, M)). At most k groups get an expert.
      double miss = 1.0;
      for (int i = 0; i < M; ++i) miss *= static_cast<double>(G - G / N - i) / (G - i);
      return std::min(N * (1.0 - miss), spread(N));
    }
    if (N % G == 0) return spread(static_cast<double>(M) * (N / G));  // each group spans N/G nodes
  }
  return spread(N);
}

}  // namespace stacksim::coll
