// Cluster graph and routing.
//
// Routing has three cases, all deterministic functions of (source, destination, ecmp_key):
//  - inside one node: shortest path by BFS over the node's own devices (a few dozen); among the
//    next hops on a shortest path the widest links win (NVLink over PCIe), ECMP spreads over
//    equally wide ones;
//  - between nodes: source -> its gateway NIC (GPU i -> rail NIC) inside the source node (through
//    its CPU socket's host memory when the cluster has no GPUDirect RDMA), then
//    up*/down* through the switch tiers (Schroeder et al. 1991, "Autonet", the rule InfiniBand
//    subnet managers use on fat trees): climb until a switch whose subtree holds the destination
//    NIC's leaf, preferring up-links to such switches, then descend; then the destination node's
//    NIC -> destination. Which switch is "above" the destination is a precomputed bitset of the
//    leaves below every switch, so a route costs O(hops x ports) and no search;
//    a dragonfly's groups (one switch each) route directly instead (route_in_dragonfly);
//  - anything else (devices outside nodes, irregular graphs, a failed up/down walk): BFS over the
//    whole graph, distances cached per destination.
// ECMP: among equal candidates the choice is hash(ecmp_key mod kEcmpWays, hop) (splitmix64), so
// the same key always takes the same path and different keys spread over the spines. With
// destination routing (D-mod-K, InfiniBand subnet managers' fat-tree routing) the fabric's up-links
// are chosen by the destination NIC's port number instead: the i-th choice among n up-links is
// (port / product of the earlier choices' n) mod n, ports numbered leaf by leaf, so the ports of
// one leaf leave through distinct up-links. OpenSM's fat-tree routing engine "optimizes routing of
// fat-trees for congestion-free 'shift' communication pattern" (doc/current-routing.txt); a ring
// across nodes is such a pattern. Routes are cached per (source, destination, key mod kEcmpWays).
#include "topologies/cluster.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace stacksim::topo {

const char* device_kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::Gpu:
      return "gpu";
    case DeviceKind::Cpu:
      return "cpu";
    case DeviceKind::PcieSwitch:
      return "pcie_switch";
    case DeviceKind::NvSwitch:
      return "nvswitch";
    case DeviceKind::Nic:
      return "nic";
    case DeviceKind::NetworkSwitch:
      return "switch";
    case DeviceKind::Storage:
      return "storage";
  }
  return "device";
}

const char* link_kind_name(LinkKind k) {
  switch (k) {
    case LinkKind::NvLink:
      return "nvlink";
    case LinkKind::Pcie:
      return "pcie";
    case LinkKind::Network:
      return "network";
    case LinkKind::CpuInterconnect:
      return "cpu_interconnect";
    case LinkKind::StorageLink:
      return "storage";
  }
  return "link";
}

namespace {

constexpr uint64_t kEcmpWays = uint64_t{1} << 16;  // keys equal modulo this share a route
constexpr DeviceId kNone = ~DeviceId{0};
constexpr size_t kMaxCachedRoutes = size_t{1} << 20;  // bounds memory; routes are recomputable
constexpr size_t kMaxCachedBfs = 256;                 // whole-graph distance vectors kept

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

size_t ecmp_pick(uint64_t key, size_t hop, size_t ways) { return mix(mix(key) + hop) % ways; }

struct RouteKey {
  DeviceId src, dst;
  uint64_t key;
  int slot;
  bool operator==(const RouteKey& o) const { return src == o.src && dst == o.dst && key == o.key && slot == o.slot; }
};
struct RouteKeyHash {
  size_t operator()(const RouteKey& k) const {
    return mix((uint64_t{k.src} << 32 | k.dst) ^ mix(k.key ^ (uint64_t(k.slot) << 48)));
  }
};

}  // namespace

