#include "services/plan_search.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>

#include "config/yaml.hpp"
#include "services/scenario.hpp"
#include "models/hardware/gpu_spec.hpp"
#include "models/hardware/node_spec.hpp"
#include "models/workload/pipeline_layout.hpp"

#include <filesystem>

namespace stacksim::analysis {

namespace {
std::string join_counts(const std::vector<int>& counts) {
  std::string s = "[";
  for (size_t i = 0; i < counts.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(counts[i]);
  }
  s += ']';
  return s;
}
}  // namespace

std::vector<PlanCandidate> search_plans(const std::string& path, const std::vector<std::string>& base_sets,
                                        size_t top, size_t* evaluated, size_t* simulated_count) {
  // Only the cluster and the model matter here: the scenario's own plan may not even be valid.
  const config::Node file = config::Node::load_file(path);
  YAML::Node root = file.yaml();
  for (const auto& o : base_sets) apply_scenario_override(root, o, "--set " + o);
  const config::Node top_node(root, path, "");
  int gpus = 0;
  workload::ModelConfig m;
  try {  // an error in an override is reported as the override's ("did you mean --set ...?")
    if (!top_node.has("model") || !top_node.has("cluster"))
      top_node.fail("model", "plan search needs a training scenario with cluster: and model:", "add them");
    YAML::Node cluster_yaml = YAML::Clone(root["cluster"]);
    if (root["hardware"] && root["hardware"]["gpu"]) cluster_yaml["gpu"] = root["hardware"]["gpu"];
    gpus =
        topo::parse_cluster_config(config::Node(cluster_yaml, path, "cluster"), hw::bundled_nodes()).num_gpus();
    const std::string base_dir = std::filesystem::path(path).parent_path().string();
    m = workload::parse_model(top_node["model"], base_dir.empty() ? "." : base_dir);
  } catch (const config::InputError& e) {
    config::rethrow_for_overrides(e, base_sets, "--set");
  }
  std::vector<std::vector<std::string>> plans;
  for (int tp = 1; tp <= std::min(gpus, 8); tp *= 2) {
    if (m.heads % tp || m.kv_heads % tp || gpus % tp) continue;
    for (int pp = 1; pp <= std::min(gpus / tp, m.layers); ++pp) {
      if ((gpus / tp) % pp) continue;
      const int dp = gpus / (tp * pp);
      // Interleaving (pipelines only) and, without a pipeline, FSDP; plans the checks refuse
      // (micro-batches that do not divide) drop out below. Layers that do not divide over the
      // (virtual) stages get the case builder's uneven layout (Llama 3 405B's 126 over 16).
      std::vector<int> vps{1}, zeros{0, 1};
      if (pp > 1)
        for (int vp : {2, 4})
          if (m.layers >= pp * vp) vps.push_back(vp);
      if (pp == 1 && dp > 1) zeros.push_back(3);
      // MoE: expert parallelism in powers of two dividing the experts, out of dp (experts split
      // like the dense layers) or, beyond dp, out of tp*dp with whole experts (etp 1).
      std::vector<std::pair<int, int>> eps{{1, tp}};  // (ep, etp)
      if (m.is_moe())
        for (int ep = 2; ep <= tp * dp && m.moe.experts % ep == 0; ep *= 2) {
          if (dp % ep == 0) eps.push_back({ep, tp});
          else if ((tp * dp) % ep == 0) eps.push_back({ep, 1});
        }
      // DualPipe (both pipeline ends fed, F&B chunks overlapped) where it can run: pp even, no
      // interleaving; the scenario's own schedule otherwise.
      std::vector<std::pair<int, bool>> schedules;  // (vp, dualpipe)
      for (int vp : vps) schedules.push_back({vp, false});
      if (pp >= 2 && pp % 2 == 0) schedules.push_back({1, true});
      for (const auto& [vp, dualpipe] : schedules)
        for (int mb : {1, 2, 4})
          // recompute: auto is the least recomputation that fits (none, selective, the first layers
          // of each chunk, all), never slower than any fixed mode that fits, so it is the only one tried.
          for (int zero : zeros)
            for (const auto& [ep, etp] : eps) {
              std::vector<std::string> plan{
                  "parallelism.tp=" + std::to_string(tp),      "parallelism.pp=" + std::to_string(pp),
                  "parallelism.dp=" + std::to_string(dp),      "parallelism.cp=1",
                  "parallelism.vp=" + std::to_string(vp),      "parallelism.micro_batch=" + std::to_string(mb),
                  "parallelism.recompute=auto",                "parallelism.zero=" + std::to_string(zero),
                  std::string("parallelism.sequence_parallel=") + (tp > 1 ? "true" : "false")};
              // The layout belongs to the plan: a scenario's own (for its pp) is replaced ("null": none).
              const workload::PipelineLayout layout = workload::pipeline_layout(m.layers, pp * vp);
              const bool split = layout.first > 0;
              plan.push_back("parallelism.first_stage_layers=" + (split ? std::to_string(layout.first) : "null"));
              plan.push_back("parallelism.last_stage_layers=" + (split ? std::to_string(layout.last) : "null"));
              plan.push_back("parallelism.stage_layers=" +
                             (layout.stage_layers.empty() ? "null" : join_counts(layout.stage_layers)));
              plan.push_back("parallelism.account_for_embedding_in_pipeline_split=null");
              plan.push_back("parallelism.account_for_loss_in_pipeline_split=null");
              if (dualpipe) plan.push_back("parallelism.schedule=dualpipe");
              if (m.is_moe()) plan.push_back("parallelism.ep=" + std::to_string(ep));
              if (etp < tp) plan.push_back("parallelism.etp=1");
              plans.push_back(plan);
            }
    }
  }
  std::vector<PlanCandidate> all(plans.size());
  std::vector<char> ok(plans.size(), 0);
  std::vector<std::optional<config::InputError>> errors(plans.size());
  std::atomic<size_t> simulated{0};
  tbb::parallel_for(size_t(0), plans.size(), [&](size_t i) {
    std::vector<std::string> sets = base_sets;
    sets.insert(sets.end(), plans[i].begin(), plans[i].end());
    try {
      const Scenario s = load_scenario(path, sets);
      // The memory verdict needs no simulation (the run's own check): a plan that does not fit
      // is not a candidate, and large models have many.
      if (!fits_in_memory(s.training)) return;
      all[i].sets = plans[i];
      all[i].result = simulate_training(s.training, RunOptions::step_only());
      simulated.fetch_add(1, std::memory_order_relaxed);
      ok[i] = !all[i].result.oom;
    } catch (const config::InputError& e) {
      // An invalid combination (e.g. the global batch does not divide): not a candidate.
      errors[i] = e;
    } catch (const sim::HorizonError&) {
      // A plan whose step would outlast the engine's horizon: not a candidate either.
    }
  });
  std::vector<PlanCandidate> good;
  for (size_t i = 0; i < all.size(); ++i)
    if (ok[i]) good.push_back(all[i]);
  // No plan ran: an error that every plan shares (a misspelled --set key, a bad file value) is the
  // user's to fix, so the first one is reported rather than "0 plans valid".
  if (simulated.load() == 0)
    for (const auto& e : errors)
      if (e) config::rethrow_for_overrides(*e, base_sets, "--set");
  std::stable_sort(good.begin(), good.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    return a.result.step_time_s < b.result.step_time_s;
  });
  if (good.size() > top) good.resize(top);
  if (evaluated) *evaluated = plans.size();
  if (simulated_count) *simulated_count = simulated.load();
  return good;
}

