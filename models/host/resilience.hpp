// Checkpoints and failures: what a long run loses beyond its steady-state step.
//
//   checkpoint:
//     every_steps: 500                  # a checkpoint every N steps (>= 1)
//     bytes: 2 TB                       # optional: the whole checkpoint; default: the model's
//                                       # weights + optimizer state, each unique shard written once
//     write_bandwidth: 2 GB/s           # per node (its share of the target); default: the node's
//                                       # local storage write bandwidth
//     aggregate_write_bandwidth: 50 GB/s  # optional: the target's total, shared by all nodes
//     async: false
//   failures:
//     mtbf_hours_per_node: 50000        # or mtbf_hours_per_gpu
//     restart_s: 600                    # detect, reschedule, reload the checkpoint
//
// Sync checkpoint: the GPUs stop for the device-to-host snapshot and the write. Async: only the
// snapshot blocks (pinned copies over PCIe, GPUs under one switch sharing its uplink); the write
// overlaps the next steps and stalls only if it takes longer than the checkpoint interval.
// The stall is amortised over the interval and reported per step as `checkpoint`.
// Failures (Young 1974 / Daly 2006 first-order accounting): the job fails every MTBF/(nodes or
// GPUs); each failure costs the restart plus, on average, half a checkpoint interval of work done
// again. The fraction of wall time lost is (restart + interval/2) / job MTBF; goodput is the
// throughput that remains.
#pragma once
#include "config/yaml.hpp"
#include "topologies/builders.hpp"

namespace stacksim::analysis {

struct CheckpointConfig {
  bool enabled = false;
  int every_steps = 1000;
  double bytes = 0;                // 0 = from the model's weights and optimizer state
  double write_Bps_per_node = 0;   // 0 = the node's storage write bandwidth
  double aggregate_write_Bps = 0;  // 0 = no shared limit
  bool async = false;
};

struct FailureConfig {
  bool enabled = false;
  double mtbf_s_per_node = 0;  // exactly one of the two MTBFs is set
  double mtbf_s_per_gpu = 0;
  double restart_s = 0;
};

// `node` is the cluster's node (for the default write bandwidth in messages).
CheckpointConfig parse_checkpoint(const config::Node& checkpoint, const hw::NodeSpec& node);
FailureConfig parse_failures(const config::Node& failures, const CheckpointConfig& checkpoint);

struct CheckpointTimes {
  double snapshot_s = 0;  // device -> host copy of one GPU's shard
  double write_s = 0;     // the node's (or the target's) write of one checkpoint
  double stall_s = 0;     // GPU time lost per checkpoint
  double per_step_s = 0;  // stall_s / every_steps
};

// One checkpoint of `bytes_per_gpu` per GPU on `cluster`, for steps of `step_s`.
CheckpointTimes checkpoint_times(const CheckpointConfig& c, const topo::ClusterConfig& cluster, double bytes_per_gpu,
                                 double step_s);

// Fraction of wall time lost to failures (restart + half an interval of recompute per failure);
// 0 without failures, capped at 1 (the job never gets past a checkpoint).
double failure_loss_fraction(const FailureConfig& f, const topo::ClusterConfig& cluster, double checkpoint_interval_s);

}  // namespace stacksim::analysis
