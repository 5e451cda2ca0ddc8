#include "models/workload/host_copies.hpp"

#include <algorithm>
#include <stdexcept>

namespace stacksim::workload {

std::map<topo::LinkId, int> host_copy_links(const topo::Cluster& cluster, const std::vector<int>& ranks, bool to_host) {
  std::vector<char> wanted(cluster.num_nodes(), 0);
  for (int r : ranks) wanted[cluster.node_of_gpu(r)] = 1;
  std::vector<std::vector<topo::DeviceId>> sockets(cluster.num_nodes());
  for (topo::DeviceId d = 0; d < cluster.num_devices(); ++d) {
    const topo::Device& dev = cluster.device(d);
    if (dev.kind == topo::DeviceKind::Cpu && dev.node >= 0 && wanted[dev.node]) sockets[dev.node].push_back(d);
  }
  std::map<topo::LinkId, int> flows_on_link;
  for (int r : ranks) {
    const int node = cluster.node_of_gpu(r);
    if (sockets[node].empty()) throw std::invalid_argument("replay: a host copy needs a CPU socket on the GPU's node");
    topo::Route best;
    for (topo::DeviceId socket : sockets[node]) {
      topo::Route route = to_host ? cluster.route(cluster.gpu(r), socket) : cluster.route(socket, cluster.gpu(r));
      if (best.links.empty() || route.links.size() < best.links.size()) best = std::move(route);
    }
    for (topo::LinkId l : best.links) ++flows_on_link[l];
  }
  return flows_on_link;
}

double host_copy_seconds_per_byte(const topo::Cluster& cluster, const std::vector<int>& ranks, bool to_host) {
  double s = 0;
  for (const auto& [l, n] : host_copy_links(cluster, ranks, to_host))
    s = std::max(s, n / cluster.link(l).bandwidth_Bps);
  return s;
}

std::vector<int> stage_ranks_on_node(const StepProgram& p, const topo::Cluster& cluster, int stage, int node) {
  std::vector<int> out;
  const int per_stage = p.tp * p.cp * p.dp;
  for (int r = stage * per_stage; r < (stage + 1) * per_stage && r < cluster.num_gpus(); ++r)
    if (cluster.node_of_gpu(r) == node) out.push_back(r);
  return out;
}

}  // namespace stacksim::workload
