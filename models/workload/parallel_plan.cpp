#include "models/workload/parallel_plan.hpp"

#include <algorithm>

namespace stacksim::workload {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP32: return "fp32";
    case Precision::TF32: return "tf32";
    case Precision::FP16: return "fp16";
    case Precision::BF16: return "bf16";
    case Precision::FP8: return "fp8";
  }
  return "bf16";
}

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "none";
}

ParallelPlan parse_plan(const config::Node& n) {
  n.require_map();
  n.check_keys({"tp", "pp", "dp", "cp", "ep", "vp", "sequence_parallel", "micro_batch", "global_batch", "recompute",
                "zero", "precision", "schedule", "overlap_grad_reduce", "overlap_param_gather", "dp_bucket_size",
                "first_stage_layers", "last_stage_layers"});
  ParallelPlan p;
  auto positive_int = [&](const char* key, int fallback) {
    const long long v = n.optional_int(key).value_or(fallback);
    if (v < 1) n.fail(key, "must be at least 1, got " + std::to_string(v), "use a positive integer");
    return static_cast<int>(v);
  };
  p.tp = positive_int("tp", 1);
  p.pp = positive_int("pp", 1);
  p.dp = positive_int("dp", 1);
  p.cp = positive_int("cp", 1);
  p.ep = positive_int("ep", 1);
  p.vp = positive_int("vp", 1);
  p.micro_batch = positive_int("micro_batch", 1);
  if (!n.has("global_batch")) n.fail("global_batch", "missing", "add global_batch: <sequences per optimizer step>");
  p.global_batch = positive_int("global_batch", 1);
  p.sequence_parallel = n.bool_or("sequence_parallel", false);
  const std::string rc = n.string_or("recompute", "none");
  if (rc == "none") p.recompute = Recompute::None;
  else if (rc == "selective") p.recompute = Recompute::Selective;
  else if (rc == "full") p.recompute = Recompute::Full;
  else n.fail("recompute", "unknown recompute mode '" + rc + "'", "use none, selective, full (or auto)");
  const long long z = n.optional_int("zero").value_or(0);
  if (z < 0 || z > 3) n.fail("zero", "must be 0, 1, 2 or 3", "use 0 (DDP), 1 (distributed optimizer), 2, or 3 (FSDP)");
  p.zero = static_cast<int>(z);
  const std::string pr = n.string_or("precision", "bf16");
  if (pr == "fp32") p.precision = Precision::FP32;
  else if (pr == "tf32") p.precision = Precision::TF32;
  else if (pr == "fp16") p.precision = Precision::FP16;
  else if (pr == "bf16") p.precision = Precision::BF16;
  else if (pr == "fp8") p.precision = Precision::FP8;
  else n.fail("precision", "unknown precision '" + pr + "'", "use fp32, tf32, fp16, bf16 or fp8");
  const std::string sc = n.string_or("schedule", "1f1b");
  if (sc == "1f1b" || sc == "interleaved") p.schedule = Schedule::OneFOneB;
  else if (sc == "gpipe") p.schedule = Schedule::GPipe;
  else n.fail("schedule", "unknown schedule '" + sc + "'", "use 1f1b or gpipe (interleaving follows from vp > 1)");
  p.overlap_grad_reduce = n.bool_or("overlap_grad_reduce", true);
  p.overlap_param_gather = n.bool_or("overlap_param_gather", true);
  p.dp_bucket_bytes = 2.0 * std::max(40e6, 1e6 * p.dp);
  if (n.has("dp_bucket_size"))
    p.dp_bucket_bytes = n.positive("dp_bucket_size", n.required_quantity("dp_bucket_size", sim::Dimension::Bytes, 1.0));
  p.first_stage_layers = static_cast<int>(n.optional_int("first_stage_layers").value_or(0));
  p.last_stage_layers = static_cast<int>(n.optional_int("last_stage_layers").value_or(0));
  return p;
}

