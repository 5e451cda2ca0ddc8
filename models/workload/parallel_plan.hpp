// Parallelism plans (Megatron-LM / Megatron-Core vocabulary) and their validity rules.
//
//   parallelism:
//     tp: 4                  # tensor parallel
//     pp: 4                  # pipeline parallel
//     dp: 4                  # data parallel
//     cp: 1                  # context parallel (load-balanced ring attention, 2*cp sequence chunks)
//     cp_comm: p2p           # p2p | all_gather | all_to_all: how the context-parallel ranks attend (below)
//     ep_dispatch: alltoall  # alltoall | deepep: how MoE tokens reach their experts (below)
//     ep: 1                  # expert parallel, carved out of dp (see check_plan)
//     etp: 4                 # expert tensor parallel: tp (default) or 1 (MoE parallel folding:
//                            # whole experts, ep carved out of tp*cp*dp; see check_plan)
//     vp: 1                  # virtual stages per pipeline rank (interleaved 1F1B when > 1)
//     sequence_parallel: true  # ignored when tp == 1 (there is nothing to split)
//     micro_batch: 1         # sequences per micro-batch (per model replica)
//     global_batch: 128      # sequences per optimizer step
//     recompute: none        # none | selective | full | op (torchtitan's op-level checkpointing, below)
//     recompute_modules: [core_attn]  # with selective: what is recomputed (below)
//     recompute_layers: 4    # with full: recompute only the first N layers of each model chunk
//                            # (Megatron's --recompute-method block --recompute-num-layers N);
//                            # 0 or absent = every layer
//     zero: 1                # 0 DDP, 1 distributed optimizer, 2 + sharded grads, 3 or fsdp
//     fsdp_impl: fsdp2       # zero 3: fsdp2 | fsdp1 (PyTorch) | megatron (Megatron-Core's FSDP) (below)
//     shard_size: 8          # optional: ZeRO/FSDP shards over groups of this many dp*cp ranks,
//                            # replicated across them (HSDP; default all dp*cp ranks)
//     fsdp_gathers_per_layer: 1  # zero 3: all-gathers a layer's parameters take, one after another
//                            # (1: FSDP's per-block unit; DeepSpeed ZeRO-3 gathers per module, one
//                            # per weight matrix); each pays the ring's per-rank step latency
//     precision: bf16        # fp32 | tf32 | fp16 | bf16 | fp8 (FP8 GEMMs, 16-bit elsewhere)
//     fp8_recipe: delayed    # fp8: delayed | current | mxfp8: how tensors are quantised (below)
//     optimizer_moments: fp32  # fp32 | bf16 | int8: Adam's first and second moments (below)
//     offload_optimizer: false # true: Adam's state and step on the host CPU (ZeRO-Offload, below)
//     offload_params: false    # zero 3 + offload_optimizer: 16-bit shards in host memory (below)
//     fp8_swiglu_cache: false  # fp8 MoE: the experts' SwiGLU inputs kept in FP8 (below)
//     chunked_loss: false      # output layer + cross-entropy fused over token chunks (below)
//     offload_activations: false  # saved activations to host memory and back (below)
//     schedule: 1f1b         # 1f1b | gpipe | interleaved (= 1f1b with vp > 1) | dualpipe (below)
//     dp_bucket_size: 80 MB  # gradient bucket (default below)
//     overlap_grad_reduce: true      # bucketed DP reduction overlapped with backward
//     overlap_param_gather: true     # ZeRO parameter gather overlapped with the next forward
//     async_tp_backward: true        # TP input-gradient reduction under the wgrad GEMM (below)
//     grad_reduce_fp32: false        # gradients kept and reduced in fp32 (below)
//     overlap_p2p_comm: true         # interleaved: pipeline sends asynchronous (default: vp > 1)
//     p2p_scatter_gather: false      # tp without sp: each rank sends 1/tp, then all-gather (below)
//     tp_comm_overlap: false         # SP collectives pipelined with their GEMMs (below)
//     ep_overlap: false              # MoE: a forward and another micro-batch's backward run together (below)
//     kernels: fused                 # fused | eager: the element-wise kernels' implementation (below)
//     cuda_graphs: none              # none | full | [attn, mlp, moe_router, moe_preprocess] (below)
//     first_stage_layers: 7  # optional uneven split (Llama 3 405B: 7 + 14x8 + 7)
//     last_stage_layers: 7
//     account_for_embedding_in_pipeline_split: false  # the embedding counts as a layer (below)
//     account_for_loss_in_pipeline_split: false       # the output layer and loss count as one
//     stage_layers: [1, 2, 2, ..., 1]  # or every virtual stage's layer count, pp*vp of them in
//                            # virtual-stage order (Megatron-Core's pipeline_model_parallel_layout)
//
// Defaults: dp_bucket_size is Megatron-Core's DistributedDataParallel bucket, max(40M, 1M x dp)
// parameters (distributed_data_parallel.py), in 16-bit gradients; PyTorch DDP's own default
// would be 25 MB (bucket_cap_mb). overlap_grad_reduce / overlap_param_gather default to true as
// in NeMo 2.0's pretraining recipes (MegatronStrategy's DDP config); Megatron-Core's bare
// DistributedDataParallelConfig defaults both to false, so say false to model that.
// async_tp_backward: in the backward of a column-parallel linear, Megatron-LM (since 2021,
// --async-tensor-model-parallel-allreduce) and Transformer Engine launch the all-reduce (or, with
// SP, the reduce-scatter) of the input gradient right after the dgrad GEMM and run the wgrad GEMM
// under it; with SP the input all-gather for wgrad runs under the dgrad GEMM. false = all in
// sequence (Megatron-LM of 2020 and early 2021).
// autocast: PyTorch's automatic mixed precision (torch.autocast over an fp32 model; what
// Hugging Face's Trainer does with bf16=True): the weights and their gradients stay fp32, every
// forward casts each weight to the 16-bit compute dtype and the backward casts its 16-bit weight
// gradients back into the fp32 gradients (element-wise passes per micro-batch, ops.cpp), and Adam
// updates the fp32 weights in place (no master copy, no 16-bit copy to refresh). Memory: 4 + 4 + 8
// B per parameter plus the 16-bit copies a forward holds. Not with ZeRO-3/FSDP, whose own mixed
// precision casts at each gather (zero: 3 models that).
// grad_reduce_fp32: gradients kept and reduced over data parallelism in fp32: 4 B per parameter
// in memory, on the wire and in the optimizer. Megatron-LM does this with bf16
// (--accumulate-allreduce-grads-in-fp32, Megatron-Core's grad_reduce_in_fp32), as do NeMo 2.0's
// bf16 recipes and torchtitan's default; the default false is 16-bit gradients, as NeMo 1.x's
// configs (grad_sync_dtype: bf16), DeepSpeed and FSDP with a 16-bit reduce_dtype run. fp32/tf32
// training has 4 B gradients anyway.
// schedule dualpipe (DeepSeek-V3): micro-batches from both ends of the pipeline, each rank holding
// two stages (its own and the mirror rank's: parameters, gradients and optimizer state twice),
// forward and backward chunks of the two directions overlapped (pipeline_schedule.hpp). Needs pp
// even, vp 1, an even number of micro-batches >= 2 pp, and zero <= 2.
// fp8_recipe (Transformer Engine's recipes, its docs "Low precision training"): every FP8 GEMM
// operand that is an activation or an output gradient is quantised from 16 bit on the fly;
// weights once per step. delayed (DelayedScaling, TE's and Megatron's default): the scale comes
// from the amax history, one read of the tensor; current (Float8CurrentScaling): the amax is
// computed first, a second read; mxfp8 (MXFP8BlockScaling, Blackwell and later): one E8M0 scale
// per 32 values, and the rowwise and columnwise copies are quantised separately (a quantised
// tensor cannot be transposed). Per-tensor recipes on Hopper/Ada also write a transposed copy
// (FP8 GEMMs there take only the TN layout); Blackwell reads either layout.
// overlap_p2p_comm: pipeline sends and receives asynchronous, under the next forward/backward
// (interleaved schedule only); false = blocking (batch_isend_irecv, then wait: a stage starts its
// next item only once its own send is through). Default: true with interleaving (vp > 1), as
// Megatron-LM's launcher (--no-overlap-p2p-communication turns it off), NeMo's and Megatron-
// Bridge's comm-overlap configs set it; false otherwise (Megatron-Core's dataclass default).
// recompute: op: torchtitan's op-level selective checkpointing (activation_checkpoint mode
// "selective", selective_ac_option "op"): every layer is checkpointed and PyTorch keeps the outputs
// of the attention core, the reduce-scatters and every other 16-bit matmul, recomputing the rest
// (FP8 linears and grouped expert matmuls included); see walk_op_checkpoint in ops.cpp.
// recompute_modules (with recompute: selective; Megatron-Core's --recompute-modules, default
// [core_attn]): core_attn, the attention core (Korthikanti et al.'s selective recomputation);
// layernorm, the two norms before attention and MLP; mla_up_proj, MLA's query and key/value
// up-projections and RoPE (DeepSeek-V3 report section 3.2.3 recomputes these and the norms);
// moe_act, the routed experts' activation function; mlp, the dense MLP; moe, the whole MoE
// layer's routed part (router, dispatch, experts, combine); shared_experts, the shared experts.
// layernorm, mla_up_proj and moe_act discard their outputs (Megatron's output-discarding
// checkpoints); mlp, moe and shared_experts keep only their input. Each costs its forward again
// in the backward pass.
// cuda_graphs: which kernels replay from CUDA graphs instead of being launched one by one by the
// host (Megatron-Core's cuda_graph_scope with cuda_graph_impl transformer_engine; torch.compile's
// reduce-overhead mode): attn, the attention block (input norm through its residual add); mlp, a
// dense MLP block (its norm through its residual add); moe_router, an MoE layer's norm and router;
// moe_preprocess, its routing and first permutation. Each captured block records a forward and a
// backward graph (Transformer Engine's make_graphed_callables), so the host launches it once where
// it launched each kernel; the rest of an MoE layer (dispatch, experts, combine) stays eager, and
// the dropless dispatch's read-back of the token counts still happens, after the graph. full
// captures every layer, the embedding and the head (Megatron-Core's full_iteration), which needs
// static shapes: refused for a dropless MoE model. The GPU side is unchanged (each kernel keeps
// its floor; a graph's replay gap, 1.4 us on an H100, is below it).
// offload_optimizer (DeepSpeed's offload_optimizer: {device: cpu}; ZeRO-Offload, Ren et al. 2021):
// the fp32 master weights and Adam's moments live in host memory. Each rank's reduced gradient
// shard is copied to the host in fp32 as its bucket completes (DeepSpeed casts it on the GPU and
// copies it under the backward), the host runs Adam on it (DeepSpeed's CPU-Adam: fp32 gradient,
// weight and two moments read, the weight and moments written, a 16-bit copy of the weight
// written: 30 B per parameter, bound by the node's DRAM bandwidth, which all the node's ranks
// share), and the 16-bit shard is copied back before the parameter all-gather. With zero 3
// (DeepSpeed ZeRO-3's offload_optimizer; FSDP's CPUOffload, with offload_params) each layer's
// gradient shard goes to the host as its reduce-scatter completes in the backward, and the updated
// 16-bit shard comes back after the host's Adam (the next step's per-layer gathers read it).
// Needs zero 1, 2 or 3.
// offload_params (DeepSpeed ZeRO-3's offload_param: {device: cpu}, ZeRO-Infinity's CPU tier;
// PyTorch FSDP's CPUOffload(offload_params=True)): the 16-bit parameter shards stay in host
// memory, so each layer's shard is copied to the GPU before every gather of it (forward, and the
// backward's again) over the GPU's PCIe path, and the host's Adam leaves the updated shard there
// (no copy back). The copy is the first leg of the gather: where the GPU waits for it, the
// breakdown counts it as data-parallel communication. GPU memory holds no parameter shard. Needs
// zero 3 and offload_optimizer (both frameworks step on the host when the parameters live there).
// optimizer_moments: the dtype of Adam's two moments next to the fp32 master weights: fp32 (12 B
// of optimizer state per parameter, the frameworks' default), bf16 (8 B; DeepSeek-V3 report
// section 3.3.3, Megatron-Core's --exp-avg-dtype/--exp-avg-sq-dtype bf16) or int8 (block-wise
// 8-bit Adam: bitsandbytes' Adam8bit/PagedAdamW8bit, torchao's AdamW8bit: one byte per moment and
// an fp32 absmax per block of 256 values, about 6 B in all; the step reads and writes them).
// account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split: Megatron-Core's
// flags of those names: the split counts the embedding as one more layer in front of the first
// and the output layer with the loss as one more after the last, so (layers + flags) must divide
// by pp*vp and the first (last) virtual stage holds one transformer layer fewer. Llama 3 405B's
// balanced pipeline (Dubey et al. 2024, section 3.3.2): 126 layers + 2 over 16 x 8 virtual
// stages, its first chunk only the embedding and its last only the output layer and the loss.
// Not with first_stage_layers/last_stage_layers/stage_layers.
// offload_activations: each layer's saved activations (with full recomputation, its checkpointed
// input) are copied to pinned host memory after its forward and back before its backward
// (Megatron-Core's activation offloading, torchtune's enable_activation_offloading, Hugging Face's
// gradient checkpointing with offload): the copies run on their own stream over the GPU's PCIe
// path, which they share with the NICs and batch copies; a layer's copy back starts when the
// backward of the layer after it starts, and the backward waits for it. GPU memory holds about
// two layers' activations instead of every in-flight layer's. Not with dualpipe.
// chunked_loss: the output projection and the cross-entropy fused over chunks of tokens (Liger's
// fused linear cross-entropy, which TRL, Axolotl and others call; Apple's Cut Cross-Entropy):
// the loss and its gradients are computed chunk by chunk in the forward, so the micro-batch's
// logits never exist whole. Memory: one chunk's logits in the compute dtype, Liger's chunk of
// next_pow2(ceil(tokens / ceil(vocab / hidden))) tokens (about the hidden states' size), instead
// of the whole micro-batch's logits and their fp32 copy for the loss (6 B per token per vocab
// entry). Time: the same GEMM FLOPs (the gradient GEMMs move into the forward); not charged apart.
// fp8_swiglu_cache: DeepSeek-V3's low-precision activation storage (report section 3.3.3, "Low-
// Precision Storage and Communication"): the routed experts cache their SwiGLU inputs (the fc1
// outputs, two ffn-wide halves) in FP8 with fine-grained scales, 1 byte an element instead of
// 2. Memory only (the quantisation is fused into fc1's epilogue there). Needs precision fp8 and
// an MoE model with a SwiGLU MLP; default false (Transformer Engine keeps them in 16 bit).
// p2p_scatter_gather: Megatron-LM's scatter_gather_tensors_in_pipeline (Narayanan et al. 2021,
// section 4.1; on by default in Megatron-LM before Megatron-Core's p2p module of 2023) and
// DeepSpeed's pipeline engine with tensor parallelism (its partitioned activations and
// gradients): the tp ranks of a stage hold the same hidden states, so each sends only its 1/tp
// slice to the next stage, which all-gathers them over its tensor-parallel group (NVLink) before
// using them. Only with tp > 1 and no sequence parallelism (whose hidden states are already split
// by tp); default false: Megatron-Core sends each rank's whole tensor.
// tp_comm_overlap: with sequence parallelism, Transformer Engine's userbuffers (Megatron-Core's
// tp_comm_overlap, on in NeMo's large-model recipes) split the forward all-gather and
// reduce-scatter into chunks pipelined with the QKV/fc1 and output-projection/fc2 GEMMs, and the
// backward's output-gradient all-gather with the dgrad GEMM; false (Megatron-Core's default) =
// those collectives in sequence with their GEMMs. Needs sequence_parallel.
// ep_overlap: Megatron-Core's --overlap-moe-expert-parallel-comm (MoE, ep > 1): the 1F1B steady
// state runs each forward together with the backward that follows it (another micro-batch's or
// chunk's), so one's expert all-to-alls hide under the other's compute, as DualPipe's F&B chunks
// do; one more forward runs in the warm-up, so the pair's two halves never depend on each other,
// and its activations are one more micro-batch (chunk) in flight. Needs interleaving (vp > 1) or
// no pipeline (pp 1), Megatron's rule; not with dualpipe, which pairs its chunks itself.
// cp_comm: Transformer Engine's cp_comm_type. p2p (its and Megatron-Core's default): K/V chunks
// go around the ring with point-to-point sends that run under the attention of the chunk before
// ("P2P is async and can be overlapped with attention compute"); in backward K/V go around again
// and the dK/dV partials back, under the attention backward. all_gather: the whole sequence's K/V
// are all-gathered before the attention and the dK/dV reduce-scattered after it, in sequence with
// it ("the all-gather is not async, and cannot be overlapped"); Llama 3's training (its paper,
// Section 3.3.2) gathers this way. all_to_all: DeepSpeed-Ulysses (Jacobs et al. 2023): an
// all-to-all turns each rank's sequence shard of Q, K and V into the whole sequence for heads/cp
// of its heads, the attention runs on those, and a second all-to-all returns the output to
// sequence shards (the backward runs both in reverse); neither overlaps the attention. Needs
// the rank's heads (heads/tp) divisible by cp; K/V groups fewer than that are replicated.
// ep_dispatch: alltoall (Megatron-Core's alltoall token dispatcher): every (token, expert) copy
// crosses the network to its expert's rank. deepep (Megatron-Core's flex dispatcher with DeepEP):
// a token crosses to a remote node once if any of its top_k experts is there and is fanned out
// over NVLink (DeepSeek-V3's dispatch, section 3.2.2; DeepEP's NVLink/RDMA forwarding kernels).
// fsdp_impl (zero 3): which FSDP, for the element-wise passes it adds around its collectives, per
// unit and per micro-batch (shard-sized passes are left out). fsdp1 (PyTorch FullyShardedDataParallel,
// torch/distributed/fsdp/_runtime_utils.py, _post_backward_hook and _reduce_grad): on the
// post-backward stream it casts the unsharded gradient to the reduce dtype when that differs from
// the parameter dtype (read q, write r bytes per parameter) and pre-divides it by the world-size
// factor (read and write r); the gathered parameters are views of its flat parameter. fsdp2
// (PyTorch fully_shard, _fsdp_collectives.py): on the reduce-scatter stream it copies the gradients
// into the reduce-scatter buffer (read q, write r: foreach_reduce_scatter_copy_in), and after every
// all-gather it copies the output out to the parameters on the compute stream (read and write q:
// foreach_all_gather_copy_out). megatron (Megatron-Core's FSDP): parameters and gradients live in
// the collectives' buckets, no pass. q is the 16-bit (or fp32) compute dtype, r the reduce dtype
// (grad_reduce_fp32). Default fsdp2, torchtitan's and PyTorch's current API.
// kernels: fused (Megatron-Core, Transformer Engine, NeMo, torch.compile'd models): one kernel per
// norm, rotary embedding, activation. eager: the PyTorch reference modules run op by op (HF
// transformers' and torchtitan's Llama without torch.compile): RMSNorm as an fp32 up-cast, square,
// mean, rsqrt, scale, down-cast and weight multiply; rotary embedding through fp32 complex
// products; SwiGLU as SiLU then a multiply. Each step reads and writes HBM (ops.cpp). LayerNorm and
// GELU are single PyTorch kernels either way.
#pragma once
#include <string>
#include <vector>

