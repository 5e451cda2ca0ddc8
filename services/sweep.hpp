// `stacksim sweep SWEEP.yaml -o results.csv`: the cartesian grid over any scenario keys, enumerated
// lazily and run in parallel (a oneTBB pipeline); each row is appended to the file as soon as the
// rows before it are written, so the file is in grid order whatever the thread count and an
// interrupted sweep keeps every finished row (sweep_output.hpp). SIGINT/SIGTERM stop it after the
// rows in flight. An invalid combination is a row with its reason, never an abort. A sweep whose
// output file already holds rows resumes: points already there are not simulated again.
// Each row has num_gpus and scaling_efficiency (tokens/s per GPU over the smallest run among the
// rows that differ only in the scale-out keys cluster.nodes, cluster.gpus_per_node, parallelism.dp).
//
//   scenario: llama3-70b-64xh100.yaml     # relative to the sweep file
//   set: {model.layers: 40}               # optional fixed overrides
//   grid:
//     hardware.gpu: [H100-SXM5-80GB, H200-SXM-141GB]
//     parallelism.tp: [2, 4, 8]
#pragma once
#include <cstdint>
#include <ostream>
#include <string>

namespace stacksim::analysis {

struct SweepSummary {
  uint64_t points = 0, simulated = 0, resumed = 0, invalid = 0;
  uint64_t written = 0;    // rows in the file (== points once complete)
  int interrupted_by = 0;  // the signal that stopped the sweep early, 0 if it completed
};

SweepSummary run_sweep(const std::string& sweep_path, const std::string& csv_path, int threads, std::ostream& progress);

}  // namespace stacksim::analysis
