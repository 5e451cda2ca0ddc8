#include "models/analysis/host.hpp"

#include <algorithm>

namespace stacksim::analysis {

HostConfig parse_host(const config::Node& n) {
  HostConfig h;
  if (n.is_null()) return h;
  n.require_map();
  n.check_keys({"cpu_seconds_per_sample", "loader_workers", "prefetch", "storage_bytes_per_sample",
                "storage_read_bandwidth", "sample_bytes", "pinned"});
  h.enabled = true;
  h.cpu_seconds_per_sample = n.non_negative(
      "cpu_seconds_per_sample", n.optional_quantity("cpu_seconds_per_sample", sim::Dimension::Time, 1.0).value_or(0));
  const long long w = n.optional_int("loader_workers").value_or(8);
  if (w < 1) n.fail("loader_workers", "must be at least 1, got " + std::to_string(w), "use e.g. 8 workers per GPU");
  h.loader_workers = static_cast<int>(std::min<long long>(w, 4096));
  const long long pf = n.optional_int("prefetch").value_or(2);
  if (pf < 0) n.fail("prefetch", "must not be negative", "use 0 (synchronous) or more batches");
  h.prefetch = static_cast<int>(std::min<long long>(pf, 1024));
  h.storage_bytes_per_sample = n.non_negative(
      "storage_bytes_per_sample", n.optional_quantity("storage_bytes_per_sample", sim::Dimension::Bytes, 1.0).value_or(0));
  if (n.has("storage_read_bandwidth"))
    h.storage_read_Bps = n.positive("storage_read_bandwidth",
                                    n.required_quantity("storage_read_bandwidth", sim::Dimension::Bandwidth));
  h.sample_bytes = n.non_negative("sample_bytes", n.optional_quantity("sample_bytes", sim::Dimension::Bytes, 1.0).value_or(0));
  h.pinned = n.bool_or("pinned", true);
  return h;
}

HostTimes host_times(const HostConfig& h, const topo::ClusterConfig& c, double samples_per_gpu) {
  HostTimes t;
  if (!h.enabled) return t;
  const int gpus = c.node.gpus_per_node;
  const double cores_per_gpu = static_cast<double>(c.node.cpu_sockets) * c.node.cores_per_socket / gpus;
  const double workers = std::min<double>(h.loader_workers, cores_per_gpu);
  t.loader_s = samples_per_gpu * h.cpu_seconds_per_sample / workers;
  const double storage_Bps = h.storage_read_Bps > 0 ? h.storage_read_Bps : c.node.storage_read_Bps;
  if (h.storage_bytes_per_sample > 0)
    t.storage_s = storage_Bps > 0 ? samples_per_gpu * gpus * h.storage_bytes_per_sample / storage_Bps : 0;
  t.h2d_s = h.sample_bytes > 0 ? samples_per_gpu * h.sample_bytes / (c.node.pcie_bandwidth_Bps * (h.pinned ? 0.85 : 0.5)) : 0;
  if (!h.pinned) t.blocking_s = t.h2d_s;
  return t;
}

}  // namespace stacksim::analysis
