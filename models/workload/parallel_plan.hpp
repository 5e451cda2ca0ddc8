// Parallelism plans (Megatron-LM / Megatron-Core vocabulary) and their validity rules.
//
//   parallelism:
//     tp: 4                  # tensor parallel
//     pp: 4                  # pipeline parallel
//     dp: 4                  # data parallel
//     cp: 1                  # context parallel
//     ep: 1                  # expert parallel (carved out of dp, as in Megatron-Core)
//     vp: 1                  # virtual stages per pipeline rank (interleaved 1F1B when > 1)
//     sequence_parallel: true
//     micro_batch: 1         # sequences per micro-batch (per model replica)
//     global_batch: 128      # sequences per optimizer step
//     recompute: none        # none | selective | full
//     zero: 1                # 0 DDP, 1 distributed optimizer, 2 + sharded grads, 3 FSDP
//     precision: bf16        # fp32 | tf32 | fp16 | bf16 | fp8 (FP8 GEMMs, 16-bit elsewhere)
//     schedule: 1f1b         # 1f1b | gpipe (interleaved when vp > 1)
//     overlap_grad_reduce: true      # bucketed DP reduction overlapped with backward
//     overlap_param_gather: true     # ZeRO parameter gather overlapped with the next forward
//     first_stage_layers: 7  # optional uneven split (Llama 3 405B: 7 + 14x8 + 7)
//     last_stage_layers: 7
#pragma once
#include "config/yaml.hpp"
#include "models/workload/model_config.hpp"

namespace stacksim::workload {

enum class Precision { FP32, TF32, FP16, BF16, FP8 };
enum class Recompute { None, Selective, Full };
enum class Schedule { OneFOneB, GPipe };

const char* precision_name(Precision p);
const char* recompute_name(Recompute r);

struct ParallelPlan {
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, vp = 1;
  bool sequence_parallel = false;
  int micro_batch = 1;
  int global_batch = 1;
  Recompute recompute = Recompute::None;
  int zero = 0;
  Precision precision = Precision::BF16;
  Schedule schedule = Schedule::OneFOneB;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  double dp_bucket_bytes = 80e6;  // Megatron-Core: max(40M, 1M * dp) parameters, 16-bit
  int first_stage_layers = 0;
  int last_stage_layers = 0;

  int num_gpus() const { return tp * pp * dp * cp; }
  int num_micro_batches() const { return global_batch / (micro_batch * dp); }
  bool sp() const { return sequence_parallel && tp > 1; }
};

ParallelPlan parse_plan(const config::Node& n);
// Throws InputError saying what to change when the plan cannot run this model on `num_gpus`.
void check_plan(const ModelConfig& m, const ParallelPlan& p, int num_gpus, const config::Node& where);

}  // namespace stacksim::workload