#include "config/yaml.hpp"
#include "models/workload/model_config.hpp"

namespace stacksim::workload {

enum class Precision { FP32, TF32, FP16, BF16, FP8 };
enum class Recompute { None, Selective, Full, Op };
enum class Schedule { OneFOneB, GPipe, DualPipe };  // 1F1B is interleaved when vp > 1
enum class Kernels { Fused, Eager };
enum class CpComm { P2P, AllGather, AllToAll };
enum class EpDispatch { AllToAll, DeepEP };
enum class FsdpImpl { Fsdp2, Fsdp1, Megatron };
enum class Fp8Recipe { Delayed, Current, Mxfp8 };
// Bits of ParallelPlan::recompute_modules (and of the forward ops each module covers).
enum RecomputeModule : unsigned {
  kRecomputeCoreAttn = 1u << 0,
  kRecomputeLayernorm = 1u << 1,
  kRecomputeMlaUpProj = 1u << 2,
  kRecomputeMoeAct = 1u << 3,
  kRecomputeMlp = 1u << 4,
  kRecomputeMoe = 1u << 5,
  kRecomputeSharedExperts = 1u << 6,
};

// Bits of ParallelPlan::cuda_graphs (and of the ops each scope captures, Op::graph_scope).
enum GraphScope : unsigned {
  kGraphAttn = 1u << 0,
  kGraphMlp = 1u << 1,
  kGraphMoeRouter = 1u << 2,
  kGraphMoePreprocess = 1u << 3,
  kGraphFull = 1u << 4,  // every layer, the embedding and the head
};
// "none", "full", or the scopes' names, comma-separated.
std::string cuda_graphs_name(unsigned scopes);

const char* precision_name(Precision p);
const char* recompute_name(Recompute r);
// The module names of RecomputeModule bits, comma-separated in their declaration order.
std::string recompute_modules_name(unsigned modules);
// The RecomputeModule bit of a module name as Megatron-Core's --recompute-modules spells it
// (core_attn, layernorm, mla_up_proj, moe_act, mlp, moe, shared_experts); 0 when unknown.
unsigned recompute_module_bit(const std::string& name);

struct ParallelPlan {
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, vp = 1;
  int etp = 0;  // expert tensor parallel size: 0 = tp, or 1 with tp > 1 (MoE parallel folding)
  bool sequence_parallel = false;
  int micro_batch = 1;
  int global_batch = 1;
  Recompute recompute = Recompute::None;
  int recompute_layers = 0;                         // full: layers recomputed per model chunk (0 = all)
  unsigned recompute_modules = kRecomputeCoreAttn;  // selective: RecomputeModule bits
  bool recomputes(unsigned modules) const { return recompute == Recompute::Selective && (recompute_modules & modules); }
  int zero = 0;
  Precision precision = Precision::BF16;
  Schedule schedule = Schedule::OneFOneB;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool async_tp_backward = true;
  bool grad_reduce_fp32 = false;
  bool autocast = false;
  bool overlap_p2p_comm = false;
  bool p2p_scatter_gather = false;
  bool tp_comm_overlap = false;
  bool ep_overlap = false;  // Megatron-Core's overlap_moe_expert_parallel_comm (F&B pairs)
  Kernels kernels = Kernels::Fused;
  unsigned cuda_graphs = 0;  // GraphScope bits (0 = every kernel launched by the host)
  CpComm cp_comm = CpComm::P2P;
  EpDispatch ep_dispatch = EpDispatch::AllToAll;
  FsdpImpl fsdp_impl = FsdpImpl::Fsdp2;       // zero 3: whose FSDP (their element-wise passes differ)
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;  // fp8: Transformer Engine's quantisation recipe
  double optimizer_moment_bytes = 4.0;        // optimizer_moments: bytes per moment (fp32 4, bf16 2, int8 1 + scales)
  bool fp8_swiglu_cache = false;              // MoE SwiGLU inputs stored in FP8
  bool chunked_loss = false;                  // fused linear cross-entropy over token chunks
  bool offload_activations = false;           // saved activations to host and back, per layer
  bool offload_optimizer = false;             // Adam on the host CPU (DeepSpeed ZeRO-Offload)
  bool offload_params = false;                // zero 3: 16-bit parameter shards in host memory
  int shard_size = 0;                         // ZeRO/FSDP shard group size over the dp*cp ranks; 0 = all of them
  int fsdp_gathers_per_layer = 1;             // zero 3: a layer's parameters in this many sequential all-gathers
  double dp_bucket_bytes = 80e6;
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  bool embedding_in_split = false;  // account_for_embedding_in_pipeline_split
  bool loss_in_split = false;       // account_for_loss_in_pipeline_split
  std::vector<int> stage_layers;    // layers per virtual stage (empty: even, or first/last above)

