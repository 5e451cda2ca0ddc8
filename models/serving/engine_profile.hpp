// Serving engines' defaults as data (models/serving/engines/<name>.yaml, one file per engine
// family with one entry per version range; every value carries its source or says it is fitted):
//
//   name: vllm
//   versions:
//   - version: "0.6"                     # applies to 0.6 up to the next listed version
//     max_num_seqs: 256
//     max_num_batched_tokens: 8192       # with chunked prefill (the V1 default on H100-class GPUs)
//     block_size_tokens: 16
//     gpu_memory_utilization: 0.9        # share of HBM the engine may use (weights, activations, KV)
//     chunked_prefill: true
//     prefix_caching: false
//     scheduler: mixed                   # mixed: prefill chunks ride with decodes (vLLM V1, TRT-LLM
//                                        #  in-flight batching); prefill_first: a step with new prompts
//                                        #  runs only prompts (vLLM V0, SGLang without mixed chunks)
//     kv_admission: on_demand            # on_demand: blocks as tokens arrive, preempt when out;
//                                        #  reserve_full: admit only with room for prompt + max output
//                                        #  (TRT-LLM's GUARANTEED_NO_EVICT: never preempts)
//     host_overlapped: false             # true: the next step's scheduling runs under the GPU step
//                                        #  (SGLang's overlap scheduler): step = max(GPU, host)
//     step_overhead_s: 2.0e-3            # host work per engine step, eager launches
//     step_overhead_cuda_graph_s: 0.5e-3 # the same with CUDA graphs captured for decode
//     per_sequence_overhead_s: 5.0e-6    # scheduler/sampling host work per running sequence per step
//     gemm_efficiency: 1.0               # share of the GPU's calibrated GEMM rate its kernels reach
//     attention_efficiency: 1.0          # share of the GPU's fused-attention rate
//     sparse_prefill_latent: false       # sparse (DSA) MLA prefill attends in the latent (absorbed)
//                                        #  form, as its decode does, not with per-head K/V
//     sparse_prefill_min_heads: 1        # that kernel's head tile: fewer heads per GPU are padded
//     sparse_prefill_dense_max_tokens: 0 # a prompt chunk whose context is at most this runs dense MHA
//     sources: [...]
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "models/serving/dtype.hpp"

namespace stacksim::serving {

enum class SchedulerPolicy { Mixed, PrefillFirst };
enum class KvAdmission { OnDemand, ReserveFull };

struct EngineProfile {
  std::string name;                  // vllm, sglang, tensorrt-llm, ...
  std::string version;               // the entry's version ("" = the file's only/latest entry)
  std::vector<std::string> aliases;  // other names sources use for the engine ("text-generation-inference")
  int max_num_seqs = 256;
  long long max_num_batched_tokens = 8192;
  int block_size_tokens = 16;
  double gpu_memory_utilization = 0.9;
  bool chunked_prefill = true;
  bool prefix_caching = false;
  SchedulerPolicy scheduler = SchedulerPolicy::Mixed;
  KvAdmission kv_admission = KvAdmission::OnDemand;  // preemption is by recompute
  double kv_free_memory_fraction = 1.0;              // TensorRT-LLM's kv_cache_free_gpu_mem_fraction
  bool host_overlapped = false;
  double step_overhead_s = 2e-3;
  double step_overhead_cuda_graph_s = 0.5e-3;
  double per_sequence_overhead_s = 5e-6;
  // Fractions of the GPU's calibrated GEMM and fused-attention rates the engine's kernels reach
  // (1 = the best measured kernels). Per engine version family, fitted on the dev set with
  // leave-one-source-out CV where the docs give nothing.
  double gemm_efficiency = 1.0;
  double attention_efficiency = 1.0;
  // The KV-cache format the engine takes when the scenario names none and the weights come as an
  // 8- or 4-bit checkpoint: TensorRT-LLM reads the checkpoint's kv_cache_quant_algo (ModelOpt's
  // FP8/NVFP4 checkpoints ship an FP8 KV cache); vLLM and SGLang ('auto') keep the model's 16 bits.
  std::optional<Dtype> quantized_checkpoint_kv_dtype;
  // How the engine runs sparse-attention (DeepSeek-V3.2) MLA prefill: in the latent, absorbed
  // form the top-k gather needs (576-wide keys, 512-wide values per head, like decode), and with
  // the kernel's heads padded up to sparse_prefill_min_heads per GPU.
  bool sparse_prefill_latent = false;
  int sparse_prefill_min_heads = 1;
  // Short prompts skip the sparse kernel: a chunk whose whole context (cached + new tokens) is at
  // most this many tokens runs dense MHA (every key is in its top-k anyway).
  long long sparse_prefill_dense_max_tokens = 0;
  std::vector<std::string> sources;
  std::string file;
};

// Engine names with a profile file (sorted).
std::vector<std::string> engine_names();
// The profile of `name` at `version` (the newest entry not newer than it; "" = the newest entry).
// config::InputError naming the file and the nearest engine name when unknown.
EngineProfile load_engine_profile(const std::string& name, const std::string& version = "");
// Profiles directory (STACKSIM_ENGINES_DIR overrides models/serving/engines).
std::string default_engines_dir();

}  // namespace stacksim::serving
