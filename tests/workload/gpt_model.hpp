// A GPT-style decoder for the workload tests: MHA (kv_heads = heads), a GeLU MLP of 4h,
// LayerNorm, Megatron's padded GPT-2 vocabulary; callers adjust what their closed form needs.
#pragma once
#include "models/workload/model_config.hpp"

namespace stacksim::workload {

inline ModelConfig gpt_model(int layers, int64_t hidden, int64_t heads, int64_t seq_len) {
  ModelConfig m;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.head_dim = hidden / heads;
  m.ffn_hidden = 4 * hidden;
  m.vocab = 51200;
  m.seq_len = seq_len;
  return m;
}

}  // namespace stacksim::workload