// Adjacency, node membership, gateways and the fabric's leaf bitsets, built once per graph
// (the graph is frozen once routing starts; any add_* drops the cache). Thread-safe.
struct Cluster::RouteCache {
  std::atomic<bool> used{false};
  std::once_flag built;
  std::vector<uint32_t> out_begin, out_list, in_begin, in_list;  // CSR by device, links in id order
  std::vector<std::vector<DeviceId>> node_devices;               // by node, ascending id
  std::vector<uint32_t> local_pos;                               // position in node_devices[node]
  std::vector<DeviceId> gateway;                                 // kNone if none; a NIC is its own
  std::vector<std::vector<DeviceId>> gateways;                   // all of a device's NICs (size > 1 only)
  std::vector<DeviceId> staging;                                 // kNone: GPUDirect RDMA (or not a GPU)
  std::vector<int32_t> leaf;                                     // dense leaf index or -1
  std::vector<int64_t> port;                                     // NICs: port number, leaf by leaf
  std::vector<int32_t> reach_row;                                // network switches: row in reach
  size_t words = 0;                                              // 64-bit words per reach row
  std::vector<uint64_t> reach;                                   // leaves below each switch
  int max_tier = 0;
  std::map<std::string, DeviceId> by_name;
  // Dragonfly: each NIC's group switch (kNone elsewhere); groups > 0 marks a dragonfly.
  std::vector<DeviceId> group_switch_of;
  int64_t groups = 0;

  std::mutex mutex;  // guards the two caches below
  std::unordered_map<RouteKey, Route, RouteKeyHash> routes;
  std::map<DeviceId, std::vector<int32_t>> dist_to;
};

Cluster::Cluster(const Cluster& other) { copy_from(other); }

Cluster& Cluster::operator=(const Cluster& other) {
  if (this != &other) copy_from(other);
  return *this;
}

void Cluster::copy_from(const Cluster& other) {
  g_ = Graph();
  for (DeviceId d = 0; d < other.num_devices(); ++d) boost::add_vertex(other.device(d), g_);
  edges_.clear();
  edges_.reserve(other.edges_.size());
  for (LinkId l = 0; l < other.edges_.size(); ++l)
    edges_.push_back(boost::add_edge(other.link_source(l), other.link_target(l), other.link(l), g_).first);
  gpus_ = other.gpus_;
  num_nodes_ = other.num_nodes_;
  gpus_per_node_ = other.gpus_per_node_;
  gateway_ = other.gateway_;
  staging_ = other.staging_;
  destination_routing_ = other.destination_routing_;
  cache_ = other.cache_;  // same ids, same routes; a later mutation gives this cluster its own
}

DeviceId Cluster::add_device(Device d) {
  const bool gpu = d.kind == DeviceKind::Gpu;
  const DeviceId id = static_cast<DeviceId>(boost::add_vertex(d, g_));
  if (gpu) gpus_.push_back(id);
  invalidate();
  return id;
}

LinkId Cluster::add_link(DeviceId from, DeviceId to, Link l) {
  if (from >= num_devices() || to >= num_devices()) throw std::out_of_range("add_link: unknown device");
  if (from == to) throw std::invalid_argument("link " + device(from).name + " -> itself");
  if (!(l.bandwidth_Bps > 0))
    throw std::invalid_argument("link " + device(from).name + " -> " + device(to).name +
                                ": bandwidth must be positive");
  if (!(l.latency_s >= 0))
    throw std::invalid_argument("link " + device(from).name + " -> " + device(to).name +
                                ": latency must not be negative");
  const auto e = boost::add_edge(from, to, l, g_).first;
  edges_.push_back(e);
  invalidate();
  return static_cast<LinkId>(edges_.size() - 1);
}

void Cluster::add_duplex(DeviceId a, DeviceId b, Link l) {
  add_link(a, b, l);
  add_link(b, a, l);
}

size_t Cluster::num_devices() const { return boost::num_vertices(g_); }
size_t Cluster::num_links() const { return edges_.size(); }
const Device& Cluster::device(DeviceId id) const {
  if (id >= num_devices()) throw std::out_of_range("no device " + std::to_string(id));
  return g_[static_cast<Graph::vertex_descriptor>(id)];
}
const Link& Cluster::link(LinkId id) const { return g_[edges_.at(id)]; }
DeviceId Cluster::link_source(LinkId id) const { return static_cast<DeviceId>(boost::source(edges_.at(id), g_)); }
DeviceId Cluster::link_target(LinkId id) const { return static_cast<DeviceId>(boost::target(edges_.at(id), g_)); }

