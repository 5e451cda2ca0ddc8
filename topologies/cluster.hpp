// The cluster: devices (GPUs, CPU sockets, PCIe switches, NVSwitches, NICs, network switches,
// storage) and directed links on a Boost.Graph. A full-duplex cable is two directed links, each
// its own engine resource (split-duplex, STYLE.md 3.3 habit 1). Switch crossbars are non-blocking:
// only their ports (the links) constrain traffic.
#pragma once
#include <boost/graph/adjacency_list.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/engine.hpp"

namespace stacksim::topo {

enum class DeviceKind { Gpu, Cpu, PcieSwitch, NvSwitch, Nic, NetworkSwitch, Storage };
const char* device_kind_name(DeviceKind k);

struct Device {
  DeviceKind kind = DeviceKind::Gpu;
  std::string name;                  // unique, e.g. "node3.gpu5", "leaf12", "spine0"
  int32_t node = -1;                 // server index, -1 for fabric switches and shared storage
  int32_t local_index = -1;          // index within its node among devices of its kind
  int32_t tier = 0;                  // network switches: 1 = leaf, 2 = spine, 3 = core
  bool in_switch_reduction = false;  // NVSwitch generations with NVLS / SHARP switches
  int32_t group = -1;                // dragonfly group switches: their group (-1 elsewhere)
};

enum class LinkKind { NvLink, Pcie, Network, CpuInterconnect, StorageLink };
const char* link_kind_name(LinkKind k);

struct Link {
  LinkKind kind = LinkKind::NvLink;
  double bandwidth_Bps = 0.0;  // one direction, bytes per second
  double latency_s = 0.0;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Device, Link>;
using DeviceId = uint32_t;
using LinkId = uint32_t;

struct Route {
  std::vector<LinkId> links;  // in order from source to destination
  double latency_s = 0.0;     // sum of link latencies
  double bottleneck_Bps = 0.0;
};

class Cluster {
 public:
  // Link ids index edge descriptors, which point into the graph's own edge storage (neither
  // Boost's copy nor its swap keeps them pointing into the right one): a copy rebuilds its graph
  // edge by edge, and a move is a copy.
  Cluster() = default;
  Cluster(const Cluster& other);
  Cluster& operator=(const Cluster& other);

  DeviceId add_device(Device d);
  LinkId add_link(DeviceId from, DeviceId to, Link l);  // one direction
  void add_duplex(DeviceId a, DeviceId b, Link l);      // a->b and b->a

  const Graph& graph() const { return g_; }
  size_t num_devices() const;
  size_t num_links() const;
  const Device& device(DeviceId id) const;
  const Link& link(LinkId id) const;
  DeviceId link_source(LinkId id) const;
  DeviceId link_target(LinkId id) const;
  DeviceId find(const std::string& name) const;  // std::out_of_range if absent

  // GPUs are numbered 0..num_gpus-1 in node-major order (rank r lives on node r / gpus_per_node).
  int num_gpus() const { return static_cast<int>(gpus_.size()); }
  int num_nodes() const { return num_nodes_; }
  int gpus_per_node() const { return gpus_per_node_; }
  DeviceId gpu(int rank) const { return gpus_.at(rank); }
  int node_of_gpu(int rank) const;
  bool same_node(int rank_a, int rank_b) const { return node_of_gpu(rank_a) == node_of_gpu(rank_b); }

  // Route between two devices: fewest hops; among equal-cost next hops (ECMP) the choice is a
  // deterministic hash of (ecmp_key, hop). Cached per (source, destination, key % ways).
  // Throws std::runtime_error if dst is unreachable.
  // Between nodes, `nic_slot` picks which of the end devices' gateway NICs the route uses (slot
  // modulo each end's count), so a caller can stripe traffic over a GPU's several NICs.
  Route route(DeviceId src, DeviceId dst, uint64_t ecmp_key = 0, int nic_slot = 0) const;
  Route gpu_route(int src_rank, int dst_rank, uint64_t ecmp_key = 0, int nic_slot = 0) const {
    return route(gpu(src_rank), gpu(dst_rank), ecmp_key, nic_slot);
  }
  // How many NICs a GPU leaves its node through (1 without a gateway, or one NIC per GPU).
  int gpu_gateway_count(int rank) const;

  // Throws std::runtime_error naming a device if some GPU cannot reach every other GPU.
  void check_connected() const;

  // Creates one engine resource per directed link (capacity = bandwidth) and returns the map
  // link id -> resource id.
  std::vector<sim::ResourceId> bind(sim::Engine& engine) const;

  // Set by builders.
  void set_shape(int num_nodes, int gpus_per_node) {
    num_nodes_ = num_nodes;
    gpus_per_node_ = gpus_per_node;
  }
  // The NIC through which a device of a node reaches other nodes (GPU i -> rail NIC); a GPU with
  // more than one NIC of its own gets them all (NCCL stripes its channels over them).
  void set_gateway(DeviceId device, DeviceId nic) { gateway_[device] = {nic}; }
  void set_gateways(DeviceId device, std::vector<DeviceId> nics) { gateway_[device] = std::move(nics); }
  // Without GPUDirect RDMA a GPU's traffic to other nodes is staged in host memory: it goes
  // GPU -> `cpu` (its socket) -> gateway NIC, crossing the PCIe switch uplink both ways.
  void set_staging(DeviceId gpu, DeviceId cpu) { staging_[gpu] = cpu; }
  // Fabric switches pick among equal up-links by the destination's port (D-mod-K, InfiniBand's
  // static fat-tree routing) instead of hashing the flow's ECMP key.
  void set_destination_routing(bool on) {
    destination_routing_ = on;
    invalidate();
  }
  bool destination_routing() const { return destination_routing_; }

 private:
  Graph g_;
  std::vector<Graph::edge_descriptor> edges_;
  std::vector<DeviceId> gpus_;
  int num_nodes_ = 0;
  int gpus_per_node_ = 0;
  std::map<DeviceId, std::vector<DeviceId>> gateway_;
  std::map<DeviceId, DeviceId> staging_;
  bool destination_routing_ = false;
  struct RouteCache;
  mutable std::shared_ptr<RouteCache> cache_;

  void copy_from(const Cluster& other);  // every member, the graph rebuilt in link-id order

  // Routing internals (cluster.cpp). The index is built once per graph; a mutation gives the
  // cluster a fresh cache.
  RouteCache& index() const;
  void invalidate();
  bool route_in_node(DeviceId src, DeviceId dst, uint64_t key, std::vector<LinkId>& out) const;
  bool route_to_gateway(DeviceId src, DeviceId dst, DeviceId via, uint64_t key, std::vector<LinkId>& out) const;
  bool route_in_fabric(DeviceId from_nic, DeviceId to_nic, uint64_t key, std::vector<LinkId>& out) const;
  bool route_in_dragonfly(DeviceId from_nic, DeviceId to_nic, std::vector<LinkId>& out) const;
  bool route_by_bfs(DeviceId src, DeviceId dst, uint64_t key, std::vector<LinkId>& out) const;
  template <typename DistOf>
  bool walk(DeviceId src, DeviceId dst, uint64_t key, DistOf dist_of, std::vector<LinkId>& out) const;
};

}  // namespace stacksim::topo
