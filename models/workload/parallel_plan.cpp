#include "models/workload/parallel_plan.hpp"

#include "config/schema.hpp"
#include "models/workload/ops.hpp"  // max_layers_per_chunk

#include <algorithm>
#include <initializer_list>
#include <numeric>
#include <utility>

namespace stacksim::workload {
namespace {

std::string str(long long v) { return std::to_string(v); }

// Divisors of n up to `limit`, as "a, b, c".
std::string divisors(long long n, long long limit) {
  std::string out;
  for (long long d = 1; d <= std::min(n, limit); ++d)
    if (n % d == 0) out += (out.empty() ? "" : ", ") + str(d);
  return out;
}

// The value of an enumerated plan key: `fallback` when absent, else one of `choices`; anything
// else is an input error at the key ("unknown <what> '<value>'", with `fix`).
template <class E>
E choose(const config::Node& n, const std::string& key, const std::string& fallback,
         std::initializer_list<std::pair<const char*, E>> choices, const std::string& what, const std::string& fix) {
  const std::string v = n.string_or(key, fallback);
  for (const auto& [name, value] : choices)
    if (v == name) return value;
  n.fail(key, "unknown " + what + " '" + v + "'", fix);
}

}  // namespace

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP32:
      return "fp32";
    case Precision::TF32:
      return "tf32";
    case Precision::FP16:
      return "fp16";
    case Precision::BF16:
      return "bf16";
    case Precision::FP8:
      return "fp8";
  }
  return "bf16";
}

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::None:
      return "none";
    case Recompute::Selective:
      return "selective";
    case Recompute::Full:
      return "full";
    case Recompute::Op:
      return "op";
  }
  return "none";
}

namespace {
constexpr std::pair<const char*, unsigned> kRecomputeModuleNames[] = {{"core_attn", kRecomputeCoreAttn},
                                                                      {"layernorm", kRecomputeLayernorm},
                                                                      {"mla_up_proj", kRecomputeMlaUpProj},
                                                                      {"moe_act", kRecomputeMoeAct},
                                                                      {"mlp", kRecomputeMlp},
                                                                      {"moe", kRecomputeMoe},
                                                                      {"shared_experts", kRecomputeSharedExperts}};
}  // namespace

unsigned recompute_module_bit(const std::string& name) {
  for (const auto& [nm, bit] : kRecomputeModuleNames)
    if (name == nm) return bit;
  return 0;
}

