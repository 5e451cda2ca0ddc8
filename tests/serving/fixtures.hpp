// Shared inputs of the serving tests: Llama-3 70B on a DGX H100, vLLM-like defaults.
#pragma once
#include "config/yaml.hpp"
#include "models/hardware/node_spec.hpp"
#include "models/serving/serving.hpp"

namespace stacksim::serving::testing {

inline workload::ModelConfig llama3_70b() {
  workload::ModelConfig m;
  m.name = "Llama-3 70B";
  m.layers = 80;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden = 28672;
  m.vocab = 128256;
  m.seq_len = 8192;
  m.mlp = workload::Mlp::SwiGlu;
  m.norm = workload::Norm::RmsNorm;
  m.attention_kind = workload::AttentionKind::Gqa;
  return m;
}

inline ServingHardware dgx_h100(int nodes = 1) {
  ServingHardware h;
  h.gpu = hw::bundled_gpus().get("H100-SXM5-80GB");
  h.cluster = topo::parse_cluster_config(
      config::Node::load_string("node: dgx-h100\nnodes: " + std::to_string(nodes) + "\n", "t.yaml"),
      hw::bundled_nodes());
  return h;
}

// vLLM V1 defaults, TP8, FP8 weights/activations/KV.
inline ServingConfig tp8_fp8() {
  ServingConfig c = config_for_engine(load_engine_profile("vllm", "0.8"));
  c.origin = "test.yaml";
  c.parallel.tp = 8;
  c.weights_dtype = c.activations_dtype = c.kv_dtype = Dtype::FP8;
  return c;
}

inline Workload fixed_lengths(ArrivalMode mode, long long n, long long input, long long output) {
  Workload w;
  w.mode = mode;
  w.num_requests = n;
  w.input.mean_tokens = static_cast<double>(input);
  w.output.mean_tokens = static_cast<double>(output);
  w.origin = "test.yaml";
  return w;
}

}  // namespace stacksim::serving::testing