void print_plans(const std::vector<PlanCandidate>& plans, size_t evaluated, size_t simulated, std::ostream& out) {
  char line[400];
  out << evaluated << " plans, " << simulated << " of them valid and in memory, simulated; the fastest:\n";
  for (size_t i = 0; i < plans.size(); ++i) {
    const auto& r = plans[i].result;
    std::string desc;
    for (const auto& s : plans[i].sets) {
      std::string item = s.substr(s.find('.') + 1);
      if (item.size() > 5 && item.compare(item.size() - 5, 5, "=null") == 0) continue;  // a key the plan leaves out
      if (item == "recompute=auto") item = "recompute=" + r.recompute;  // what auto chose
      desc += (desc.empty() ? "" : " ") + item;
    }
    std::snprintf(line, sizeof line, "%2zu. step %.4g s  MFU %.1f%%  mem %.1f GB  bottleneck: %s\n    %s\n", i + 1,
                  r.step_time_s, 100 * r.mfu, r.memory_per_gpu_bytes / 1e9, r.bottleneck.c_str(), desc.c_str());
    out << line;
    std::string bd = "    ";
    for (const auto& [k, v] : r.breakdown)
      if (v > 0.005 * r.step_time_s) {
        std::snprintf(line, sizeof line, "%s %.0f%%  ", k.c_str(), 100 * v / r.step_time_s);
        bd += line;
      }
    out << bd << "\n";
  }
}

}  // namespace stacksim::analysis
