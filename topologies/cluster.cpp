#include "topologies/cluster.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

namespace stacksim::topo {

const char* device_kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::Gpu: return "gpu";
    case DeviceKind::Cpu: return "cpu";
    case DeviceKind::PcieSwitch: return "pcie_switch";
    case DeviceKind::NvSwitch: return "nvswitch";
    case DeviceKind::Nic: return "nic";
    case DeviceKind::NetworkSwitch: return "switch";
    case DeviceKind::Storage: return "storage";
  }
  return "device";
}

const char* link_kind_name(LinkKind k) {
  switch (k) {
    case LinkKind::NvLink: return "nvlink";
    case LinkKind::Pcie: return "pcie";
    case LinkKind::Network: return "network";
    case LinkKind::CpuInterconnect: return "cpu_interconnect";
    case LinkKind::StorageLink: return "storage";
  }
  return "link";
}

namespace {

uint64_t mix(uint64_t x) {  // splitmix64: a deterministic hash for ECMP choices
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

// Per-destination BFS distances (hop counts to dst over the directed links), computed lazily.
// Used for node-local routing and for small or irregular graphs. Thread-safe.
struct Cluster::RouteCache {
  std::mutex mutex;
  std::map<DeviceId, std::vector<int>> dist_to;  // full-graph BFS, small graphs only
  std::map<std::tuple<DeviceId, DeviceId, uint64_t>, Route> routes;  // memoised routes
  std::vector<std::vector<LinkId>> out_links;    // adjacency by link id, in insertion order
  std::vector<std::vector<LinkId>> in_links;
};

DeviceId Cluster::add_device(Device d) {
  const bool gpu = d.kind == DeviceKind::Gpu;
  const DeviceId id = static_cast<DeviceId>(boost::add_vertex(d, g_));
  if (gpu) gpus_.push_back(id);
  cache_.reset();
  return id;
}

LinkId Cluster::add_link(DeviceId from, DeviceId to, Link l) {
  if (from >= num_devices() || to >= num_devices()) throw std::out_of_range("add_link: unknown device");
  if (!(l.bandwidth_Bps > 0))
    throw std::invalid_argument("link " + device(from).name + " -> " + device(to).name +
                                ": bandwidth must be positive");
  if (l.latency_s < 0) throw std::invalid_argument("link latency must not be negative");
  const auto e = boost::add_edge(from, to, l, g_).first;
  edges_.push_back(e);
  cache_.reset();
  return static_cast<LinkId>(edges_.size() - 1);
}

void Cluster::add_duplex(DeviceId a, DeviceId b, Link l) {
  add_link(a, b, l);
  add_link(b, a, l);
}

size_t Cluster::num_devices() const { return boost::num_vertices(g_); }
size_t Cluster::num_links() const { return edges_.size(); }
const Device& Cluster::device(DeviceId id) const { return g_[static_cast<Graph::vertex_descriptor>(id)]; }
const Link& Cluster::link(LinkId id) const { return g_[edges_.at(id)]; }
DeviceId Cluster::link_source(LinkId id) const { return static_cast<DeviceId>(boost::source(edges_.at(id), g_)); }
DeviceId Cluster::link_target(LinkId id) const { return static_cast<DeviceId>(boost::target(edges_.at(id), g_)); }

DeviceId Cluster::find(const std::string& name) const {
  for (DeviceId i = 0; i < num_devices(); ++i)
    if (device(i).name == name) return i;
  throw std::out_of_range("no device named " + name);
}

int Cluster::node_of_gpu(int rank) const { return device(gpu(rank)).node; }

Route Cluster::route(DeviceId src, DeviceId dst, uint64_t ecmp_key) const {
  if (cache_) {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    auto it = cache_->routes.find({src, dst, ecmp_key});
    if (it != cache_->routes.end()) return it->second;
  }
  Route r = compute_route(src, dst, ecmp_key);
  std::lock_guard<std::mutex> lock(cache_->mutex);
  cache_->routes.emplace(std::make_tuple(src, dst, ecmp_key), r);
  return r;
}

Route Cluster::compute_route(DeviceId src, DeviceId dst, uint64_t ecmp_key) const {
  if (!cache_) {
    auto c = std::make_shared<RouteCache>();
    c->out_links.resize(num_devices());
    c->in_links.resize(num_devices());
    for (LinkId l = 0; l < edges_.size(); ++l) {
      c->out_links[link_source(l)].push_back(l);
      c->in_links[link_target(l)].push_back(l);
    }
    cache_ = c;
  }
  RouteCache& c = *cache_;
  Route r;
  if (src == dst) return r;
  const bool tiered = device(src).node >= 0 && device(dst).node >= 0 && device(src).node != device(dst).node &&
                      gateway_.count(src) && gateway_.count(dst);
  if (!tiered) {
    // Shortest path by BFS towards dst; ECMP among next hops on a shortest path. In a big
    // cluster, routes inside one node search that node's devices only (a few dozen).
    const int node = device(src).node;
    const bool node_local = node >= 0 && device(dst).node == node;
    std::vector<int> local_dist;
    const std::vector<int>* dist = nullptr;
    auto bfs = [&](std::vector<int>& d) {
      d.assign(num_devices(), -1);
      std::deque<DeviceId> q{dst};
      d[dst] = 0;
      while (!q.empty()) {
        const DeviceId v = q.front();
        q.pop_front();
        for (LinkId l : c.in_links[v]) {
          const DeviceId u = link_source(l);
          if (d[u] < 0 && (!node_local || device(u).node == node)) { d[u] = d[v] + 1; q.push_back(u); }
        }
      }
    };
    if (node_local) {
      bfs(local_dist);
      dist = &local_dist;
    } else {
      std::lock_guard<std::mutex> lock(c.mutex);
      auto it = c.dist_to.find(dst);
      if (it == c.dist_to.end()) {
        std::vector<int> d;
        bfs(d);
        it = c.dist_to.emplace(dst, std::move(d)).first;
      }
      dist = &it->second;
    }
    if ((*dist)[src] < 0)
      throw std::runtime_error("no route from " + device(src).name + " to " + device(dst).name);
    DeviceId cur = src;
    for (int hop = 0; cur != dst; ++hop) {
      // Among next hops on a shortest path, the widest links win (NVLink over PCIe); ECMP
      // spreads over the equally wide ones.
      std::vector<LinkId> next;
      double widest = 0;
      for (LinkId l : c.out_links[cur])
        if ((*dist)[link_target(l)] == (*dist)[cur] - 1) widest = std::max(widest, link(l).bandwidth_Bps);
      for (LinkId l : c.out_links[cur])
        if ((*dist)[link_target(l)] == (*dist)[cur] - 1 && link(l).bandwidth_Bps == widest) next.push_back(l);
      const LinkId l = next[mix(ecmp_key * 131 + hop) % next.size()];
      r.links.push_back(l);
      cur = link_target(l);
    }
  } else {
    // Up*/down* routing through the fabric's switch tiers: climb until a switch from which dst is
    // reachable going down, then descend. The switches above dst are found by climbing from dst.
    auto up_neighbours = [&](DeviceId v, bool outgoing) {
      std::vector<LinkId> ls;
      const auto& links = outgoing ? c.out_links[v] : c.in_links[v];
      for (LinkId l : links) {
        const DeviceId w = outgoing ? link_target(l) : link_source(l);
        const Device& dw = device(w);
        const Device& dv = device(v);
        const bool w_up = dw.kind == DeviceKind::NetworkSwitch &&
                          (dv.kind != DeviceKind::NetworkSwitch || dw.tier > dv.tier);
        if (w_up) ls.push_back(l);
      }
      return ls;
    };
    // Exit device of the source node: its NIC (GPU rails choose the NIC of the same index).
    auto gateway = [&](DeviceId v) -> DeviceId {
      auto it = gateway_.find(v);
      if (it != gateway_.end()) return it->second;
      throw std::runtime_error("device " + device(v).name + " has no network interface");
    };
    const DeviceId nic_s = gateway(src), nic_d = gateway(dst);
    auto local = [&](DeviceId a, DeviceId b, uint64_t key) {
      Route x = route(a, b, key);  // same node: node-local BFS branch
      r.links.insert(r.links.end(), x.links.begin(), x.links.end());
    };
    if (src != nic_s) local(src, nic_s, ecmp_key);
    // Ancestors of dst's NIC.
    std::map<DeviceId, bool> above;
    std::vector<DeviceId> frontier{nic_d};
    while (!frontier.empty()) {
      std::vector<DeviceId> next;
      for (DeviceId v : frontier)
        for (LinkId l : up_neighbours(v, false)) {
          const DeviceId w = link_source(l);
          if (!above.count(w)) { above[w] = true; next.push_back(w); }
        }
      frontier.swap(next);
    }
    DeviceId cur = nic_s;
    for (int hop = 0; cur != nic_d; ++hop) {
      std::vector<LinkId> options;
      if (above.count(cur)) {
        for (LinkId l : c.out_links[cur]) {
          const DeviceId w = link_target(l);
          if (w == nic_d || (above.count(w) && device(w).tier < device(cur).tier)) options.push_back(l);
        }
      } else {
        options = up_neighbours(cur, true);
      }
      if (options.empty() || hop > 16)
        throw std::runtime_error("no route from " + device(src).name + " to " + device(dst).name);
      const LinkId l = options[mix(ecmp_key * 131 + hop) % options.size()];
      r.links.push_back(l);
      cur = link_target(l);
    }
    if (dst != nic_d) local(nic_d, dst, ecmp_key);
  }
  r.bottleneck_Bps = r.links.empty() ? 0 : link(r.links[0]).bandwidth_Bps;
  for (LinkId l : r.links) {
    r.latency_s += link(l).latency_s;
    r.bottleneck_Bps = std::min(r.bottleneck_Bps, link(l).bandwidth_Bps);
  }
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
