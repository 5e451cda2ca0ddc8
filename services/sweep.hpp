// `stacksim sweep SWEEP.yaml -o results.csv`: the cartesian grid over any scenario keys, run in
// parallel (oneTBB) into a pre-sized vector, written in grid order whatever the thread count.
// An invalid combination is a row with its reason, never an abort. A sweep whose output file
// already holds rows resumes: points already there are not simulated again.
// Each row has num_gpus and scaling_efficiency (tokens/s per GPU over the smallest run among the
// rows that differ only in the scale-out keys cluster.nodes, cluster.gpus_per_node, parallelism.dp).
//
//   scenario: llama3-70b-64xh100.yaml     # relative to the sweep file
//   set: {model.layers: 40}               # optional fixed overrides
//   grid:
//     hardware.gpu: [H100-SXM5-80GB, H200-SXM-141GB]
//     parallelism.tp: [2, 4, 8]
#pragma once
#include <ostream>
#include <string>

namespace stacksim::analysis {

struct SweepSummary {
  size_t points = 0, simulated = 0, resumed = 0, invalid = 0;
};

SweepSummary run_sweep(const std::string& sweep_path, const std::string& csv_path, int threads, std::ostream& progress);

}  // namespace stacksim::analysis
