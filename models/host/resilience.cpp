#include "models/host/resilience.hpp"

#include <algorithm>

#include "config/schema.hpp"
#include "models/host/host.hpp"

namespace stacksim::analysis {

CheckpointConfig parse_checkpoint(const config::Node& n, const hw::NodeSpec& node) {
  CheckpointConfig c;
  if (n.is_null()) return c;
  n.require_map();
  n.check_keys(config::scenario_keys("checkpoint"));
  c.enabled = true;
  if (!n.has("every_steps"))
    n.fail("every_steps", "missing", "add e.g. every_steps: 500 (a checkpoint every 500 steps)");
  const long long every = n.required_int("every_steps");
  if (every < 1) n.fail("every_steps", "must be at least 1, got " + std::to_string(every), "use e.g. every_steps: 500");
  c.every_steps = static_cast<int>(std::min<long long>(every, 1'000'000'000));
  if (n.has("bytes")) c.bytes = n.positive("bytes", n.required_quantity("bytes", sim::Dimension::Bytes, 1.0));
  if (n.has("write_bandwidth"))
    c.write_Bps_per_node =
        n.positive("write_bandwidth", n.required_quantity("write_bandwidth", sim::Dimension::Bandwidth));
  if (n.has("aggregate_write_bandwidth"))
    c.aggregate_write_Bps = n.positive("aggregate_write_bandwidth",
                                       n.required_quantity("aggregate_write_bandwidth", sim::Dimension::Bandwidth));
  if (c.write_Bps_per_node == 0 && c.aggregate_write_Bps == 0 && node.storage_write_Bps <= 0)
    n.fail("write_bandwidth", "missing: node type '" + node.name + "' states no storage write bandwidth",
           "add write_bandwidth (per node, e.g. 2 GB/s) or aggregate_write_bandwidth (the target's total)");
  c.async = n.bool_or("async", false);
  return c;
}

FailureConfig parse_failures(const config::Node& n, const CheckpointConfig& checkpoint) {
  FailureConfig f;
  if (n.is_null()) return f;
  n.require_map();
  n.check_keys(config::scenario_keys("failures"));
  f.enabled = true;
  const bool per_node = n.has("mtbf_hours_per_node"), per_gpu = n.has("mtbf_hours_per_gpu");
  if (per_node == per_gpu)
    n.fail(per_node ? "mtbf_hours_per_gpu" : "mtbf_hours_per_node", "give exactly one MTBF",
           "set either mtbf_hours_per_node or mtbf_hours_per_gpu");
  const std::string key = per_node ? "mtbf_hours_per_node" : "mtbf_hours_per_gpu";
  const double mtbf_s = 3600 * n.positive(key, n.required_number(key));
  (per_node ? f.mtbf_s_per_node : f.mtbf_s_per_gpu) = mtbf_s;
  f.restart_s = n.non_negative("restart_s", n.optional_quantity("restart_s", sim::Dimension::Time, 1.0).value_or(0));
  if (!checkpoint.enabled)
    n.fail(key, "failures need a 'checkpoint:' section: without checkpoints a failure loses all the work done",
           "add e.g. checkpoint: {every_steps: 500, write_bandwidth: 2 GB/s}");
  return f;
}

CheckpointTimes checkpoint_times(const CheckpointConfig& c, const topo::ClusterConfig& cl, double bytes_per_gpu,
                                 double step_s) {
  CheckpointTimes t;
  if (!c.enabled) return t;
  const auto& node = cl.node;
  // The GPUs under one PCIe switch snapshot at once through its uplink.
  const double gpus_per_uplink = std::max(1, std::min(node.gpus_per_pcie_switch, node.gpus_per_node));
  const double snapshot_Bps =
      std::min(node.pcie_bandwidth_Bps * kPinnedCopyEfficiency, node.pcie_bandwidth_Bps / gpus_per_uplink);
  t.snapshot_s = bytes_per_gpu / snapshot_Bps;
  const double node_Bps = c.write_Bps_per_node > 0 ? c.write_Bps_per_node : node.storage_write_Bps;
  const double node_bytes = bytes_per_gpu * node.gpus_per_node;
  if (node_Bps > 0) t.write_s = node_bytes / node_Bps;
  if (c.aggregate_write_Bps > 0) t.write_s = std::max(t.write_s, node_bytes * cl.nodes / c.aggregate_write_Bps);
  const double interval_s = c.every_steps * step_s;
  t.stall_s = t.snapshot_s + (c.async ? std::max(0.0, t.write_s - interval_s) : t.write_s);
  t.per_step_s = t.stall_s / c.every_steps;
  return t;
}

double failure_loss_fraction(const FailureConfig& f, const topo::ClusterConfig& cl, double checkpoint_interval_s) {
  if (!f.enabled) return 0;
  const double job_mtbf_s = f.mtbf_s_per_node > 0 ? f.mtbf_s_per_node / cl.nodes : f.mtbf_s_per_gpu / cl.num_gpus();
  return std::min(1.0, (f.restart_s + checkpoint_interval_s / 2) / job_mtbf_s);
}

}  // namespace stacksim::analysis
