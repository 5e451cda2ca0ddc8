#include "models/workload/replay.hpp"

#include "config/error.hpp"
#include "config/output_file.hpp"
#include "models/workload/replay_builder.hpp"

namespace stacksim::workload {
namespace replay_detail {

const std::vector<std::string> kCategoryNames = {
    "gemm",    "attention", "elementwise",     "optimizer", "tp_comm",    "cp_comm",     "ep_comm",
    "pp_comm", "dp_comm",   "pipeline_bubble", "data_wait", "checkpoint", "host_launch", "activation_offload",
    "idle"};

uint16_t comm_category(Group g) {
  switch (g) {
    case Group::TP:
      return kCatTpComm;
    case Group::CP:
      return kCatCpComm;
    case Group::EP:
      return kCatEpComm;
    case Group::DP:
    case Group::DpShard:
    case Group::DpReplicate:
    case Group::ExpertDp:
      return kCatDpComm;
  }
  return kCatTpComm;
}

StepBuilder::StepBuilder(const StepProgram& p, const topo::Cluster& cluster, const coll::CommTuning& tuning)
    : p_(p), cluster_(cluster), tuning_(tuning) {
  link_res_ = cluster.bind(engine_);
  gpu_res_.reserve(cluster.num_gpus());
  for (int r = 0; r < cluster.num_gpus(); ++r)
    gpu_res_.push_back(engine_.add_resource({"gpu" + std::to_string(r) + ".sm", 1.0}));
  stages_.resize(p.pp);
  for (int s = 0; s < p.pp; ++s) {
    const int rep = global_rank(p, 0, 0, 0, s);
    const std::string proc = "stage " + std::to_string(s) + " (gpu " + std::to_string(rep) + ")";
    stages_[s].rep = rep;
    stages_[s].compute_track = g_.add_track(proc, "compute");
    stages_[s].comm_track = g_.add_track(proc, "tp/cp/ep comm");
    stages_[s].pp_track = g_.add_track(proc, "pp receive");
    if (paired()) {  // F&B pairs (DualPipe, ep_overlap): the backward chunk's own tracks
      stages_[s].paired_compute_track = g_.add_track(proc, "compute (paired backward)");
      stages_[s].paired_comm_track = g_.add_track(proc, "tp/cp/ep comm (paired backward)");
    }
    stages_[s].dp_track = g_.add_track(proc, "dp comm");
    if (p.offload_activations) stages_[s].offload_track = g_.add_track(proc, "activation offload (PCIe)");
    if (p.offload_params) stages_[s].param_track = g_.add_track(proc, "parameter shards from host (PCIe)");
    if (host_modelled()) {
      stages_[s].host_track = g_.add_track(proc, "host launches");
      if (paired()) stages_[s].paired_host_track = g_.add_track(proc, "host launches (paired backward)");
    }
    stages_[s].cursor = add_join({});
  }
}

ReplayResult StepBuilder::run(const ReplayOptions& options) {
  // Where no op list can put the host behind its GPU, the host chain would only delay each
  // stage's first launched work by one launch: that launch stands for it (the same result, a
  // fraction of the tasks).
  launches_free_ = host_modelled() && options.host_shortcut && host_stays_ahead();
  build_batch_copy();
  build_pipeline();
  build_tail();
  sim::ExecutionResult r = sim::execute(engine_, g_);
  if (!r.completed) throw std::logic_error("replay: the step's task graph has a dependency cycle");
  if (!options.trace_path.empty())
    config::write_output_file(options.trace_path,
                              [&](std::ostream& out) { sim::write_chrome_trace(g_, r, kCategoryNames, out); });
  ReplayResult out;
  out.step_time_s = r.makespan.seconds();
  out.tasks = g_.size();
  out.engine_stats = engine_.stats();
  // The critical stage is the busiest one (the least idle time): with balanced stages the first
  // (it runs the last backward and its data-parallel tail); with unbalanced ones the stage that
  // paces the pipeline, whose breakdown says why.
  for (int s = 0; s < p_.pp; ++s) {
    std::vector<double> b = breakdown(r, s);
    if (s == 0 || idle_s(b) < idle_s(out.breakdown_s) - 1e-9 * out.step_time_s) {
      out.critical_stage = s;
      out.breakdown_s = std::move(b);
    }
  }
  return out;
}

}  // namespace replay_detail

using replay_detail::kCategoryNames;
using replay_detail::StepBuilder;

const char* category_name(uint16_t c) { return c < kCategoryNames.size() ? kCategoryNames[c].c_str() : "unknown"; }
const std::vector<std::string>& category_names() { return kCategoryNames; }

int group_size(const StepProgram& p, Group g) {
  if (g == Group::ExpertDp) return (p.experts_folded ? p.tp * p.cp * p.dp : p.cp * p.dp) / p.ep;
  return g == Group::TP ? p.tp : g == Group::CP ? p.cp : g == Group::EP ? p.ep : p.dp * p.cp;
}

int global_rank(const StepProgram& p, int tp_i, int cp_i, int dp_i, int pp_i) {
  return tp_i + p.tp * (cp_i + p.cp * (dp_i + p.dp * pp_i));
}

namespace {
int expert_index_width(const StepProgram& p) { return p.experts_folded ? p.tp * p.cp : p.cp; }
}  // namespace

int expert_span(const StepProgram& p) { return (expert_index_width(p) + p.ep - 1) / p.ep * p.ep; }
int expert_replicas(const StepProgram& p) {
  return (expert_span(p) + expert_index_width(p) - 1) / expert_index_width(p);
}

ReplayResult replay_step_bounded(const StepProgram& program, const topo::Cluster& cluster,
                                 const coll::CommTuning& tuning, const ReplayOptions& options, int max_micro_batches,
                                 bool* extrapolated) {
  // Both depths well past the fill (interleaved schedules with blocking sends settle after about
  // 4 pp micro-batches): m2 at least 8 rounds of pp, m1 four rounds shorter.
  const int round = std::max(1, program.pp);
  const int m2 = std::max(max_micro_batches / round, 8) * round, m1 = m2 - 4 * round;
  // A trace holds every task of the step: a step of thousands of micro-batches would grow it (and
  // the replay, which cannot extrapolate then) to gigabytes.
  if (!options.trace_path.empty() && program.micro_batches > kMaxTracedMicroBatches)
    throw config::InputError(options.trace_path, 0, "--trace",
                             "the step has " + std::to_string(program.micro_batches) +
                                 " micro-batches per rank; a trace replays each of them, at most " +
                                 std::to_string(kMaxTracedMicroBatches),
                             "trace a shorter step (e.g. --set parallelism.global_batch with fewer micro-batches), "
                             "or run without --trace");
  *extrapolated = program.micro_batches > m2 && options.trace_path.empty();
  if (!*extrapolated) return replay_step(program, cluster, tuning, options);
  StepProgram shorter = program;
  shorter.micro_batches = m1;
  const ReplayResult a = replay_step(shorter, cluster, tuning, options);
  shorter.micro_batches = m2;
  ReplayResult b = replay_step(shorter, cluster, tuning, options);
  const double k = static_cast<double>(program.micro_batches - m2) / (m2 - m1);
  b.step_time_s += k * (b.step_time_s - a.step_time_s);
  for (size_t c = 0; c < b.breakdown_s.size(); ++c) b.breakdown_s[c] += k * (b.breakdown_s[c] - a.breakdown_s[c]);
  return b;
}

ReplayResult replay_step(const StepProgram& program, const topo::Cluster& cluster, const coll::CommTuning& tuning,
                         const ReplayOptions& options) {
  const int gpus = program.tp * program.cp * program.dp * program.pp;
  if (gpus > cluster.num_gpus())
    throw std::invalid_argument("replay: the plan needs " + std::to_string(gpus) + " GPUs but the cluster has " +
                                std::to_string(cluster.num_gpus()));
  const size_t V = static_cast<size_t>(program.pp * program.vp);
  if (program.vstage_begin.empty() ? program.layers.size() % V != 0
                                   : program.vstage_begin.size() != V + 1 ||
                                         program.vstage_begin.back() != static_cast<int>(program.layers.size()))
    throw std::invalid_argument("replay: the layers do not split over pp*vp virtual stages");
  StepBuilder b(program, cluster, tuning);
  return b.run(options);
}

}  // namespace stacksim::workload
