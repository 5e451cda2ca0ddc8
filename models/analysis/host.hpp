// The host side of a training step: CPU data-loader workers and storage feeding the GPUs.
// Steady-state model: with at least one batch of prefetch, the loader prepares the next step's
// samples while the GPUs run this one, so the step takes max(GPU step, loader time, storage
// time) and the difference is exposed "data wait"; without prefetch they add up.
//   loader time  = samples per GPU per step x CPU seconds per sample / workers per GPU
//                  (workers beyond the node's cores share them)
//   storage time = samples per node per step x bytes read per sample / node read bandwidth
//   H2D copies   = samples per GPU x bytes per sample / PCIe rate (pinned 85 %, pageable 50 % of
//                  the x16 link, as nvbandwidth's pinned/pageable ratios suggest); pinned copies
//                  overlap compute, pageable ones block the stream.
//
//   host:
//     cpu_seconds_per_sample: 0.02   # read + decode + augment + tokenise, one core
//     loader_workers: 8              # per GPU
//     prefetch: 2                    # batches ready ahead (0 = synchronous loading)
//     storage_bytes_per_sample: 1 MB # read from the node's storage
//     storage_read_bandwidth: 5 GB/s # optional: overrides the node's storage
//     sample_bytes: 64 KB            # copied host -> device per sample
//     pinned: true
#pragma once
#include "config/yaml.hpp"
#include "topologies/builders.hpp"

namespace stacksim::analysis {

struct HostConfig {
  bool enabled = false;
  double cpu_seconds_per_sample = 0;
  int loader_workers = 8;
  int prefetch = 2;
  double storage_bytes_per_sample = 0;
  double storage_read_Bps = 0;  // 0 = the node's
  double sample_bytes = 0;
  bool pinned = true;
};

HostConfig parse_host(const config::Node& host);

struct HostTimes {
  double loader_s = 0, storage_s = 0, h2d_s = 0;
  double blocking_s = 0;  // added to the GPU step regardless of prefetch (pageable copies)
};

// Times of one step's host work for a DP rank loading `samples_per_gpu` samples.
HostTimes host_times(const HostConfig& h, const topo::ClusterConfig& cluster, double samples_per_gpu);

}  // namespace stacksim::analysis