void check_plan(const ModelConfig& m, const ParallelPlan& p, int num_gpus, const config::Node& n) {
  const int product = p.tp * p.pp * p.dp * p.cp;
  if (product != num_gpus) {
    std::string fix = "make tp*pp*dp*cp equal the cluster's GPU count";
    const int rest = p.tp * p.pp * p.cp;
    if (num_gpus % rest == 0) fix = "use dp: " + std::to_string(num_gpus / rest) + " (or change the cluster size)";
    n.fail("dp", "tp*pp*dp*cp = " + std::to_string(p.tp) + "*" + std::to_string(p.pp) + "*" + std::to_string(p.dp) +
                     "*" + std::to_string(p.cp) + " = " + std::to_string(product) + " but the cluster has " +
                     std::to_string(num_gpus) + " GPUs", fix);
  }
  if (m.heads % p.tp != 0)
    n.fail("tp", "heads (" + std::to_string(m.heads) + ") are not divisible by tp (" + std::to_string(p.tp) + ")",
           "use a tp that divides the number of attention heads");
  if (m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0)
    n.fail("tp", "kv_heads (" + std::to_string(m.kv_heads) + ") and tp (" + std::to_string(p.tp) + ") do not divide",
           "use a tp that divides kv_heads (or a multiple of it, replicating K/V heads)");
  const int V = p.pp * p.vp;
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    const int fixed = p.first_stage_layers + p.last_stage_layers;
    const int middle = V - (p.first_stage_layers > 0) - (p.last_stage_layers > 0);
    if (middle < 1 || fixed >= m.layers || (m.layers - fixed) % middle != 0)
      n.fail("first_stage_layers", "the remaining " + std::to_string(m.layers - fixed) + " layers do not split evenly over " +
                                       std::to_string(middle) + " middle stages",
             "choose first/last stage layers so that the rest divides by the middle stages");
  } else if (m.layers % V != 0) {
    std::string options;
    for (int d = 1; d <= m.layers; ++d)
      if (m.layers % (d * p.vp) == 0 && d <= 64) options += (options.empty() ? "" : ", ") + std::to_string(d);
    n.fail("pp", "layers (" + std::to_string(m.layers) + ") are not divisible by pp*vp = " + std::to_string(V),
           "use pp in {" + options + "} with vp " + std::to_string(p.vp) +
               ", or first_stage_layers/last_stage_layers for an uneven split");
  }
  if (p.vp > 1) {
    if (p.pp < 2) n.fail("vp", "interleaving (vp > 1) needs pipeline parallelism", "set vp: 1 or pp >= 2");
  }
  if (p.global_batch % (p.micro_batch * p.dp) != 0)
    n.fail("global_batch", "global_batch (" + std::to_string(p.global_batch) + ") is not divisible by micro_batch*dp = " +
                               std::to_string(p.micro_batch * p.dp),
           "use a global_batch that is a multiple of " + std::to_string(p.micro_batch * p.dp));
  const int mbs = p.num_micro_batches();
  if (p.vp > 1 && mbs % p.pp != 0)
    n.fail("global_batch", "interleaving needs the micro-batches per replica (" + std::to_string(mbs) +
                               ") to be a multiple of pp (" + std::to_string(p.pp) + ")",
           "use a global_batch that gives a multiple of pp micro-batches, or vp: 1");
  if (m.seq_len % p.cp != 0) n.fail("cp", "seq_len is not divisible by cp", "use a cp that divides seq_len");
  if (p.ep > 1) {
    if (!m.is_moe()) n.fail("ep", "expert parallelism needs an MoE model", "set ep: 1");
    if (m.moe.experts % p.ep != 0) n.fail("ep", "experts are not divisible by ep", "use an ep that divides the experts");
    if (p.dp % p.ep != 0)
      n.fail("ep", "ep (" + std::to_string(p.ep) + ") must divide dp (" + std::to_string(p.dp) +
                       "): expert parallelism is carved out of data parallelism",
             "use an ep that divides dp");
  }
}

}  // namespace stacksim::workload
