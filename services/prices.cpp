#include "services/prices.hpp"

#include "config/schema.hpp"

namespace stacksim::analysis {

Prices parse_prices(const config::Node& n) {
  Prices p;
  if (n.is_null()) return p;
  n.require_map();
  n.check_keys(config::scenario_keys("prices"));
  p.given = true;
  p.gpu_hour_usd = n.non_negative("gpu_hour_usd", n.optional_number("gpu_hour_usd").value_or(0));
  p.node_hour_usd = n.non_negative("node_hour_usd", n.optional_number("node_hour_usd").value_or(0));
  p.nic_hour_usd = n.non_negative("nic_hour_usd", n.optional_number("nic_hour_usd").value_or(0));
  if (!(p.gpu_hour_usd + p.node_hour_usd + p.nic_hour_usd > 0))
    n.fail("", "no positive price", "give at least gpu_hour_usd, e.g. prices: {gpu_hour_usd: 2.5}");
  return p;
}

double cluster_usd_per_hour(const Prices& p, const topo::ClusterConfig& c) {
  return p.gpu_hour_usd * c.num_gpus() + p.node_hour_usd * c.nodes + p.nic_hour_usd * c.num_nics();
}

double usd_per_million_tokens(double usd_per_hour, double tokens_per_s) {
  return usd_per_hour / (tokens_per_s * 3600.0 / 1e6);
}

}  // namespace stacksim::analysis