  int num_gpus() const { return tp * pp * dp * cp; }
  // Layers laid out other than evenly over the pp*vp virtual stages (see virtual_stage_bounds).
  bool uneven_layout() const {
    return first_stage_layers > 0 || last_stage_layers > 0 || !stage_layers.empty() || embedding_in_split ||
           loss_in_split;
  }
  // The compute dtype's bytes (q in fsdp_impl above): 16-bit, or 4 for fp32/tf32 training.
  double param_bytes_per_param() const {
    return precision == Precision::FP32 || precision == Precision::TF32 ? 4.0 : 2.0;
  }
  double grad_bytes_per_param() const { return grad_reduce_fp32 || autocast ? 4.0 : param_bytes_per_param(); }
  // The weights as the model holds them: fp32 under autocast, else the compute dtype.
  double weight_bytes_per_param() const { return autocast ? 4.0 : param_bytes_per_param(); }
  // What Adam reads and writes per parameter: the fp32 weights (the master copy, or under autocast
  // the model's own) and its two moments.
  double adam_state_bytes_per_param() const { return 4.0 + 2.0 * optimizer_moment_bytes; }
  // Optimizer state held per parameter: Adam's, less the weights under autocast (counted as weights).
  double optimizer_bytes_per_param() const { return adam_state_bytes_per_param() - (autocast ? 4.0 : 0.0); }
  int num_micro_batches() const { return global_batch / (micro_batch * dp); }
  // Bytes per parameter FSDP's element-wise passes move: over the unsharded gradient before each
  // reduce-scatter, and over the gathered parameters after each all-gather (fsdp_impl above).
  double fsdp_grad_prep_bytes_per_param() const {
    const double q = param_bytes_per_param(), r = grad_bytes_per_param();
    switch (fsdp_impl) {
      case FsdpImpl::Fsdp1:
        return (r != q ? q + r : 0.0) + 2.0 * r;
      case FsdpImpl::Fsdp2:
        return q + r;
      case FsdpImpl::Megatron:
        break;
    }
    return 0.0;
  }
  double fsdp_gather_copy_bytes_per_param() const {
    return fsdp_impl == FsdpImpl::Fsdp2 ? 2.0 * param_bytes_per_param() : 0.0;
  }
  // HBM bytes per element of quantising one 16-bit GEMM operand (fp8_recipe above).
  // `fp8_transpose`: the GPU's FP8 GEMMs take only the TN layout (Hopper, Ada), so a transposed
  // copy is written for the backward GEMMs.
  double fp8_quantize_bytes_per_element(bool fp8_transpose) const {
    const double read = 2.0, copies = fp8_transpose ? 2.0 : 1.0;
    switch (fp8_recipe) {
      case Fp8Recipe::Delayed:
        return read + copies;
      case Fp8Recipe::Current:
        return 2.0 * read + copies;
      case Fp8Recipe::Mxfp8:
        break;
    }
    return read + 2.0 * (1.0 + 1.0 / 32);  // rowwise and columnwise copies, one E8M0 scale per 32
  }
  bool sp() const { return sequence_parallel && tp > 1; }
  bool interleaved() const { return vp > 1; }
  bool dualpipe() const { return schedule == Schedule::DualPipe; }
  // Model chunks a pipeline rank holds: vp, or DualPipe's two directions.
  int chunks_per_rank() const { return dualpipe() ? 2 : vp; }
  // MoE parallel folding (Megatron-Core): experts are not split over tp; the tp ranks' own
  // (sequence-parallel) tokens go to experts of an ep group spanning tp, cp and dp.
  int expert_tp() const { return etp > 0 ? etp : tp; }
  bool experts_folded() const { return expert_tp() < tp; }
};

ParallelPlan parse_plan(const config::Node& parallelism);
// Throws InputError (at `where`, naming the key) saying what to change when the plan cannot run
// this model on `num_gpus` GPUs.
void check_plan(const ModelConfig& m, const ParallelPlan& p, int num_gpus, const config::Node& where);

}  // namespace stacksim::workload
