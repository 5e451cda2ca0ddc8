// The case's plan: the smallest fitting split where the degrees are not stated, the degrees, tensor
// parallelism, the batch and the pipeline.
#include "validate/case_policy.hpp"

#include <algorithm>
#include <cmath>

#include "models/workload/pipeline_layout.hpp"
#include "services/scenario.hpp"
#include "services/training.hpp"

namespace stacksim::analysis::case_policy {

// The pipeline's interleaving and layer split. A stated vp is taken as is. Unstated on a
// Hopper-or-later stack with pp > 1: the interleaved 1F1B schedule with the finest virtual stages
// the layers allow (Megatron-Core/NeMo recipes run 1-4 layers per virtual stage, Meta trained
// Llama 3 interleaved), where Megatron can interleave (micro-batches per rank a multiple of pp);
// otherwise, and on Volta/Ampere-era stacks, plain 1F1B.
void pipeline_split(int layers, int pp, int stated_vp, bool hopper_era, int micro_batches, YAML::Node& pl,
                    std::vector<std::string>& defaults) {
  int vp = stated_vp > 0 ? stated_vp : 1;
  if (stated_vp <= 0) {
    if (hopper_era && pp > 1 && micro_batches % pp == 0)
      for (int v = layers / pp; v >= 2; --v)
        if (const auto l = workload::pipeline_layout(layers, pp * v); l.ok && l.stage_layers.empty()) {
          vp = v;
          break;
        }
    defaults.push_back(vp > 1 ? "parallelism.vp: " + std::to_string(vp) +
                                    " (Hopper-era stacks interleave: the finest virtual stages the layers allow)"
                              : std::string("parallelism.vp: 1 (no interleaving)"));
  }
  pl["vp"] = vp;
  const int V = pp * vp;
  const workload::PipelineLayout layout = workload::pipeline_layout(layers, V);
  if (!layout.stage_layers.empty()) {
    YAML::Node list;
    for (int c : layout.stage_layers) list.push_back(c);
    list.SetStyle(YAML::EmitterStyle::Flow);
    pl["stage_layers"] = list;
    defaults.push_back("parallelism.stage_layers: " + std::to_string(layers) + " layers over " + std::to_string(V) +
                       " virtual stages as evenly as possible, the extra ones on the middle stages, then the first");
  } else if (layout.first > 0) {
    pl["first_stage_layers"] = layout.first;
    pl["last_stage_layers"] = layout.last;
    defaults.push_back("parallelism.first/last_stage_layers: " + std::to_string(layout.first) + "/" +
                       std::to_string(layout.last) + " (" + std::to_string(layers) + " layers over " +
                       std::to_string(V) + " stages, " + std::to_string(layout.per_stage) + " in each middle stage)");
  }
}

// A case that states neither dp nor both of tp and pp: the smallest model-parallel size (keeping a
// stated tp or pp) whose plan fits in the GPU's memory, tensor parallelism inside a node first (up
// to 8, and only where the heads divide), then pipeline stages; data parallelism takes the rest.
// That is how the frameworks' users size a plan (the least model parallelism that fits); which
// split runs fastest is not assumed known.
YAML::Node smallest_fitting_plan(const YAML::Node& c, std::vector<std::string>& defaults) {
  const YAML::Node hw = c["hardware"], p = c["parallelism"];
  if (!has(hw, "num_gpus")) throw std::runtime_error("hardware.num_gpus and parallelism.dp are null");
  const int gpus = positive<int>(hw, "num_gpus"), cp = has(p, "cp") ? positive<int>(p, "cp") : 1;
  const int layers = positive<int>(c["model"], "layers");
  if (gpus % cp != 0) throw std::runtime_error("hardware.num_gpus is not a multiple of parallelism.cp");
  const int node_gpus = has(hw, "gpus_per_node") ? positive<int>(hw, "gpus_per_node")
                        : has(hw, "gpu")
                            ? hw::bundled_nodes().node(node_type_for_gpu(get<std::string>(hw, "gpu"))).gpus_per_node
                            : 8;  // the trial plans then say the GPU is null
  struct Split {
    int tp, pp;
  };
  std::vector<Split> splits;
  const int stated_tp = has(p, "tp") ? positive<int>(p, "tp") : 0,
            stated_pp = has(p, "pp") ? positive<int>(p, "pp") : 0;
  std::vector<int> tps;
  if (stated_tp)
    tps.push_back(stated_tp);
  else
    for (int tp = 1; tp <= std::min(8, node_gpus); tp *= 2) tps.push_back(tp);
  for (const int tp : tps) {
    if ((gpus / cp) % tp != 0) continue;
    const int model_ranks = gpus / (cp * tp);
    for (int pp = 1; pp <= std::min(layers, model_ranks); ++pp)
      if (model_ranks % pp == 0 && (!stated_pp || pp == stated_pp)) splits.push_back({tp, pp});
  }
  std::stable_sort(splits.begin(), splits.end(), [](const Split& a, const Split& b) {
    return a.tp * a.pp != b.tp * b.pp ? a.tp * a.pp < b.tp * b.pp : a.tp > b.tp;
  });
  YAML::Node chosen, largest;
  std::vector<std::string> chosen_defaults, largest_defaults;
  std::string why_none = "no split of the GPUs gives a valid plan";
  for (const Split& sp : splits) {
    const int dp = gpus / (cp * sp.tp * sp.pp);
    if (has(p, "global_batch") && positive<int>(p, "global_batch") % dp != 0) continue;
    YAML::Node trial = YAML::Clone(c);
    trial["parallelism"]["tp"] = sp.tp;
    trial["parallelism"]["pp"] = sp.pp;
    trial["parallelism"]["dp"] = dp;
    std::vector<std::string> trial_defaults;
    try {
      const YAML::Node s = case_scenario(trial, trial_defaults);
      const bool fits = fits_in_memory(scenario_from_yaml(s, "case").training);
      largest.reset(s);  // reset rebinds; operator= would write through to the node bound before
      largest_defaults = trial_defaults;
      if (fits) {
        chosen.reset(s);
        chosen_defaults = trial_defaults;
        break;
      }
    } catch (const std::exception& e) {
      why_none = e.what();  // heads not divisible by tp, too few layers per stage, ...
    }
  }
  const bool fits = chosen.IsDefined() && !chosen.IsNull();
  if (!fits) chosen.reset(largest), chosen_defaults = largest_defaults;
  if (!chosen.IsDefined() || chosen.IsNull()) throw std::runtime_error("parallelism.dp is null and " + why_none);
  const YAML::Node pl = chosen["parallelism"];
  defaults.push_back(
      "parallelism.tp/pp/dp: " + pl["tp"].as<std::string>() + "/" + pl["pp"].as<std::string>() + "/" +
      pl["dp"].as<std::string>() +
      (fits ? " (the smallest model-parallel size that fits in memory, tensor parallel inside a node first)"
            : " (no split fits in memory: the largest model-parallel size)"));
  defaults.insert(defaults.end(), chosen_defaults.begin(), chosen_defaults.end());
  return chosen;
}

// The parallel degrees (stated, or the GPUs' remainder) and expert tensor parallelism.
void plan_degrees(CaseContext& x) {
  const YAML::Node& p = x.p;
  const std::string& case_notes = x.case_notes;
  std::vector<std::string>& defaults = x.defaults;
  int& gpus = x.gpus;
  int& per_node = x.per_node;
  YAML::Node& pl = x.pl;
  int& tp = x.tp;
  int& pp = x.pp;
  int& dp = x.dp;
  int& cp = x.cp;
  int& ep = x.ep;
  if (!p) throw std::runtime_error("the case has no parallelism");
  cp = has(p, "cp") ? positive<int>(p, "cp") : 1;
  ep = has(p, "ep") ? positive<int>(p, "ep") : 1;
  tp = has(p, "tp") ? positive<int>(p, "tp") : 0;
  pp = has(p, "pp") ? positive<int>(p, "pp") : 0;
  dp = has(p, "dp") ? positive<int>(p, "dp") : 0;
  auto whole_split = [&](long long divisor, const char* what) {
    if (gpus % divisor != 0)
      throw std::runtime_error("hardware.num_gpus (" + std::to_string(gpus) + ") is not a multiple of " + what + " (" +
                               std::to_string(divisor) + ")");
  };
  if (!tp || !pp) {  // dp is stated (smallest_fitting_plan took the others)
    whole_split(static_cast<long long>(dp) * cp, "dp * cp");
    const int mp = gpus / (dp * cp);
    if (!tp && !pp) {
      tp = std::min(mp, per_node);
      pp = mp / tp;
      defaults.push_back("parallelism.tp/pp: model-parallel size split as tp = min(mp, GPUs per node), pp = mp / tp");
    } else if (!tp) {
      tp = mp / pp;
      defaults.push_back("parallelism.tp: GPUs / (dp * cp * pp)");
    } else {
      pp = mp / tp;
      defaults.push_back("parallelism.pp: GPUs / (dp * cp * tp)");
    }
  }
  if (tp < 1 || pp < 1)
    throw std::runtime_error("the stated parallel degrees leave no whole tp and pp for " + std::to_string(gpus) +
                             " GPUs");
  if (!dp) {
    whole_split(static_cast<long long>(tp) * pp * cp, "tp * pp * cp");
    dp = gpus / (tp * pp * cp);
    defaults.push_back("parallelism.dp: GPUs / (tp * pp * cp)");
  }
  pl["tp"] = tp;
  pl["pp"] = pp;
  pl["dp"] = dp;
  pl["cp"] = cp;
  pl["ep"] = ep;
  if (!has(p, "cp")) defaults.push_back("parallelism.cp: 1");
  // An ep larger than dp*cp allows only MoE parallel folding with whole experts; notes that state
  // Megatron-Core's expert tensor parallel size 1 ("expert-tensor-parallel 1", "ETP1") ask for it.
  static const std::regex etp_one(R"((expert[- _]tensor[- _]parallel(?:[- _]size)?\s*[=:]?\s*|\betp\s*[=:]?\s*)1\b)",
                                  std::regex::icase);
  if (ep > 1 && tp > 1 && (tp * dp * cp) % ep == 0) {
    if ((dp * cp) % ep != 0) {
      pl["etp"] = 1;
      defaults.push_back("parallelism.etp: 1 (ep does not divide dp*cp; MoE parallel folding with whole experts)");
    } else if (std::regex_search(case_notes, etp_one)) {
      pl["etp"] = 1;
      defaults.push_back("parallelism.etp: 1 (the notes state expert tensor parallel 1: whole experts)");
    }
  }
}

// Sequence parallelism and how the TP collectives and pipeline sends ran in the stack of its era.
void plan_tensor_parallel(CaseContext& x) {
  const YAML::Node& p = x.p;
  const std::string& case_notes = x.case_notes;
  const std::string& low_notes = x.low_notes;
  std::vector<std::string>& defaults = x.defaults;
  const bool old_gen = x.old_gen;
  YAML::Node& pl = x.pl;
  int& tp = x.tp;
  int& pp = x.pp;
  bool& megatron_deepspeed = x.megatron_deepspeed;
  // Megatron-DeepSpeed named: DeepSpeed's pipeline engine, which has no interleaved schedule, and
  // Megatron's sequence parallelism off unless stated (its own default).
  megatron_deepspeed = notes_name(case_notes, "Megatron-DeepSpeed");
  if (has(p, "sequence_parallel")) {
    pl["sequence_parallel"] = get<bool>(p, "sequence_parallel");
  } else {
    const bool sp = !old_gen && !megatron_deepspeed && tp > 1;
    pl["sequence_parallel"] = sp;
    defaults.push_back(std::string("parallelism.sequence_parallel: ") +
                       (sp ? "true (Megatron-Core/NeMo and torchtitan default with TP on Hopper-and-later stacks)"
                        : megatron_deepspeed && tp > 1 ? "false (Megatron-DeepSpeed's default)"
                                                       : "false"));
  }
  // Megatron-LM before v3.0 (2022, which brought sequence parallelism and selective recompute)
  // ran the backward TP collectives in sequence; later Megatron and Transformer Engine overlap
  // them with the dgrad/wgrad GEMMs. A Volta/Ampere-era case using neither feature is taken as
  // pre-2022 (which misreads 2022 baselines run without them; docs/validation.md).
  const bool recompute_selective = has(p, "recompute") && lowercase(get<std::string>(p, "recompute")) == "selective";
  const bool sequence_parallel = pl["sequence_parallel"].as<bool>();
  if (old_gen && tp > 1 && !sequence_parallel && !recompute_selective) {
    pl["async_tp_backward"] = false;
    defaults.push_back(
        "parallelism.async_tp_backward: false (Volta/Ampere-era Megatron-LM using neither sequence "
        "parallelism nor selective recompute: pre-2022, TP backward collectives in sequence)");
  }
  // Transformer Engine's userbuffer overlap of the sequence-parallel collectives with their GEMMs,
  // where the notes say it ran ("--tp-comm-overlap", "TP_COMM_OVERLAP True", "ub_tp_comm_overlap=true"),
  // and PyTorch's async tensor parallelism, the same mechanism (all-gather/reduce-scatter split and
  // pipelined with the TP matmuls): torchtitan's enable_async_tensor_parallel, "Async TP on",
  // "Float8 + Async TP". A line commented out ("#export TP_COMM_OVERLAP=True") did not run.
  static const std::regex tp_overlap(
      R"(--tp-comm-overlap\b|tp_comm_overlap\s*[=:]?\s*(true|1)\b|)"
      R"(enable_async_tensor_parallel\b(?!\s*[=:]\s*(false|0)\b)|\basync (tp|tensor parallel(ism)?) on\b|\+ ?async tp\b)");
  if (tp > 1 && sequence_parallel && set_not_commented_out(low_notes, tp_overlap)) {
    pl["tp_comm_overlap"] = true;
    defaults.push_back("parallelism.tp_comm_overlap: true (the notes: TP communication overlapped with the GEMMs)");
  }
  // Both stacks of that era split pipeline sends over the tensor-parallel ranks: Megatron-LM's
  // scatter_gather_tensors_in_pipeline (default on until Megatron-Core's p2p module, 2023) and
  // DeepSpeed's pipeline engine (partitioned activations and gradients).
  if (old_gen && tp > 1 && !sequence_parallel && pp > 1) {
    pl["p2p_scatter_gather"] = true;
    defaults.push_back(
        "parallelism.p2p_scatter_gather: true (Volta/Ampere-era Megatron-LM and DeepSpeed pipelines send "
        "1/tp of the hidden states per rank and all-gather them over NVLink)");
  }
}

// The micro-batch and the global batch.
void plan_batch(CaseContext& x) {
  const YAML::Node& c = x.c;
  const YAML::Node& p = x.p;
  const std::string& case_notes = x.case_notes;
  const std::string& low_notes = x.low_notes;
  std::vector<std::string>& defaults = x.defaults;
  YAML::Node& mo = x.mo;
  YAML::Node& pl = x.pl;
  int& pp = x.pp;
  int& dp = x.dp;
  bool& torchtitan = x.torchtitan;
  int& torchtitan_vp = x.torchtitan_vp;
  torchtitan = notes_name(case_notes, "torchtitan");
  // torchtitan's pipeline defaults (build_pipeline_schedule, generate_split_points): a looped
  // schedule (Interleaved 1F1B) runs 2 stages per rank, a single-stage one 1, and the local batch
  // is split into one micro-batch per stage in total (pp x stages per rank).
  const bool torchtitan_pipeline = torchtitan && pp > 1;
  torchtitan_vp = 0;
  if (torchtitan_pipeline && !has(p, "vp")) {
    torchtitan_vp = low_notes.find("interleaved") != std::string::npos ? 2 : 1;
    defaults.push_back("parallelism.vp: " + std::to_string(torchtitan_vp) +
                       " (torchtitan's stages per rank for the schedule the notes name)");
  }
  if (has(p, "micro_batch")) {
    pl["micro_batch"] = positive<int>(p, "micro_batch");
  } else if (torchtitan_pipeline && has(p, "global_batch")) {
    const int vp = has(p, "vp") ? positive<int>(p, "vp") : torchtitan_vp;
    const int local = positive<int>(p, "global_batch") / dp, micro_batches = pp * vp;
    if (local % micro_batches != 0 || local < micro_batches)
      throw std::runtime_error("the local batch (" + std::to_string(local) + ") does not split into torchtitan's " +
                               std::to_string(micro_batches) + " pipeline micro-batches");
    pl["micro_batch"] = local / micro_batches;
    defaults.push_back("parallelism.micro_batch: " + std::to_string(local / micro_batches) +
                       " (torchtitan: the local batch over pp x stages per rank = " + std::to_string(micro_batches) +
                       " micro-batches)");
  } else {
    pl["micro_batch"] = 1;
    defaults.push_back("parallelism.micro_batch: 1");
  }
  if (has(p, "global_batch")) {
    const int gb = positive<int>(p, "global_batch"), mb = pl["micro_batch"].as<int>();
    pl["global_batch"] = gb;
    // A last, smaller micro-batch (Composer/llm-foundry accumulate the remainder): replay whole
    // micro-batches and scale the step by the sequences actually trained (predict_training_case).
    if (dp > 0 && gb % dp == 0 && gb % (mb * dp) != 0) {
      const int per_rank = gb / dp, micro_batches = (per_rank + mb - 1) / mb;
      pl["global_batch"] = micro_batches * mb * dp;
      defaults.push_back("parallelism.global_batch: " + std::to_string(gb) + " sequences are " +
                         std::to_string(per_rank) + " per data-parallel rank, not a multiple of micro_batch " +
                         std::to_string(mb) + ": " + std::to_string(micro_batches) +
                         " micro-batches replayed, the step scaled by " + std::to_string(per_rank) + "/" +
                         std::to_string(micro_batches * mb) +
                         " (the last micro-batch's cost taken as proportional to its sequences)");
    }
  } else if (torchtitan && pp == 1) {
    // torchtitan trains one local batch per rank per step unless gradient accumulation is set
    // (its training.local_batch_size; global_batch_size defaults to local x data-parallel ranks).
    pl["global_batch"] = pl["micro_batch"].as<int>() * dp;
    defaults.push_back("parallelism.global_batch: micro_batch x dp (torchtitan: one local batch per rank per step)");
  } else if (publishes_layer_time(c)) {
    // A per-layer time does not depend on the batch: one micro-batch per data-parallel rank.
    pl["global_batch"] = pl["micro_batch"].as<int>() * dp;
    defaults.push_back("parallelism.global_batch: micro_batch x dp (only one layer's time is compared)");
  } else if (pp == 1 && publishes_step_time(c)) {
    // A time per iteration published without its batch is a benchmark's iteration: the frameworks'
    // default batch, one micro-batch per data-parallel rank (Megatron-LM's global_batch_size
    // defaults to micro_batch_size x data_parallel_size; DeepSpeed's and Hugging Face's gradient
    // accumulation to 1). A pretraining run's ~4M tokens (below) would multiply the iteration.
    pl["global_batch"] = pl["micro_batch"].as<int>() * dp;
    defaults.push_back(
        "parallelism.global_batch: micro_batch x dp (a published iteration time without its batch: the "
        "frameworks' default, no gradient accumulation)");
  } else {
    // A 4M-token batch (2^22 tokens: LLaMA's and Llama 2's; BLOOM 4.2M, MT-NLG 3.9M, GPT-3 175B
    // 3.2M) as whole micro-batches per data-parallel replica, at least one per pipeline stage and
    // a multiple of the stages (interleaving needs it).
    const int mb = pl["micro_batch"].as<int>();
    const double sequences = 4194304.0 / mo["seq_len"].as<double>();
    int micro_batches = std::max(1, static_cast<int>(std::lround(sequences / (static_cast<double>(mb) * dp))));
    if (pp > 1) micro_batches = std::max(pp, (micro_batches + pp - 1) / pp * pp);
    pl["global_batch"] = micro_batches * mb * dp;
    defaults.push_back("parallelism.global_batch: " + std::to_string(micro_batches * mb * dp) +
                       " (about 4M tokens as whole micro-batches per replica, " + std::to_string(micro_batches) +
                       " micro-batches of " + std::to_string(mb) + ")");
  }
}

// The pipeline schedule, interleaving and layer split.
void plan_pipeline(CaseContext& x) {
  const YAML::Node& m = x.m;
  const YAML::Node& p = x.p;
  const std::string& case_notes = x.case_notes;
  std::vector<std::string>& defaults = x.defaults;
  const bool old_gen = x.old_gen;
  YAML::Node& pl = x.pl;
  int& pp = x.pp;
  int& dp = x.dp;
  bool& megatron_deepspeed = x.megatron_deepspeed;
  int& torchtitan_vp = x.torchtitan_vp;
  bool& dualpipe = x.dualpipe;
  // DeepSeek's DualPipe, named in the notes: its own two chunks per rank, no interleaving.
  dualpipe = case_notes.find("DualPipe") != std::string::npos;
  if (dualpipe) {
    pl["schedule"] = "dualpipe";
    defaults.push_back("parallelism.schedule: dualpipe (the notes name DualPipe)");
  }
  pipeline_split(positive<int>(m, "layers"), pp,
                 dualpipe || (megatron_deepspeed && !has(p, "vp")) ? 1
                 : has(p, "vp")                                    ? positive<int>(p, "vp")
                                                                   : torchtitan_vp,
                 !old_gen, pl["global_batch"].as<int>() / (pl["micro_batch"].as<int>() * dp), pl, defaults);
  // Interleaved pipelines send asynchronously with today's launchers (the plan default); the
  // Megatron-LM of Volta/Ampere-era runs (2020-22) sent blocking: overlap_p2p_comm came in 2023.
  if (old_gen && pl["vp"].as<int>() > 1) {
    pl["overlap_p2p_comm"] = false;
    defaults.push_back("parallelism.overlap_p2p_comm: false (Volta/Ampere-era Megatron-LM: blocking pipeline sends)");
  }
}

}  // namespace stacksim::analysis::case_policy
