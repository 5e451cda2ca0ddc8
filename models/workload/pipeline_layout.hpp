// How a model's layers fall on pipeline stages when they do not divide evenly: the policy both the
// validation case builder and the plan search write into a plan (first/last_stage_layers or
// stage_layers, see parallel_plan.hpp).
#pragma once
#include <vector>

namespace stacksim::workload {

struct PipelineLayout {
  bool ok = false;    // false: fewer layers than virtual stages
  int per_stage = 0;  // layers on each (middle) virtual stage
  int first = 0,
      last = 0;  // > 0: the first and last stages take these (Megatron's decoder_first/last_pipeline_num_layers)
  std::vector<int> stage_layers;  // non-empty: every virtual stage's count (pipeline_model_parallel_layout)
};

// Layers over `virtual_stages` (pp * vp). Even when they divide. Otherwise the middle stages take
// ceil(layers / stages) each and the first and last (which also hold the embedding and the output
// layer) share the rest, the last the smaller part; when that leaves them fewer than one layer
// each (DeepSeek-V3's 61 layers over 32 virtual stages), every stage's count as evenly as
// possible, the extra layers on the middle stages, then the first, then the last. One or two
// layers fewer than stages: one each, the first stage (and the last) holding only the embedding
// (and the output layer).
PipelineLayout pipeline_layout(int layers, int virtual_stages);

}  // namespace stacksim::workload