int Cluster::node_of_gpu(int rank) const { return device(gpu(rank)).node; }

namespace {

// CSR offsets from per-device counts.
void fill_csr(size_t n, const std::vector<DeviceId>& owner, std::vector<uint32_t>& begin, std::vector<uint32_t>& list) {
  begin.assign(n + 1, 0);
  for (DeviceId d : owner) ++begin[d + 1];
  for (size_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
  list.assign(owner.size(), 0);
  std::vector<uint32_t> at(begin.begin(), begin.end() - 1);
  for (uint32_t l = 0; l < owner.size(); ++l) list[at[owner[l]]++] = l;
}

}  // namespace

// A cache that was used, or that a copy of this cluster shares, belongs to another graph.
// Mutations are single-threaded (routing starts once the builder is done), so use_count is exact.
void Cluster::invalidate() {
  if (!cache_ || cache_.use_count() > 1 || cache_->used.load()) cache_ = std::make_shared<RouteCache>();
}

Cluster::RouteCache& Cluster::index() const {
  if (!cache_) throw std::logic_error("routing on an empty cluster");
  RouteCache& c = *cache_;
  std::call_once(c.built, [&] {
    c.used = true;
    const size_t n = num_devices();
    std::vector<DeviceId> src(edges_.size()), dst(edges_.size());
    for (LinkId l = 0; l < edges_.size(); ++l) {
      src[l] = link_source(l);
      dst[l] = link_target(l);
    }
    fill_csr(n, src, c.out_begin, c.out_list);
    fill_csr(n, dst, c.in_begin, c.in_list);
    c.local_pos.assign(n, 0);
    c.gateway.assign(n, kNone);
    c.gateways.assign(n, {});
    c.staging.assign(n, kNone);
    c.leaf.assign(n, -1);
    c.port.assign(n, -1);
    c.reach_row.assign(n, -1);
    for (DeviceId d = 0; d < n; ++d) {
      const Device& dev = device(d);
      c.by_name.emplace(dev.name, d);
      if (dev.node >= 0) {
        if (c.node_devices.size() <= static_cast<size_t>(dev.node)) c.node_devices.resize(dev.node + 1);
        c.local_pos[d] = static_cast<uint32_t>(c.node_devices[dev.node].size());
        c.node_devices[dev.node].push_back(d);
      }
      if (dev.kind == DeviceKind::Nic) c.gateway[d] = d;
    }
    for (const auto& [d, nics] : gateway_) {
      c.gateway[d] = nics.front();
      if (nics.size() > 1) c.gateways[d] = nics;
    }
    for (const auto& [d, cpu] : staging_) c.staging[d] = cpu;
    // Leaves: switches with a NIC port. Reach rows: leaves below each switch, by tier upwards.
    std::vector<DeviceId> switches;
    int leaves = 0;
    for (DeviceId d = 0; d < n; ++d) {
      if (device(d).kind != DeviceKind::NetworkSwitch) continue;
      switches.push_back(d);
      c.max_tier = std::max(c.max_tier, device(d).tier);
      for (uint32_t i = c.in_begin[d]; i < c.in_begin[d + 1]; ++i)
        if (device(link_source(c.in_list[i])).kind == DeviceKind::Nic) {
          c.leaf[d] = leaves++;
          break;
        }
    }
    int64_t ports = 0;
    for (DeviceId s : switches) {
      if (c.leaf[s] < 0) continue;
      for (uint32_t i = c.in_begin[s]; i < c.in_begin[s + 1]; ++i) {
        const DeviceId nic = link_source(c.in_list[i]);
        if (device(nic).kind == DeviceKind::Nic && c.port[nic] < 0) c.port[nic] = ports++;
      }
    }
    c.group_switch_of.assign(n, kNone);
    for (DeviceId s : switches) {
      if (device(s).group < 0) continue;
      c.groups = std::max<int64_t>(c.groups, device(s).group + 1);
      for (uint32_t i = c.in_begin[s]; i < c.in_begin[s + 1]; ++i)
        if (device(link_source(c.in_list[i])).kind == DeviceKind::Nic) c.group_switch_of[link_source(c.in_list[i])] = s;
    }
    std::stable_sort(switches.begin(), switches.end(),
                     [&](DeviceId a, DeviceId b) { return device(a).tier < device(b).tier; });
    c.words = (static_cast<size_t>(leaves) + 63) / 64;
    c.reach.assign(switches.size() * c.words, 0);
    for (size_t row = 0; row < switches.size(); ++row) {
      const DeviceId s = switches[row];
      c.reach_row[s] = static_cast<int32_t>(row);
      uint64_t* bits = c.reach.data() + row * c.words;  // not &reach[..]: reach is empty when no switch has NICs
      if (c.leaf[s] >= 0) bits[c.leaf[s] / 64] |= uint64_t{1} << (c.leaf[s] % 64);
      for (uint32_t i = c.out_begin[s]; i < c.out_begin[s + 1]; ++i) {
        const DeviceId t = link_target(c.out_list[i]);
        if (device(t).kind != DeviceKind::NetworkSwitch || device(t).tier >= device(s).tier) continue;
        const uint64_t* below = c.reach.data() + c.reach_row[t] * c.words;
        for (size_t w = 0; w < c.words; ++w) bits[w] |= below[w];
      }
    }
  });
  return c;
}

DeviceId Cluster::find(const std::string& name) const {
  if (num_devices() == 0) throw std::out_of_range("no device named " + name);
  const RouteCache& c = index();
  auto it = c.by_name.find(name);
  if (it == c.by_name.end()) throw std::out_of_range("no device named " + name);
  return it->second;
}

namespace {

[[noreturn]] void unreachable(const Cluster& c, DeviceId src, DeviceId dst) {
  throw std::runtime_error("no route from " + c.device(src).name + " to " + c.device(dst).name);
}

}  // namespace

// Walks from src to dst along `dist` (hops to dst, -1 = unreachable): widest next hop first,
// ECMP among equally wide ones. `dist_of` maps a device to its distance.
template <typename DistOf>
bool Cluster::walk(DeviceId src, DeviceId dst, uint64_t key, DistOf dist_of, std::vector<LinkId>& out) const {
  const RouteCache& c = *cache_;
  if (dist_of(src) < 0) return false;
  std::vector<LinkId> next;
  for (DeviceId cur = src; cur != dst;) {
    next.clear();
    double widest = 0;
    const int32_t here = dist_of(cur);
    for (uint32_t i = c.out_begin[cur]; i < c.out_begin[cur + 1]; ++i) {
      const LinkId l = c.out_list[i];
      if (dist_of(link_target(l)) != here - 1) continue;
      const double bw = link(l).bandwidth_Bps;
      if (bw > widest) {
        widest = bw;
        next.clear();
      }
      if (bw == widest) next.push_back(l);
    }
    const LinkId l = next[ecmp_pick(key, out.size(), next.size())];
    out.push_back(l);
    cur = link_target(l);
  }
  return true;
}

bool Cluster::route_in_node(DeviceId src, DeviceId dst, uint64_t key, std::vector<LinkId>& out) const {
  const RouteCache& c = *cache_;
  const int node = device(src).node;
  const auto& members = c.node_devices[node];
  std::vector<int32_t> dist(members.size(), -1);
  std::vector<DeviceId> queue{dst};
  dist[c.local_pos[dst]] = 0;
  for (size_t q = 0; q < queue.size(); ++q) {
    const DeviceId v = queue[q];
    for (uint32_t i = c.in_begin[v]; i < c.in_begin[v + 1]; ++i) {
      const DeviceId u = link_source(c.in_list[i]);
      if (device(u).node != node || dist[c.local_pos[u]] >= 0) continue;
      dist[c.local_pos[u]] = dist[c.local_pos[v]] + 1;
      queue.push_back(u);
    }
  }
  return walk(
      src, dst, key, [&](DeviceId d) { return device(d).node == node ? dist[c.local_pos[d]] : -1; }, out);
}

bool Cluster::route_by_bfs(DeviceId src, DeviceId dst, uint64_t key, std::vector<LinkId>& out) const {
  RouteCache& c = *cache_;
  std::vector<int32_t> dist;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.dist_to.find(dst);
    if (it != c.dist_to.end()) dist = it->second;
  }
  if (dist.empty()) {
    dist.assign(num_devices(), -1);
    std::deque<DeviceId> q{dst};
    dist[dst] = 0;
    while (!q.empty()) {
      const DeviceId v = q.front();
      q.pop_front();
      for (uint32_t i = c.in_begin[v]; i < c.in_begin[v + 1]; ++i) {
        const DeviceId u = link_source(c.in_list[i]);
        if (dist[u] < 0) {
          dist[u] = dist[v] + 1;
          q.push_back(u);
        }
      }
    }
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.dist_to.size() >= kMaxCachedBfs) c.dist_to.clear();
    c.dist_to.emplace(dst, dist);
  }
  return walk(
      src, dst, key, [&](DeviceId d) { return dist[d]; }, out);
}

