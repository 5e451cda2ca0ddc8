// Memory per GPU of a training job (the most loaded pipeline stage).
//  - Model states, mixed-precision Adam (ZeRO paper, Rajbhandari et al. 2020): 16 bytes per
//    parameter = 2 (16-bit weights) + 2 (16-bit gradients) + 12 (fp32 master weights, m, v).
//    ZeRO-1 shards the 12 over data parallelism, ZeRO-2 also the gradients, ZeRO-3/FSDP also the
//    weights (plus two gathered layers in flight).
//  - Activations (Korthikanti et al. 2022, section 4): per layer and micro-batch
//    s*b*h*(10 + 24/t) bytes with tensor parallelism, s*b*h*34/t with sequence parallelism, the
//    MLP part (19 of the 34) scaled by ffn_hidden/(4h) (x1.5 for gated MLPs). Unfused attention
//    adds the 5*a*s^2*b/t score term (selective recomputation drops it); flash attention never stores it. Full recomputation keeps only the
//    layer input, 2*s*b*h (/t with SP). The first 1F1B stage holds pp micro-batches in flight
//    (x (1 + (pp-1)/(pp*vp)) when interleaved), i.e. all the model's layers' worth.
//  - Logits of the last stage in fp32, and a reserve for the CUDA context, NCCL buffers and
//    allocator fragmentation.
#pragma once
#include <string>

#include "models/workload/model_config.hpp"
#include "models/workload/parallel_plan.hpp"

namespace stacksim::workload {

struct MemoryFootprint {
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  double buffers_bytes = 0;      // logits, communication buckets
  double reserve_bytes = 0;      // CUDA context, NCCL, fragmentation
  double total_bytes() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes + buffers_bytes + reserve_bytes;
  }
};

MemoryFootprint memory_per_gpu(const ModelConfig& m, const ParallelPlan& p);
bool out_of_memory(const MemoryFootprint& f, double capacity_bytes);

}  // namespace stacksim::workload