std::string recompute_modules_name(unsigned modules) {
  std::string out;
  for (const auto& [name, bit] : kRecomputeModuleNames)
    if (modules & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

namespace {
const std::pair<const char*, unsigned> kGraphScopeNames[] = {
    {"attn", kGraphAttn}, {"mlp", kGraphMlp}, {"moe_router", kGraphMoeRouter}, {"moe_preprocess", kGraphMoePreprocess}};
}  // namespace

std::string cuda_graphs_name(unsigned scopes) {
  if (scopes == 0) return "none";
  if (scopes & kGraphFull) return "full";
  std::string out;
  for (const auto& [name, bit] : kGraphScopeNames)
    if (scopes & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

namespace {

// A count of at least 1 (sizes, batches), bounded so products stay in range.
int positive_int(const config::Node& n, const char* key, int fallback) {
  const long long v = n.optional_int(key).value_or(fallback);
  if (v < 1) n.fail(key, "must be at least 1, got " + str(v), "use a positive integer");
  if (v > (1 << 24)) n.fail(key, "is " + str(v) + ", beyond the supported 16777216", "use a realistic value");
  return static_cast<int>(v);
}

int non_negative_int(const config::Node& n, const char* key) {
  const long long v = n.optional_int(key).value_or(0);
  if (v < 0) n.fail(key, "must be >= 0, got " + str(v), "use 0 for an even split");
  return static_cast<int>(v);
}

// tp, pp, dp, cp, ep (and the expert layout), vp, micro and global batch.
void parse_sizes(const config::Node& n, ParallelPlan& p) {
  p.tp = positive_int(n, "tp", 1);
  p.pp = positive_int(n, "pp", 1);
  p.dp = positive_int(n, "dp", 1);
  p.cp = positive_int(n, "cp", 1);
  p.ep = positive_int(n, "ep", 1);
  if (n.has("etp")) p.etp = positive_int(n, "etp", p.tp);
  if (p.expert_tp() != p.tp && p.etp != 1)
    n.fail("etp",
           "expert tensor parallelism " + str(p.etp) + " is neither tp (" + str(p.tp) +
               ") nor 1; only those two expert layouts are modelled",
           "use etp: " + str(p.tp) +
               " (experts split like the dense layers) or etp: 1 (whole experts, MoE parallel folding)");
  p.vp = positive_int(n, "vp", 1);
  p.micro_batch = positive_int(n, "micro_batch", 1);
  if (!n.has("global_batch")) n.fail("global_batch", "missing", "add global_batch: <sequences per optimizer step>");
  p.global_batch = positive_int(n, "global_batch", 1);
}

// sequence parallelism, the recompute mode and the modules a selective recompute covers.
void parse_recompute(const config::Node& n, ParallelPlan& p) {
  const std::string rc = n.string_or("recompute", "none");
  p.sequence_parallel = n.bool_or("sequence_parallel", false);
  if (rc == "none")
    p.recompute = Recompute::None;
  else if (rc == "selective")
    p.recompute = Recompute::Selective;
  else if (rc == "full")
    p.recompute = Recompute::Full;
  else if (rc == "op")
    p.recompute = Recompute::Op;
  else
    n.fail("recompute", "unknown recompute mode '" + rc + "'", "use none, selective, full or op");
  if (n.has("recompute_modules")) {
    const config::Node list = n["recompute_modules"];
    const char* fix =
        "write e.g. recompute_modules: [core_attn, mla_up_proj] (core_attn, layernorm, mla_up_proj, moe_act, "
        "mlp, moe, shared_experts)";
    if (!list.is_sequence() || list.size() == 0)
      n.fail("recompute_modules", "must be a non-empty list of module names", fix);
    if (p.recompute != Recompute::Selective)
      n.fail("recompute_modules", "applies to recompute: selective only (recompute is " + rc + ")",
             "set recompute: selective, or remove recompute_modules");
    p.recompute_modules = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string name = list.at(i).as_string();
      const unsigned bit = recompute_module_bit(name);
      if (!bit) n.fail("recompute_modules", "unknown module '" + name + "'", fix);
      p.recompute_modules |= bit;
    }
  }
}

// cuda_graphs: none, full, or a list of scopes.
void parse_cuda_graphs(const config::Node& n, ParallelPlan& p) {
  if (n.has("cuda_graphs")) {
    const config::Node g = n["cuda_graphs"];
    const char* fix =
        "write cuda_graphs: none, cuda_graphs: full, or a list of scopes, e.g. [attn, moe_router, "
        "moe_preprocess] (attn, mlp, moe_router, moe_preprocess)";
    if (g.is_sequence()) {
      if (g.size() == 0) n.fail("cuda_graphs", "is an empty list", fix);
      for (size_t i = 0; i < g.size(); ++i) {
        const std::string name = g.at(i).as_string();
        unsigned bit = 0;
        for (const auto& [nm, b] : kGraphScopeNames)
          if (name == nm) bit = b;
        if (!bit) n.fail("cuda_graphs", "unknown scope '" + name + "'", fix);
        p.cuda_graphs |= bit;
      }
    } else {
      const std::string v = n.required_string("cuda_graphs");
      if (v == "full")
        p.cuda_graphs = kGraphFull;
      else if (v != "none") {
        for (const auto& [nm, b] : kGraphScopeNames)
          if (v == nm) p.cuda_graphs = b;
        if (p.cuda_graphs == 0) n.fail("cuda_graphs", "unknown value '" + v + "'", fix);
      }
    }
  }
}

// recompute_layers (full recompute of the first k layers per chunk) and the ZeRO stage.
void parse_recompute_layers_and_zero(const config::Node& n, ParallelPlan& p) {
  const std::string rc = n.string_or("recompute", "none");
  if (n.has("recompute_layers")) {
    const long long k = n.required_int("recompute_layers");
    if (k < 0)
      n.fail("recompute_layers", "must be >= 0, got " + str(k),
             "use 0 (every layer) or the layers to recompute per model chunk");
    if (p.recompute != Recompute::Full && k > 0)
      n.fail("recompute_layers", "applies to recompute: full only (recompute is " + rc + ")",
             "set recompute: full, or remove recompute_layers");
    p.recompute_layers = static_cast<int>(std::min<long long>(k, 1 << 24));
  }
  if (n.has("zero")) {
    if (n["zero"].as_string() == "fsdp") {
      p.zero = 3;
    } else {
      const long long z = n.required_int("zero");
      if (z < 0 || z > 3)
        n.fail("zero", "must be 0, 1, 2 or 3, got " + str(z), "use 0 (DDP), 1 (distributed optimizer), 2, or 3 / fsdp");
      p.zero = static_cast<int>(z);
    }
  }
}

// precision and pipeline schedule.
void parse_precision_and_schedule(const config::Node& n, ParallelPlan& p) {
  const std::string pr = n.string_or("precision", "bf16");
  if (pr == "fp32")
    p.precision = Precision::FP32;
  else if (pr == "tf32")
    p.precision = Precision::TF32;
  else if (pr == "fp16")
    p.precision = Precision::FP16;
  else if (pr == "bf16")
    p.precision = Precision::BF16;
  else if (pr == "fp8")
    p.precision = Precision::FP8;
  else
    n.fail("precision", "unknown precision '" + pr + "'", "use fp32, tf32, fp16, bf16 or fp8");
  const std::string sc = n.string_or("schedule", "1f1b");
  if (sc == "1f1b") {
    p.schedule = Schedule::OneFOneB;
  } else if (sc == "interleaved") {
    if (p.vp < 2)
      n.fail("schedule", "the interleaved schedule needs vp >= 2 model chunks per rank",
             "set vp: 2 (or more), or schedule: 1f1b");
    p.schedule = Schedule::OneFOneB;
  } else if (sc == "gpipe") {
    if (p.vp > 1)
      n.fail("schedule", "gpipe has no interleaved variant (vp = " + str(p.vp) + ")",
             "use schedule: 1f1b with vp > 1, or vp: 1");
    p.schedule = Schedule::GPipe;
  } else if (sc == "dualpipe") {
    if (p.vp > 1)
      n.fail("schedule", "dualpipe holds its two chunks per rank itself (vp = " + str(p.vp) + ")", "set vp: 1");
    p.schedule = Schedule::DualPipe;
  } else {
    n.fail("schedule", "unknown schedule '" + sc + "'", "use 1f1b, interleaved (with vp > 1), gpipe or dualpipe");
  }
}

// what overlaps what, and which implementation of each exchange and kernel family runs.
void parse_overlap_and_kernels(const config::Node& n, ParallelPlan& p) {
  p.overlap_grad_reduce = n.bool_or("overlap_grad_reduce", true);
  p.overlap_param_gather = n.bool_or("overlap_param_gather", true);
  p.async_tp_backward = n.bool_or("async_tp_backward", true);
  p.grad_reduce_fp32 = n.bool_or("grad_reduce_fp32", false);
  p.autocast = n.bool_or("autocast", false);
  if (p.autocast && (p.precision == Precision::FP32 || p.precision == Precision::TF32))
    n.fail(
        "autocast",
        "casts an fp32 model to a 16-bit compute dtype, but precision is " + std::string(precision_name(p.precision)),
        "set precision: bf16 (or fp16), or remove autocast");
  if (p.autocast && p.zero >= 3)
    n.fail("autocast",
           "does not combine with zero 3 / FSDP, whose mixed precision casts the fp32 shards at each gather",
           "remove autocast: zero: 3 already models FSDP's fp32 parameters and 16-bit gathers");
  p.overlap_p2p_comm = n.bool_or("overlap_p2p_comm", p.vp > 1);
  p.p2p_scatter_gather = n.bool_or("p2p_scatter_gather", false);
  p.tp_comm_overlap = n.bool_or("tp_comm_overlap", false);
  p.ep_overlap = n.bool_or("ep_overlap", false);
  p.cp_comm = choose<CpComm>(
      n, "cp_comm", "p2p", {{"p2p", CpComm::P2P}, {"all_gather", CpComm::AllGather}, {"all_to_all", CpComm::AllToAll}},
      "context-parallel exchange",
      "use p2p (ring, overlapped with attention; Transformer Engine's default), all_gather or "
      "all_to_all (DeepSpeed-Ulysses)");
  p.ep_dispatch = choose<EpDispatch>(
      n, "ep_dispatch", "alltoall", {{"alltoall", EpDispatch::AllToAll}, {"deepep", EpDispatch::DeepEP}},
      "MoE token dispatcher", "use alltoall (Megatron-Core's default) or deepep (once per destination node)");
  p.kernels =
      choose<Kernels>(n, "kernels", "fused", {{"fused", Kernels::Fused}, {"eager", Kernels::Eager}},
                      "kernel implementation", "use fused (Megatron/TE, torch.compile) or eager (PyTorch op by op)");
  p.fsdp_impl = choose<FsdpImpl>(
      n, "fsdp_impl", "fsdp2",
      {{"fsdp2", FsdpImpl::Fsdp2}, {"fsdp1", FsdpImpl::Fsdp1}, {"megatron", FsdpImpl::Megatron}}, "FSDP implementation",
      "use fsdp2 (PyTorch fully_shard, the default), fsdp1 (FullyShardedDataParallel) or megatron (Megatron-Core's "
      "FSDP)");
  p.fp8_recipe = choose<Fp8Recipe>(
      n, "fp8_recipe", "delayed",
      {{"delayed", Fp8Recipe::Delayed}, {"current", Fp8Recipe::Current}, {"mxfp8", Fp8Recipe::Mxfp8}}, "FP8 recipe",
      "use delayed (per-tensor scale from the amax history, the default), current (per-tensor scale from the "
      "tensor's own amax) or mxfp8 (per-32-value scales, Blackwell)");
}

// optimizer state dtype, offloads, FP8 caches, sharding and bucket sizes.
void parse_memory_options(const config::Node& n, ParallelPlan& p) {
  // int8: one byte per value and an fp32 absmax per block of 256 (bitsandbytes' and torchao's block size).
  p.optimizer_moment_bytes =
      choose<double>(n, "optimizer_moments", "fp32", {{"fp32", 4.0}, {"bf16", 2.0}, {"int8", 1.0 + 4.0 / 256}},
                     "optimizer moment dtype", "use fp32 (the default), bf16 or int8");
  p.fp8_swiglu_cache = n.bool_or("fp8_swiglu_cache", false);
  p.chunked_loss = n.bool_or("chunked_loss", false);
  p.offload_activations = n.bool_or("offload_activations", false);
  p.offload_optimizer = n.bool_or("offload_optimizer", false);
  if (p.offload_optimizer && p.zero < 1)
    n.fail("offload_optimizer", "offloads the optimizer's shard (DeepSpeed's ZeRO-Offload), but zero is 0",
           "set zero: 1, 2 or 3, or remove offload_optimizer");
  p.offload_params = n.bool_or("offload_params", false);
  if (p.offload_params && (p.zero < 3 || !p.offload_optimizer))
    n.fail("offload_params",
           "keeps the 16-bit parameter shards in host memory, which needs zero 3 and the optimizer on the host "
           "(zero is " +
               str(p.zero) + ", offload_optimizer " + (p.offload_optimizer ? "true" : "false") + ")",
           "set zero: 3 and offload_optimizer: true, or remove offload_params");
  if (p.fp8_swiglu_cache && p.precision != Precision::FP8)
    n.fail("fp8_swiglu_cache", "needs FP8 training (precision is " + std::string(precision_name(p.precision)) + ")",
           "set precision: fp8, or remove fp8_swiglu_cache");
  p.shard_size = n.has("shard_size") ? positive_int(n, "shard_size", 0) : 0;
  p.fsdp_gathers_per_layer = n.has("fsdp_gathers_per_layer") ? positive_int(n, "fsdp_gathers_per_layer", 1) : 1;
  if (p.fsdp_gathers_per_layer > 64)
    n.fail("fsdp_gathers_per_layer", "at most 64 gathers per layer",
           "use the layer's weight matrices (e.g. 7 for a Llama layer)");
  p.dp_bucket_bytes = 2.0 * std::max(40e6, 1e6 * p.dp);
  if (n.has("dp_bucket_size"))
    p.dp_bucket_bytes = n.positive("dp_bucket_size", n.required_quantity("dp_bucket_size", sim::Dimension::Bytes, 1.0));
}

// how layers are laid out over the pipeline stages.
void parse_stage_layout(const config::Node& n, ParallelPlan& p) {
  p.first_stage_layers = non_negative_int(n, "first_stage_layers");
  p.last_stage_layers = non_negative_int(n, "last_stage_layers");
  p.embedding_in_split = n.bool_or("account_for_embedding_in_pipeline_split", false);
  p.loss_in_split = n.bool_or("account_for_loss_in_pipeline_split", false);
  if ((p.embedding_in_split || p.loss_in_split) &&
      (p.first_stage_layers > 0 || p.last_stage_layers > 0 || n.has("stage_layers")))
    n.fail(p.embedding_in_split ? "account_for_embedding_in_pipeline_split" : "account_for_loss_in_pipeline_split",
           "given together with an explicit layout (first_stage_layers/last_stage_layers/stage_layers)",
           "use one or the other");
  if (n.has("stage_layers")) {
    const config::Node list = n["stage_layers"];
    if (!list.is_sequence() || list.size() == 0)
      n.fail("stage_layers", "must be a list of layer counts, one per virtual stage",
             "write e.g. stage_layers: [3, 4, 4, 3]");
    for (size_t i = 0; i < list.size(); ++i) {
      const long long v = list.at(i).as_int();
      if (v < 0 || v > 10'000)
        n.fail("stage_layers", "entry " + str(static_cast<long long>(i)) + " is " + str(v), "use 0..layers");
      p.stage_layers.push_back(static_cast<int>(v));
    }
    if (p.first_stage_layers > 0 || p.last_stage_layers > 0)
      n.fail("stage_layers", "given together with first_stage_layers/last_stage_layers", "use one or the other");
  }
}

}  // namespace

ParallelPlan parse_plan(const config::Node& n) {
  n.require_map();
  n.check_keys(config::scenario_keys("parallelism"));
  ParallelPlan p;
  parse_sizes(n, p);
  parse_recompute(n, p);
  parse_cuda_graphs(n, p);
  parse_recompute_layers_and_zero(n, p);
  parse_precision_and_schedule(n, p);
  parse_overlap_and_kernels(n, p);
  parse_memory_options(n, p);
  parse_stage_layout(n, p);
  return p;
}

namespace {

// Features the model or the schedule cannot carry (Megatron-Core refuses these too).
void check_features_against_model(const ModelConfig& m, const ParallelPlan& p, const config::Node& n) {
  // Modules the model does not have (Megatron-Core refuses these too).
  if (p.recompute == Recompute::Selective) {
    if ((p.recompute_modules & kRecomputeMlaUpProj) && !m.is_mla())
      n.fail("recompute_modules",
             "mla_up_proj needs multi-latent attention (model.mla), which this model does not have",
             "remove mla_up_proj");
    if ((p.recompute_modules & (kRecomputeMoe | kRecomputeMoeAct)) && !m.is_moe())
      n.fail("recompute_modules", "moe and moe_act need an MoE model (model.moe)", "remove them, or use mlp");
    if ((p.recompute_modules & kRecomputeSharedExperts) && m.moe.shared_experts <= 0)
      n.fail("recompute_modules", "shared_experts needs shared experts (model.moe.shared_experts)",
             "remove shared_experts");
  }
  if (p.offload_activations && p.dualpipe())
    n.fail("offload_activations", "is not modelled with dualpipe (its split backwards)", "remove offload_activations");
  if (p.ep_overlap) {
    if (!m.is_moe() || p.ep < 2)
      n.fail("ep_overlap",
             "overlaps expert-parallel all-to-alls, but " +
                 std::string(m.is_moe() ? "ep is " + str(p.ep) : "the model has no MoE layers"),
             m.is_moe() ? "set ep > 1, or remove ep_overlap" : "remove ep_overlap");
    if (p.dualpipe())
      n.fail("ep_overlap", "dualpipe already runs its forward and backward chunks in pairs", "remove ep_overlap");
    if (p.schedule == Schedule::GPipe)
      n.fail("ep_overlap", "pairs the 1F1B steady state's forwards and backwards; gpipe has none",
             "use schedule: 1f1b");
    if (p.pp > 1 && p.vp < 2)
      n.fail("ep_overlap",
             "needs interleaving (vp > 1) when pp > 1 (Megatron-Core's rule for overlap_moe_expert_parallel_comm), vp "
             "is " +
                 str(p.vp),
             "set vp > 1, or remove ep_overlap");
  }
  if ((p.cuda_graphs & (kGraphMoeRouter | kGraphMoePreprocess)) && !m.is_moe())
    n.fail("cuda_graphs", "moe_router and moe_preprocess need an MoE model (model.moe)",
           "remove them, or use attn and mlp");
  if ((p.cuda_graphs & kGraphFull) && m.is_moe() && m.moe.capacity_factor <= 0)
    n.fail("cuda_graphs",
           "full cannot capture a dropless MoE layer: its dispatch reads the routed token counts back to the host "
           "(data-dependent shapes)",
           "set model.moe.capacity_factor (drop and pad to a static size), or capture scopes: [attn, moe_router, "
           "moe_preprocess]");
  if (p.fp8_swiglu_cache && !(m.is_moe() && m.mlp == Mlp::SwiGlu))
    n.fail("fp8_swiglu_cache", "needs an MoE model with a SwiGLU MLP (the routed experts' SwiGLU inputs)",
           "remove fp8_swiglu_cache");
}

// The plan covers the cluster, and tensor parallelism splits whole heads and columns.
void check_sizes(const ModelConfig& m, const ParallelPlan& p, int num_gpus, const config::Node& n) {
  // In 64-bit: absurd sizes must produce a message, not an overflow.
  const long long product = 1LL * p.tp * p.pp * p.dp * p.cp;
  if (product != num_gpus) {
    const long long rest = 1LL * p.tp * p.pp * p.cp;
    const std::string fix =
        num_gpus % rest == 0
            ? "use dp: " + str(num_gpus / rest) + " (= " + str(num_gpus) + " / (tp*pp*cp)), or change the cluster size"
            : "tp*pp*cp = " + str(rest) + " does not divide " + str(num_gpus) +
                  " GPUs: change tp, pp or cp so that it does, then dp = GPUs / (tp*pp*cp)";
    n.fail("dp",
           "tp*pp*dp*cp = " + str(p.tp) + "*" + str(p.pp) + "*" + str(p.dp) + "*" + str(p.cp) + " = " + str(product) +
               " but the cluster has " + str(num_gpus) + " GPUs",
           fix);
  }
  // Megatron splits whole heads and whole K/V groups over tensor parallelism.
  const long long head_gcd = std::gcd(m.heads, m.kv_heads);
  if (m.heads % p.tp != 0)
    n.fail("tp", "attention heads (" + str(m.heads) + ") are not divisible by tp (" + str(p.tp) + ")",
           "use tp in {" + divisors(head_gcd, 64) + "}");
  if (m.kv_heads % p.tp != 0)
    n.fail("tp", "kv_heads (" + str(m.kv_heads) + ") are not divisible by tp (" + str(p.tp) + ")",
           "use tp in {" + divisors(head_gcd, 64) + "} (Megatron needs whole K/V groups per tensor-parallel rank)");
  // Ulysses splits each tensor-parallel rank's heads over the context-parallel ranks.
  if (p.cp > 1 && p.cp_comm == CpComm::AllToAll && (m.heads / p.tp) % p.cp != 0)
    n.fail("cp",
           "cp_comm all_to_all (Ulysses) splits the " + str(m.heads / p.tp) +
               " attention heads per tensor-parallel rank over cp (" + str(p.cp) + "), which does not divide them",
           "use a cp that divides heads/tp, or cp_comm: p2p");
  // Column-parallel linears split whole output columns (Megatron's divide() asserts it).
  if (m.ffn_hidden % p.tp != 0)
    n.fail("tp", "ffn_hidden (" + str(m.ffn_hidden) + ") is not divisible by tp (" + str(p.tp) + ")",
           "use tp in {" + divisors(std::gcd(m.ffn_hidden, head_gcd), 64) + "}");
  if (m.is_moe() && m.moe.expert_ffn_hidden % p.tp != 0)
    n.fail("tp",
           "moe.expert_ffn_hidden (" + str(m.moe.expert_ffn_hidden) + ") is not divisible by tp (" + str(p.tp) + ")",
           "use tp in {" + divisors(std::gcd(m.moe.expert_ffn_hidden, head_gcd), 64) + "}");
}

// Layers over the pipeline's virtual stages: explicit, with the embedding/loss, first/last, or even.
void check_stage_layout(const ModelConfig& m, const ParallelPlan& p, const config::Node& n) {
  const int V = p.pp * p.vp;
  if (!p.stage_layers.empty()) {
    long long sum = 0;
    for (int l : p.stage_layers) sum += l;
    if (static_cast<int>(p.stage_layers.size()) != V)
      n.fail("stage_layers",
             "has " + str(static_cast<long long>(p.stage_layers.size())) + " entries, but pp*vp = " + str(V) +
                 " virtual stages",
             "give one layer count per virtual stage");
    if (sum != m.layers)
      n.fail("stage_layers", "adds up to " + str(sum) + " layers, but the model has " + str(m.layers),
             "make the counts add up to the model's layers");
    for (int s = 0; s < p.pp; ++s) {
      int rank_layers = 0;
      for (int c = 0; c < p.vp; ++c) rank_layers += p.stage_layers[c * p.pp + s];
      if (rank_layers == 0)
        n.fail("stage_layers", "pipeline rank " + str(s) + " gets no layer",
               "give every pipeline rank at least one layer");
    }
  } else if (p.embedding_in_split || p.loss_in_split) {
    const int extra = p.embedding_in_split + p.loss_in_split;
    const char* key =
        p.embedding_in_split ? "account_for_embedding_in_pipeline_split" : "account_for_loss_in_pipeline_split";
    if ((m.layers + extra) % V != 0)
      n.fail(key, "layers + " + str(extra) + " = " + str(m.layers + extra) + " do not divide by pp*vp = " + str(V),
             "choose pp and vp whose product divides " + str(m.layers + extra) + ", or drop the flag");
    if (p.vp == 1 && (m.layers + extra) / V == 1)
      n.fail(key, "with one layer per stage the first or last pipeline rank would hold no transformer layer",
             "use fewer pipeline stages");
  } else if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    const int fixed = p.first_stage_layers + p.last_stage_layers;
    const int middle = V - (p.first_stage_layers > 0) - (p.last_stage_layers > 0);
    if (middle < 1 || fixed >= m.layers || (m.layers - fixed) % middle != 0)
      n.fail("first_stage_layers",
             "with first/last stage layers " + str(p.first_stage_layers) + "/" + str(p.last_stage_layers) +
                 " the remaining " + str(m.layers - fixed) + " layers do not split evenly over " + str(middle) +
                 " middle virtual stages",
             "choose first/last stage layers so that the rest divides by pp*vp minus the fixed stages");
  } else if (m.layers % V != 0) {
    std::string options;
    for (int d = 1; d <= std::min(m.layers, 128); ++d)
      if (m.layers % (d * p.vp) == 0) options += (options.empty() ? "" : ", ") + str(d);
    n.fail(
        "pp",
        "layers (" + str(m.layers) + ") are not divisible by pp*vp = " + str(p.pp) + "*" + str(p.vp) + " = " + str(V),
        "use pp in {" + options + "} with vp " + str(p.vp) + " (or vp in {" +
            divisors(m.layers / std::gcd(m.layers, p.pp), 16) + "} with pp " + str(p.pp) +
            "), or first_stage_layers/last_stage_layers for an uneven split");
  }
}

// Micro-batches, recompute ranges, sharding and what each schedule needs of them.
void check_batches_and_schedule(const ModelConfig& m, const ParallelPlan& p, const config::Node& n) {
  if (p.recompute_layers > 0) {
    const int per_chunk = max_layers_per_chunk(m, p);
    if (p.recompute_layers > per_chunk)
      n.fail("recompute_layers",
             "is " + str(p.recompute_layers) + " but a model chunk has only " + str(per_chunk) +
                 " layers (layers / (pp*vp))",
             "use recompute_layers in 1.." + str(per_chunk) + ", or 0 for every layer");
  }
  if (p.vp > 1 && p.pp < 2) n.fail("vp", "interleaving (vp > 1) needs pipeline parallelism", "set vp: 1, or pp >= 2");
  if (p.shard_size > 0) {
    const int span = p.dp * p.cp;
    if (p.zero == 0)
      n.fail("shard_size", "shards ZeRO/FSDP state, but zero is 0", "set zero: 1, 2 or 3, or drop shard_size");
    if (span % p.shard_size != 0)
      n.fail("shard_size", "shard_size (" + str(p.shard_size) + ") does not divide dp*cp (" + str(span) + ")",
             "use shard_size in {" + divisors(span, 1 << 20) + "}");
    if (p.ep > 1 && p.shard_size != span)
      n.fail("shard_size", "hybrid sharding with expert parallelism is not modelled", "drop shard_size, or set ep: 1");
  }
  if (p.tp_comm_overlap && p.tp > 1 && !p.sequence_parallel)
    n.fail("tp_comm_overlap",
           "pipelines the sequence-parallel all-gathers and reduce-scatters with their GEMMs, but "
           "sequence_parallel is false",
           "set sequence_parallel: true, or tp_comm_overlap: false");
  if (p.global_batch % (1LL * p.micro_batch * p.dp) != 0) {
    const long long unit = 1LL * p.micro_batch * p.dp;
    const long long lower = std::max(unit, p.global_batch / unit * unit);
    n.fail("global_batch",
           "global_batch (" + str(p.global_batch) + ") is not divisible by micro_batch*dp = " + str(p.micro_batch) +
               "*" + str(p.dp) + " = " + str(unit),
           "use global_batch " + str(lower) + " or " + str(lower + unit) + " (a multiple of micro_batch*dp)");
  }
  // Megatron's interleaved schedule runs micro-batches in groups of pp.
  const int mbs = p.num_micro_batches();
  if (mbs > 65536)
    n.fail("global_batch",
           "gives " + str(mbs) + " micro-batches per data-parallel replica; stacksim replays at most 65536",
           "use a larger micro_batch or dp, or a smaller global_batch");
  if (p.vp > 1 && mbs % p.pp != 0) {
    const int want = std::max(p.pp, (mbs + p.pp - 1) / p.pp * p.pp);
    n.fail("global_batch",
           "interleaving needs the micro-batches per replica (global_batch / (micro_batch*dp) = " + str(mbs) + ") " +
               (mbs < p.pp ? "to be at least" : "to be a multiple of") + " pp (" + str(p.pp) + ")",
           "use global_batch " + str(static_cast<long long>(want) * p.micro_batch * p.dp) + " (" + str(want) +
               " micro-batches), or vp: 1");
  }
  if (p.dualpipe()) {
    if (p.pp < 2 || p.pp % 2 != 0)
      n.fail("pp", "dualpipe pairs pipeline rank r with rank pp-1-r, so pp must be even (pp = " + str(p.pp) + ")",
             "use an even pp, or schedule: 1f1b");
    if (mbs % 2 != 0 || mbs < 2 * p.pp) {
      const int want = std::max(2 * p.pp, mbs + (mbs % 2));
      n.fail("global_batch",
             "dualpipe feeds half the micro-batches from each end: it needs an even number of at least 2*pp = " +
                 str(2 * p.pp) + " per replica (global_batch / (micro_batch*dp) = " + str(mbs) + ")",
             "use global_batch " + str(static_cast<long long>(want) * p.micro_batch * p.dp) + " (" + str(want) +
                 " micro-batches)");
    }
    if (p.zero >= 3)
      n.fail("zero", "dualpipe with ZeRO-3/FSDP is not modelled (each rank holds two stages of its own)",
             "use zero: 1 or 2 (DeepSeek-V3 ran ZeRO-1)");
  }
}

// Context-parallel chunks and how experts are carved out of the other dimensions.
void check_context_and_experts(const ModelConfig& m, const ParallelPlan& p, const config::Node& n) {
  // Load-balanced context parallelism cuts the sequence into 2*cp chunks (Megatron-Core, TE).
  if (p.cp > 1 && m.seq_len % (2 * p.cp) != 0)
    n.fail("cp",
           "seq_len (" + str(m.seq_len) + ") is not divisible by 2*cp = " + str(2 * p.cp) +
               " (context parallelism splits the sequence into 2*cp chunks)",
           "use a cp with 2*cp dividing seq_len");
  // Expert parallelism (Megatron-Core's MoE parallel folding: the expert layers' etp x ep x edp
  // reuse the tp x cp x dp ranks of the dense layers). With etp = tp each EP group is ep ranks of
  // the same tp coordinate along cp*dp, so ep must divide cp*dp; with etp = 1 (whole experts) the
  // group runs along tp, then cp, then dp, so ep must divide tp*cp*dp. Whole experts on each EP rank.
  if (p.experts_folded() && !m.is_moe()) n.fail("etp", "expert tensor parallelism needs an MoE model", "drop etp");
  if (p.experts_folded() && !p.sequence_parallel)
    n.fail("etp",
           "etp: 1 with tp > 1 routes each tp rank's own sequence-parallel tokens, but sequence_parallel is false",
           "set sequence_parallel: true (Megatron-Core requires it for MoE with tp > 1), or etp: " + str(p.tp));
  if (p.ep > 1) {
    if (!m.is_moe()) n.fail("ep", "expert parallelism (ep = " + str(p.ep) + ") needs an MoE model", "set ep: 1");
    const int ep_span = p.dp * p.cp * (p.experts_folded() ? p.tp : 1);
    const std::string span_name = p.experts_folded() ? "tp*cp*dp" : "dp*cp";
    const std::string span_parts =
        p.experts_folded() ? str(p.tp) + "*" + str(p.cp) + "*" + str(p.dp) : str(p.dp) + "*" + str(p.cp);
    const std::string fix = "use ep in {" + divisors(std::gcd(m.moe.experts, ep_span), 1024) +
                            "} (dividing both experts and " + span_name + ")" +
                            (p.experts_folded() || p.tp == 1 ? "" : ", or etp: 1 to carve ep out of tp*cp*dp");
    if (m.moe.experts % p.ep != 0)
      n.fail("ep", "experts (" + str(m.moe.experts) + ") are not divisible by ep (" + str(p.ep) + ")", fix);
    if (ep_span % p.ep != 0)
      n.fail("ep",
             "ep (" + str(p.ep) + ") must divide " + span_name + " (" + span_parts +
                 "): expert parallelism is carved out of " +
                 (p.experts_folded() ? "tensor, context and data" : "data and context") + " parallelism",
             fix);
  }
}

}  // namespace

void check_plan(const ModelConfig& m, const ParallelPlan& p, int num_gpus, const config::Node& n) {
  check_features_against_model(m, p, n);
  check_sizes(m, p, num_gpus, n);
  check_stage_layout(m, p, n);
  check_batches_and_schedule(m, p, n);
  check_context_and_experts(m, p, n);
}

}  // namespace stacksim::workload
