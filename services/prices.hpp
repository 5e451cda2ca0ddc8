// Prices of the cluster's parts, for the cost of training: an optional scenario section
//
//   prices:
//     gpu_hour_usd: 2.5     # per GPU
//     node_hour_usd: 4.0    # per server besides its GPUs and NICs (CPUs, memory, chassis, power)
//     nic_hour_usd: 0.1     # per NIC
//
// The whole cluster is billed (every GPU, server and NIC it has, used by the plan or not): that is
// what renting it costs. Cost per million tokens = USD per hour / (tokens per hour / 1e6).
#pragma once
#include "config/yaml.hpp"
#include "topologies/builders.hpp"

namespace stacksim::analysis {

struct Prices {
  bool given = false;
  double gpu_hour_usd = 0, node_hour_usd = 0, nic_hour_usd = 0;
};

Prices parse_prices(const config::Node& prices);

double cluster_usd_per_hour(const Prices& p, const topo::ClusterConfig& cluster);
double usd_per_million_tokens(double usd_per_hour, double tokens_per_s);

}  // namespace stacksim::analysis
