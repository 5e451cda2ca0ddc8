#include "services/plan_space.hpp"

#include "services/training.hpp"

#include <algorithm>

#include "config/error.hpp"
#include "models/workload/memory.hpp"
#include "models/workload/ops.hpp"
#include "models/workload/pipeline_layout.hpp"

namespace stacksim::analysis {
namespace {

std::string join_counts(const std::vector<int>& counts) {
  std::string s = "[";
  for (size_t i = 0; i < counts.size(); ++i) s += (i ? "," : "") + std::to_string(counts[i]);
  return s + "]";
}

struct Shape {
  int tp, cp, pp, dp, vp, ep, etp, mb, zero;
  bool dualpipe;
};

// The scenario's plan with the shape's keys; the defaults that depend on them (bucket size,
// asynchronous pipeline sends) recomputed unless the scenario sets them.
workload::ParallelPlan apply_shape(const workload::ParallelPlan& base, const YAML::Node& yaml,
                                   const workload::ModelConfig& m, const Shape& x, std::vector<std::string>& sets) {
  workload::ParallelPlan p = base;
  p.tp = x.tp, p.cp = x.cp, p.pp = x.pp, p.dp = x.dp, p.vp = x.vp, p.ep = x.ep;
  p.etp = x.etp < x.tp ? 1 : 0;
  p.micro_batch = x.mb;
  p.zero = x.zero;
  // The scenario's offloads stay the user's choice; the parameter shards can live on the host
  // only when ZeRO-3 shards them (parse_memory_options' rule), so other stages keep them on the GPU.
  p.offload_params = base.offload_params && x.zero >= 3;
  p.sequence_parallel = x.tp > 1;
  p.schedule = x.dualpipe                                      ? workload::Schedule::DualPipe
               : base.schedule == workload::Schedule::DualPipe ? workload::Schedule::OneFOneB
                                                               : base.schedule;
  if (x.vp > 1 && p.schedule == workload::Schedule::GPipe) p.schedule = workload::Schedule::OneFOneB;
  if (!yaml["dp_bucket_size"]) p.dp_bucket_bytes = 2.0 * std::max(40e6, 1e6 * p.dp);
  if (!yaml["overlap_p2p_comm"]) p.overlap_p2p_comm = p.vp > 1;
  // The layout belongs to the plan: the scenario's own (for its pp) is replaced.
  const workload::PipelineLayout layout = workload::pipeline_layout(m.layers, x.pp * x.vp);
  p.first_stage_layers = layout.first > 0 ? layout.first : 0;
  p.last_stage_layers = layout.first > 0 ? layout.last : 0;
  p.stage_layers = layout.stage_layers;
  p.embedding_in_split = p.loss_in_split = false;
  const auto set = [&](const std::string& k, const std::string& v) { sets.push_back("parallelism." + k + "=" + v); };
  set("tp", std::to_string(x.tp)), set("pp", std::to_string(x.pp)), set("dp", std::to_string(x.dp));
  set("cp", std::to_string(x.cp)), set("vp", std::to_string(x.vp)), set("micro_batch", std::to_string(x.mb));
  set("zero", std::to_string(x.zero)), set("sequence_parallel", x.tp > 1 ? "true" : "false");
  if (base.offload_params && !p.offload_params) set("offload_params", "false");
  set("first_stage_layers", layout.first > 0 ? std::to_string(layout.first) : "null");
  set("last_stage_layers", layout.first > 0 ? std::to_string(layout.last) : "null");
  set("stage_layers", layout.stage_layers.empty() ? "null" : join_counts(layout.stage_layers));
  set("account_for_embedding_in_pipeline_split", "null");
  set("account_for_loss_in_pipeline_split", "null");
  if (x.dualpipe)
    set("schedule", "dualpipe");
  else if (base.schedule == workload::Schedule::DualPipe || (x.vp > 1 && base.schedule == workload::Schedule::GPipe))
    set("schedule", "1f1b");
  if (m.is_moe()) set("ep", std::to_string(x.ep));
  if (x.etp < x.tp) set("etp", "1");
  return p;
}

}  // namespace

std::vector<PlanPoint> enumerate_plans(const Scenario& s, double gpu_memory_bytes, size_t* enumerated) {
  const TrainingSetup& t = s.training;
  const workload::ModelConfig& m = t.model;
  const int gpus = t.cluster.num_gpus();
  const YAML::Node plan_yaml = s.yaml["parallelism"];
  const config::Node where(plan_yaml, s.file, "parallelism");
  std::vector<PlanPoint> out;
  size_t tried = 0;
  for (int tp = 1; tp <= std::min(gpus, 8); tp *= 2) {
    if (m.heads % tp || m.kv_heads % tp || gpus % tp) continue;
    for (int cp = 1; cp <= 16 && gpus % (tp * cp) == 0; cp *= 2) {
      if (m.seq_len % (2 * cp)) break;
      for (int pp = 1; pp <= std::min(gpus / (tp * cp), m.layers); ++pp) {
        if ((gpus / (tp * cp)) % pp) continue;
        const int dp = gpus / (tp * cp * pp);
        std::vector<std::pair<int, bool>> schedules{{1, false}};  // (vp, dualpipe)
        if (pp > 1)
          for (int vp = 2; vp <= 8 && m.layers >= pp * vp; vp *= 2) schedules.push_back({vp, false});
        if (pp >= 2 && pp % 2 == 0) schedules.push_back({1, true});
        // An offloaded optimizer is a ZeRO shard on the host (zero >= 1, parse_memory_options).
        const int min_zero = t.plan.offload_optimizer ? 1 : 0;
        std::vector<int> zeros{min_zero};
        if (dp * cp > 1)
          for (int z = min_zero + 1; z <= 3; ++z) zeros.push_back(z);
        // MoE: expert parallelism in powers of two dividing the experts, out of cp*dp (experts
        // split like the dense layers) or, beyond it, out of tp*cp*dp with whole experts (etp 1).
        std::vector<std::pair<int, int>> eps{{1, tp}};
        if (m.is_moe())
          for (int ep = 2; ep <= tp * cp * dp && m.moe.experts % ep == 0; ep *= 2) {
            if ((cp * dp) % ep == 0)
              eps.push_back({ep, tp});
            else if ((tp * cp * dp) % ep == 0)
              eps.push_back({ep, 1});
          }
        for (const auto& [vp, dualpipe] : schedules)
          for (int mb : {1, 2, 4})
            for (int zero : zeros)
              for (const auto& [ep, etp] : eps) {
                std::vector<std::string> sets;
                workload::ParallelPlan p =
                    apply_shape(t.plan, plan_yaml, m, {tp, cp, pp, dp, vp, ep, etp, mb, zero, dualpipe}, sets);
                // Recompute: each fixed mode, then auto's partial full recomputation where it picks one.
                std::vector<std::pair<workload::ParallelPlan, std::string>> modes;
                for (auto rc : {workload::Recompute::None, workload::Recompute::Selective, workload::Recompute::Full}) {
                  workload::ParallelPlan q = p;
                  q.recompute = rc;
                  q.recompute_layers = 0;
                  modes.push_back({q, workload::recompute_name(rc)});
                }
                {
                  TrainingSetup probe = t;
                  probe.plan = p;
                  probe.recompute_auto = true;
                  const workload::ParallelPlan q = plan_as_run(probe, gpu_memory_bytes);
                  if (q.recompute == workload::Recompute::Full && q.recompute_layers > 0) modes.push_back({q, "full"});
                }
                for (auto& [q, rc] : modes) {
                  ++tried;
                  if (q.recompute != workload::Recompute::Selective) q.recompute_modules = workload::kRecomputeCoreAttn;
                  try {
                    workload::check_plan(m, q, gpus, where);
                  } catch (const config::InputError&) {
                    continue;  // an invalid combination (the batch does not divide, ...): not a candidate
                  }
                  PlanPoint point{q, sets};
                  point.sets.push_back("parallelism.recompute=" + rc);
                  // The scenario's modules apply to its selective mode only.
                  if (q.recompute != workload::Recompute::Selective &&
                      t.plan.recompute_modules != workload::kRecomputeCoreAttn)
                    point.sets.push_back("parallelism.recompute_modules=null");
                  if (q.recompute_layers > 0)
                    point.sets.push_back("parallelism.recompute_layers=" + std::to_string(q.recompute_layers));
                  else if (plan_yaml["recompute_layers"])
                    point.sets.push_back("parallelism.recompute_layers=null");
                  out.push_back(std::move(point));
                }
              }
      }
    }
  }
  if (enumerated) *enumerated = tried;
  return out;
}

std::string plan_label(const std::vector<std::string>& sets) {
  std::string desc;
  for (const auto& s : sets) {
    std::string item = s.substr(s.find('.') + 1);
    if (item.size() > 5 && item.compare(item.size() - 5, 5, "=null") == 0) continue;  // a key the plan leaves out
    if (item.rfind("sequence_parallel=", 0) == 0) continue;                           // follows tp
    desc += (desc.empty() ? "" : " ") + item;
  }
  return desc;
}

}  // namespace stacksim::analysis