// Dragonfly (builders.hpp): the source NIC's group switch, the merged global link to the
// destination's group if it is another, the destination NIC.
bool Cluster::route_in_dragonfly(DeviceId from, DeviceId to, std::vector<LinkId>& out) const {
  const RouteCache& c = *cache_;
  auto hop = [&](DeviceId a, DeviceId b) {
    for (uint32_t i = c.out_begin[a]; i < c.out_begin[a + 1]; ++i)
      if (link_target(c.out_list[i]) == b) {
        out.push_back(c.out_list[i]);
        return true;
      }
    return false;
  };
  const DeviceId gs = c.group_switch_of[from], gd = c.group_switch_of[to];
  return gs != kNone && gd != kNone && hop(from, gs) && (gs == gd || hop(gs, gd)) && hop(gd, to);
}

// Up*/down* from NIC `from` to NIC `to` through the switch tiers (see the file comment).
bool Cluster::route_in_fabric(DeviceId from, DeviceId to, uint64_t key, std::vector<LinkId>& out) const {
  const RouteCache& c = *cache_;
  if (c.groups > 0) return route_in_dragonfly(from, to, out);
  std::vector<int32_t> to_leaves;
  for (uint32_t i = c.out_begin[to]; i < c.out_begin[to + 1]; ++i) {
    const int32_t lf = c.leaf[link_target(c.out_list[i])];
    if (lf >= 0) to_leaves.push_back(lf);
  }
  if (to_leaves.empty()) return false;
  auto above = [&](DeviceId s) {
    if (c.reach_row[s] < 0) return false;
    const uint64_t* bits = &c.reach[c.reach_row[s] * c.words];
    for (int32_t lf : to_leaves)
      if (bits[lf / 64] >> (lf % 64) & 1) return true;
    return false;
  };
  auto is_switch = [&](DeviceId d) { return device(d).kind == DeviceKind::NetworkSwitch; };
  const size_t start = out.size();
  std::vector<LinkId> options, preferred;
  int64_t divisor = 1;  // destination routing: the product of the earlier choices' counts
  for (DeviceId cur = from; cur != to;) {
    if (out.size() - start > static_cast<size_t>(2 * c.max_tier + 2)) return false;
    options.clear();
    preferred.clear();
    const bool down = is_switch(cur) && above(cur);
    for (uint32_t i = c.out_begin[cur]; i < c.out_begin[cur + 1]; ++i) {
      const LinkId l = c.out_list[i];
      const DeviceId t = link_target(l);
      if (t == to && is_switch(cur)) {
        preferred.push_back(l);  // the destination's own leaf: go straight there
      } else if (down) {
        if (is_switch(t) && device(t).tier < device(cur).tier && above(t)) options.push_back(l);
      } else if (is_switch(t) && (!is_switch(cur) || device(t).tier > device(cur).tier)) {
        options.push_back(l);
      }
    }
    if (preferred.empty() && !down)
      for (LinkId l : options)
        if (above(link_target(l))) preferred.push_back(l);
    const std::vector<LinkId>& pick = preferred.empty() ? options : preferred;
    if (pick.empty()) return false;
    size_t choice = 0;
    if (pick.size() > 1 && destination_routing_ && c.port[to] >= 0) {
      choice = static_cast<size_t>((c.port[to] / divisor) % static_cast<int64_t>(pick.size()));
      divisor *= static_cast<int64_t>(pick.size());
    } else if (pick.size() > 1) {
      choice = ecmp_pick(key, out.size(), pick.size());
    }
    const LinkId l = pick[choice];
    out.push_back(l);
    cur = link_target(l);
  }
  return true;
}

