// Memory per GPU of a training job, on the most loaded pipeline stage.
//  - Model states, mixed-precision Adam (ZeRO paper, Rajbhandari et al. 2020, section 3.1): 16
//    bytes per parameter = 2 (16-bit weights) + 2 (16-bit gradients) + 12 (fp32 master weights,
//    momentum, variance). ZeRO-1 shards the 12 over the data-parallel replicas of a parameter
//    (dp*cp for dense weights, dp*cp/ep for routed experts), ZeRO-2 also the gradients,
//    ZeRO-3/FSDP also the weights, plus two gathered layers in flight (current + prefetched);
//    FSDP under a pipeline keeps the stage's weights gathered and its gradients unsharded until
//    the last micro-batch (torchtitan with pipelining), so only the 12 stay sharded.
//  - Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
//    Transformer Models", section 4 and Table 2), per layer and micro-batch, 16-bit:
//      replicated over TP (split by t with sequence parallelism): 10*s*b*h = two norm inputs (4),
//        the inputs of QKV and of the MLP (4), two dropout masks (2);
//      split by t: 2*s*b*(q + k + v + o) for Q, K, V and the output-projection input (8*s*b*h for
//        MHA), the MLP's 4*s*b*ffn (GeLU in + out; SwiGLU: 6*s*b*ffn for fc1's two halves and the
//        product), and with unfused attention (model.attention: unfused) the 5*a*s^2*b/t of
//        scores, softmax output and dropout mask. For GPT (MHA, ffn = 4h, unfused) this is
//        34*s*b*h + 5*a*s^2*b in total: the paper's s*b*h*(10 + 24/t + 5as/(ht)) with TP,
//        s*b*h/t*(34 + 5as/h) with TP + SP.
//      selective recomputation (and any fused attention) drops the score term; full recomputation
//        keeps only the layer input, 2*s*b*h (/t with SP: Megatron checkpoints the SP-split
//        input), plus one layer's full activations while that layer is recomputed.
//      MoE layers: the routed tokens' expert input (2*s*b*top_k*h, after the TP gather) and
//        expert MLP activations scaled by top_k and the load factor; shared experts like an MLP.
//      MLA: the Q and KV latents (replicated) and per-head Q, K, V as above.
//      FP8 (Transformer Engine): each linear layer keeps its input as the FP8 copy it cast for the
//        forward GEMM, 1 byte instead of 2: the QKV and MLP inputs (-2*s*b*h replicated), the
//        output-projection input (-s*b*o) and the second MLP GEMM's input (-s*b*ffn).
//    In flight on pipeline rank r (Korthikanti section 4.2.3): 1F1B holds min(m, pp - r)
//    micro-batches of the rank's layers (pp - r = pp on the first stage: the whole model's
//    layers' worth); interleaved 1F1B min(m*vp, 2*(pp - r - 1) + (vp - 1)*pp + 1) model chunks
//    (first stage: L*(1 + (pp-1)/(pp*vp)) layers); GPipe all m; no pipeline one micro-batch.
//  - Buffers: the last stage's logits (16-bit GEMM output + fp32 softmax kept by the
//    vocabulary-parallel cross-entropy: 6 bytes per logit), and two SP all-gather staging
//    buffers.
//  - Reserve: CUDA context with the cuBLAS/cuDNN/Transformer Engine kernel images, cuBLAS
//    workspaces and NCCL channel buffers, kReserveBytes = 2 GB (PyTorch reports ~0.5-1 GB of
//    context on H100 and NCCL ~0.3-1 GB depending on communicators); out_of_memory also leaves
//    kFragmentation = 2% of the capacity to the caching allocator's fragmentation.
// FP8 weights are counted as FP8 parameters (Megatron's --fp8-param-gather, NeMo's fp8_params):
// the FP8 weight and its transpose take the 2 bytes of the 16-bit copy. With 16-bit parameters
// Transformer Engine also caches an FP8 weight and transpose per layer (+2 bytes per parameter):
// not modelled, nor fp32 gradient accumulation buffers (Megatron's
// accumulate_allreduce_grads_in_fp32) or CPU offload.
#pragma once
#include "models/workload/model_config.hpp"
#include "models/workload/parallel_plan.hpp"

namespace stacksim::workload {

constexpr double kReserveBytes = 2e9;
constexpr double kFragmentation = 0.02;

struct MemoryFootprint {
  int stage = 0;  // the pipeline rank these numbers are for (the most loaded)
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  double buffers_bytes = 0;  // logits, communication staging
  double reserve_bytes = 0;  // CUDA context, workspaces, NCCL
  double total_bytes() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes + buffers_bytes + reserve_bytes;
  }
};

// Activation bytes one rank stores for one layer and one micro-batch (formulas above).
double activation_bytes_per_layer(const ModelConfig& m, const ParallelPlan& p, int layer);
// The last stage's loss buffer for `tokens` tokens of one micro-batch: the logits and their fp32
// copy, or with chunked_loss one chunk's logits (parallel_plan.hpp).
double logits_bytes(const ModelConfig& m, const ParallelPlan& p, double tokens);
// Micro-batches (chunks, when interleaved) whose activations pipeline rank `stage` holds at peak.
int in_flight_micro_batches(const ParallelPlan& p, int stage);
MemoryFootprint memory_per_gpu(const ModelConfig& m, const ParallelPlan& p, int stage);
MemoryFootprint memory_per_gpu(const ModelConfig& m, const ParallelPlan& p);  // max over stages
bool out_of_memory(const MemoryFootprint& f, double capacity_bytes);

}  // namespace stacksim::workload
