#include "validate/training_cases.hpp"
#include "validate/case_policy.hpp"

#include <cstdio>

#include "models/hardware/gpu_spec.hpp"
#include "models/workload/flops.hpp"
#include "services/scenario.hpp"
#include "services/stack_profile.hpp"
#include "services/training.hpp"

namespace stacksim::analysis {

namespace case_policy {

// The case publishes the time of one transformer layer (forward and backward) in measured.other.
bool publishes_layer_time(const YAML::Node& c) {
  const YAML::Node other = c["measured"]["other"];
  return has(other, "layer_combined_ms") || (has(other, "layer_forward_ms") && has(other, "layer_backward_ms"));
}

// Whether the case's step time is the source's own figure (per-iteration time as published), not
// derived from a throughput and a batch.
bool publishes_step_time(const YAML::Node& c) {
  if (!has(c["measured"], "step_time_s")) return false;
  if (const YAML::Node derived = c["derived"]; derived && derived.IsSequence())
    for (const YAML::Node& d : derived)
      if (d["field"] && d["field"].as<std::string>() == "measured.step_time_s") return false;
  return true;
}

// The scenario of a case whose named model's unstated shape is filled in already: hardware, model,
// plan, each section's policy in its own file (case_hardware, case_model, case_model_layers,
// case_plan, case_plan_memory, case_plan_kernels), applied in this order.
YAML::Node case_scenario(const YAML::Node& c, std::vector<std::string>& defaults) {
  CaseContext x(c, defaults);
  if (x.p && !has(x.p, "dp") && (!has(x.p, "tp") || !has(x.p, "pp"))) return smallest_fitting_plan(c, defaults);
  read_gpus(x);
  x.s["name"] = get<std::string>(c, "id");
  x.s["cluster"] = cluster_section(x);
  model_shape(x);
  model_architecture(x);
  attention_choice(x);
  moe_section(x);
  x.s["model"] = x.mo;
  plan_degrees(x);
  plan_tensor_parallel(x);
  plan_batch(x);
  plan_pipeline(x);
  plan_zero_precision(x);
  plan_grad_reduce(x);
  plan_sharding(x);
  plan_fp8_mtp(x);
  plan_context_expert(x);
  plan_kernels(x);
  plan_offload(x);
  plan_recompute(x);
  x.s["parallelism"] = x.pl;
  return x.s;
}

}  // namespace case_policy

using namespace case_policy;

YAML::Node training_case_scenario(const YAML::Node& c, std::vector<std::string>& defaults) {
  YAML::Node s = case_scenario(with_catalogue_shape(c, defaults), defaults);
  s["software"] =
      case_software(c, s["cluster"]["gpu"] ? s["cluster"]["gpu"].as<std::string>() : std::string(), defaults);
  // A published run fitted in its GPUs' memory: where the era's default (no sharding) does not
  // but the distributed optimizer / ZeRO-1 (the sharding of Megatron-LM's and Megatron-DeepSpeed's
  // large runs) does, the case ran with it, as recompute: auto takes the least recomputation.
  const YAML::Node p = c["parallelism"];
  if (p && !has(p, "zero") && s["parallelism"]["zero"].as<int>() == 0 && s["parallelism"]["dp"].as<int>() > 1) {
    try {
      if (!fits_in_memory(scenario_from_yaml(YAML::Clone(s), "case").training)) {
        YAML::Node sharded = YAML::Clone(s);
        sharded["parallelism"]["zero"] = 1;
        if (fits_in_memory(scenario_from_yaml(YAML::Clone(sharded), "case").training)) {
          defaults.push_back("parallelism.zero: 1 (unsharded it does not fit in memory; ZeRO-1 does)");
          return sharded;
        }
      }
    } catch (const std::exception&) {
      // an unbuildable scenario is reported by the caller's own parse
    }
  }
  return s;
}

void predict_training_case(const YAML::Node& c, CaseOutcome& out, const ValidationFilter& options) {
  const YAML::Node meas = c["measured"];
  const YAML::Node scenario_yaml = training_case_scenario(c, out.defaults);
  YAML::Emitter emitted;
  emitted << scenario_yaml;
  out.scenario_yaml = std::string(emitted.c_str()) + "\n";
  Scenario scenario = scenario_from_yaml(scenario_yaml, "case " + out.id);
  SoftwareStack& sw = scenario.training.software;
  if (options.stack_params == ValidationFilter::StackParams::Reference) {
    sw.params = StackParameters{};
  } else if (options.stack_params == ValidationFilter::StackParams::PerSource) {
    sw.params = StackParameters{};
    if (const auto src = options.per_source.find(out.source); src != options.per_source.end())
      if (const auto fam = src->second.find(sw.framework); fam != src->second.end()) sw.params = fam->second;
  }
  const TrainingResult r = simulate_training(scenario.training, RunOptions{});
  out.family = sw.framework;
  out.architecture = hw::bundled_gpus().get(scenario.training.gpu).architecture;
  out.num_gpus = r.num_gpus;
  out.step_time_s = r.step_time_s;
  out.kernels_per_step = r.host_launches_per_step;
  out.breakdown = r.breakdown;
  if (r.oom) out.defaults.push_back("note: predicted out of memory (" + r.oom_detail + ")");
  // The sequences the run trains per step over those replayed (a partial last micro-batch).
  const YAML::Node cp = c["parallelism"];
  const double trained_fraction =
      has(cp, "global_batch")
          ? get<double>(cp, "global_batch") / scenario_yaml["parallelism"]["global_batch"].as<double>()
          : 1.0;
  // Model FLOPs the source's way, for a published FLOP rate: the ratio of its count to the
  // replay's (full attention core).
  const auto source_flop_count = [&]() {
    if (!counts_causal_attention_half(c, scenario.training.gpu)) return 1.0;
    out.defaults.push_back(
        "model FLOPs: the causal attention core counted at half (the source's Megatron-LM "
        "2025+ / Megatron-Bridge count)");
    const workload::ModelConfig& m = scenario.training.model;
    const int64_t batch = scenario.training.plan.global_batch;
    return workload::model_flops_per_step(m, batch, workload::AttentionCount::CausalHalf) /
           workload::model_flops_per_step(m, batch);
  };
  if (has(meas, "step_time_s")) {
    out.metric = "step_time_s";
    out.predicted = r.step_time_s * trained_fraction;
    out.measured = get<double>(meas, "step_time_s");
  } else if (has(meas, "tokens_per_s_per_gpu")) {
    out.metric = "tokens_per_s_per_gpu";
    out.predicted = r.tokens_per_s_per_gpu;
    out.measured = get<double>(meas, "tokens_per_s_per_gpu");
  } else if (has(meas, "model_tflops_per_gpu")) {
    out.metric = "model_tflops_per_gpu";
    out.predicted = r.model_tflops_per_gpu * source_flop_count();
    out.measured = get<double>(meas, "model_tflops_per_gpu");
  } else if (has(meas, "hardware_tflops_per_gpu")) {
    // Published with the SC'21 recompute-inclusive count: compute it the same way.
    out.metric = "hardware_tflops_per_gpu (SC'21 count)";
    out.predicted = r.sc21_tflops_per_gpu;
    out.measured = get<double>(meas, "hardware_tflops_per_gpu");
  } else if (has(meas, "mfu")) {
    out.metric = "mfu";
    out.predicted = r.mfu * source_flop_count();
    out.measured = get<double>(meas, "mfu");
  } else if (has(meas, "hfu")) {
    // Hardware FLOPs (recomputation included) over the peak.
    out.metric = "hfu";
    out.predicted = r.hfu * source_flop_count();
    out.measured = get<double>(meas, "hfu");
  } else if (has(meas["other"], "tokens_per_s")) {
    out.metric = "tokens_per_s (the whole job's)";
    out.predicted = r.tokens_per_s;
    out.measured = get<double>(meas["other"], "tokens_per_s");
  } else if (has(meas["other"], "samples_per_s")) {
    out.metric = "samples_per_s (the whole job's)";
    out.predicted = r.tokens_per_s / scenario.training.model.seq_len;
    out.measured = get<double>(meas["other"], "samples_per_s");
  } else if (publishes_layer_time(c)) {
    // One transformer layer, forward + backward (with recomputation), as a per-layer timer sees it.
    const YAML::Node other = meas["other"];
    out.metric = "layer_fwd+bwd_ms";
    out.predicted = 1e3 * (r.layer.forward_s + r.layer.backward_s);
    out.measured = has(other, "layer_combined_ms")
                       ? get<double>(other, "layer_combined_ms")
                       : get<double>(other, "layer_forward_ms") + get<double>(other, "layer_backward_ms");
    char detail[160];
    std::snprintf(detail, sizeof detail, "note: forward %.3g ms, backward %.3g ms predicted", 1e3 * r.layer.forward_s,
                  1e3 * r.layer.backward_s);
    out.defaults.push_back(detail);
  } else {
    out.error = "the case publishes no step time, throughput, TFLOP/s or MFU (only: see measured.other)";
  }
  // The interval: the step time's band, turned for a rate (which falls as the step grows).
  out.time_like = out.metric == "step_time_s" || out.metric == "layer_fwd+bwd_ms";
  if (r.step_time_interval_s.second > 0 && out.error.empty()) {
    const double lo = r.step_time_interval_s.first / r.step_time_s, hi = r.step_time_interval_s.second / r.step_time_s;
    out.interval = out.time_like ? std::make_pair(out.predicted * lo, out.predicted * hi)
                                 : std::make_pair(out.predicted / hi, out.predicted / lo);
  }
}

}  // namespace stacksim::analysis