// One end of an inter-node route inside its node, through `via` (host memory) unless it is kNone.
bool Cluster::route_to_gateway(DeviceId src, DeviceId dst, DeviceId via, uint64_t key, std::vector<LinkId>& out) const {
  if (src == dst) return true;
  if (via == kNone) return route_in_node(src, dst, key, out);
  return route_in_node(src, via, key, out) && route_in_node(via, dst, key, out);
}

int Cluster::gpu_gateway_count(int rank) const {
  const RouteCache& c = index();
  const DeviceId g = gpu(rank);
  return c.gateways[g].empty() ? 1 : static_cast<int>(c.gateways[g].size());
}

Route Cluster::route(DeviceId src, DeviceId dst, uint64_t ecmp_key, int nic_slot) const {
  if (src >= num_devices() || dst >= num_devices()) throw std::out_of_range("route: unknown device");
  Route r;
  if (src == dst) return r;
  RouteCache& c = index();
  const RouteKey rk{src, dst, ecmp_key % kEcmpWays, std::max(0, nic_slot)};
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.routes.find(rk);
    if (it != c.routes.end()) return it->second;
  }
  const uint64_t key = rk.key;
  const Device& s = device(src);
  const Device& d = device(dst);
  bool ok = false;
  if (s.node >= 0 && s.node == d.node) {
    ok = route_in_node(src, dst, key, r.links);
  } else if (s.node >= 0 && d.node >= 0 && c.gateway[src] != kNone && c.gateway[dst] != kNone) {
    auto gateway_of = [&](DeviceId d) {
      return c.gateways[d].empty() ? c.gateway[d] : c.gateways[d][rk.slot % c.gateways[d].size()];
    };
    const DeviceId gs = gateway_of(src), gd = gateway_of(dst);
    ok = route_to_gateway(src, gs, c.staging[src], key, r.links) && route_in_fabric(gs, gd, key, r.links) &&
         route_to_gateway(gd, dst, c.staging[dst], key, r.links);
  }
  if (!ok) {
    r.links.clear();
    if (!route_by_bfs(src, dst, key, r.links)) unreachable(*this, src, dst);
  }
  r.bottleneck_Bps = link(r.links.front()).bandwidth_Bps;
  for (LinkId l : r.links) {
    r.latency_s += link(l).latency_s;
    r.bottleneck_Bps = std::min(r.bottleneck_Bps, link(l).bandwidth_Bps);
  }
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.routes.size() >= kMaxCachedRoutes) c.routes.clear();
  c.routes.emplace(rk, r);
  return r;
}

void Cluster::check_connected() const {
  if (gpus_.empty()) throw std::runtime_error("the cluster has no GPU");
  for (int r = 1; r < num_gpus(); ++r) {
    route(gpu(0), gpu(r));
    route(gpu(r), gpu(0));
  }
}

std::vector<sim::ResourceId> Cluster::bind(sim::Engine& engine) const {
  std::vector<sim::ResourceId> res;
  res.reserve(edges_.size());
  for (LinkId l = 0; l < edges_.size(); ++l)
    res.push_back(engine.add_resource({device(link_source(l)).name + "->" + device(link_target(l)).name,
                                       link(l).bandwidth_Bps, sim::Sharing::Shared}));
  return res;
}

}  // namespace stacksim::topo
