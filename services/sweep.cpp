#include "services/sweep.hpp"

#include <tbb/global_control.h>
#include <tbb/parallel_pipeline.h>

#include <csignal>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <unordered_map>

#include "config/output_file.hpp"
#include "config/yaml.hpp"
#include "services/scenario.hpp"
#include "services/serving_run.hpp"
#include "services/sweep_grid.hpp"
#include "services/sweep_output.hpp"
#include "services/training.hpp"

namespace stacksim::analysis {
namespace {

// Keys whose values change how many GPUs a job runs on: the scale-out dimension of a sweep.
bool scales_out(const std::string& key) {
  return key == "cluster.nodes" || key == "cluster.gpus_per_node" || key == "parallelism.dp";
}

// Scaling efficiency needs every row of a group; groups beyond this many are not filled in (the
// pass keeps one entry per group in memory).
constexpr uint64_t kMaxScalingGroups = 1u << 20;

// The signal that asked a running sweep to stop (0: none). The handler only stores it: rows in
// flight finish and are written, then the sweep returns.
std::atomic<int> g_stop_signal{0};
extern "C" void on_stop_signal(int sig) { g_stop_signal.store(sig); }

struct StopSignals {
  struct sigaction old_int {
  }, old_term{};
  StopSignals() {
    g_stop_signal.store(0);
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  }
};

// Scaling efficiency of each valid row: its tokens/s per GPU over that of the valid row with the
// fewest GPUs among the rows that agree on every grid key that does not scale out (the first such
// row in grid order on a tie). Empty where a group has a single GPU count. Two passes over the
// finished file (constant memory per group), then the file is replaced.
void fill_scaling_efficiency(const std::string& csv_path, const std::vector<std::string>& keys, size_t width,
                             size_t num_gpus_col, size_t per_gpu_col, size_t efficiency_col) {
  struct Group {
    double base_gpus = 0, base_rate = 0;
    bool several = false;
  };
  std::unordered_map<std::string, Group> groups;
  const auto group_of = [&](const std::vector<std::string>& f) {
    std::string g;
    for (size_t k = 0; k < keys.size(); ++k)
      if (!scales_out(keys[k])) g += f[k] + '\x1f';
    return g;
  };
  {
    std::ifstream in(csv_path, std::ios::binary);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      const std::vector<std::string> f = split_csv(line);
      if (f.size() != width || f[num_gpus_col].empty()) continue;
      const double gpus = std::stod(f[num_gpus_col]);
      auto [it, fresh] = groups.try_emplace(group_of(f));
      Group& g = it->second;
      if (fresh || gpus < g.base_gpus) {
        if (!fresh) g.several = true;
        g.base_gpus = gpus;
        g.base_rate = std::stod(f[per_gpu_col]);
      } else if (gpus != g.base_gpus) {
        g.several = true;
      }
    }
  }
  config::write_output_file(csv_path, [&](std::ostream& out) {
    std::ifstream in(csv_path, std::ios::binary);
    std::string line;
    std::getline(in, line);
    out << line << "\n";
    while (std::getline(in, line)) {
      std::vector<std::string> f = split_csv(line);
      if (f.size() == width) {
        f[efficiency_col].clear();
        if (!f[num_gpus_col].empty())
          if (const Group& g = groups.at(group_of(f)); g.several) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.6g", std::stod(f[per_gpu_col]) / g.base_rate);
            f[efficiency_col] = buf;
          }
      }
      out << join_csv(f) << "\n";
    }
  });
}

// One grid point simulated: its CSV fields (an invalid point carries its reason in `error`).
std::vector<std::string> simulate_point(const std::filesystem::path& scenario, const std::vector<std::string>& fixed,
                                        const SweepGrid& grid, const std::vector<std::string>& point, size_t width,
                                        size_t error_col, bool serving) {
  std::vector<std::string> row = point;
  row.resize(width);
  try {
    std::vector<std::string> sets = fixed;
    for (size_t j = 0; j < grid.keys.size(); ++j) sets.push_back(grid.keys[j] + "=" + point[j]);
    const Scenario s = load_scenario(scenario.string(), sets);
    if (serving != (s.kind == WorkloadKind::Serving))
      throw config::InputError(scenario.string(), 0, "serving",
                               "this point is not the same kind of scenario as the sweep's base",
                               "sweep serving scenarios over serving keys");
    if (serving) {  // a serving scenario's rows carry its latency and throughput figures
      const std::vector<std::string> values = serving_sweep_row(s.serving);
      std::copy(values.begin(), values.end(), row.begin() + grid.keys.size());
      return row;
    }
    if (s.kind != WorkloadKind::Training)
      throw config::InputError(scenario.string(), 0, "", "sweeps need a training scenario", "use one with model:");
    const TrainingResult r = simulate_training(s.training, RunOptions::step_only());
    const auto num = [](double v) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", v);
      return std::string(buf);
    };
    const std::vector<std::string> values = {
        std::to_string(r.num_gpus),  num(r.step_time_s),          num(r.tokens_per_s),
        num(r.tokens_per_s_per_gpu), num(r.model_tflops_per_gpu), num(r.mfu),
        num(r.memory_per_gpu_bytes), r.oom ? "true" : "false",    r.bottleneck};
    std::copy(values.begin(), values.end(), row.begin() + grid.keys.size());
  } catch (const std::exception& e) {
    std::string reason = e.what();
    for (char& c : reason)
      if (c == '\n' || c == '\r') c = ' ';  // one row per line, whatever the message
    row[error_col] = reason;
  }
  return row;
}

}  // namespace

SweepSummary run_sweep(const std::string& sweep_path, const std::string& csv_path, int threads,
                       std::ostream& progress) {
  const config::Node root = config::Node::load_file(sweep_path);
  root.require_map();
  root.check_keys({"scenario", "set", "grid"});
  const std::filesystem::path dir = std::filesystem::path(sweep_path).parent_path();
  std::filesystem::path scenario = root.required_string("scenario");
  if (scenario.is_relative()) scenario = dir / scenario;
  std::vector<std::string> fixed;
  const config::Node set = root["set"];
  if (!set.is_null() && !set.is_map())
    set.fail("", "expected a map of KEY: VALUE overrides", "write e.g. set: {model.layers: 40}");
  for (const auto& k : set.keys()) fixed.push_back(k + "=" + set[k].as_string());
  const config::Node grid_node = root["grid"];
  grid_node.require_map();
  SweepGrid grid;
  grid.keys = grid_node.keys();
  if (grid.keys.empty()) root.fail("grid", "is empty", "give at least one key with a list of values");
  for (const auto& k : grid.keys) {
    const config::Node v = grid_node[k];
    if (!v.is_sequence() || v.size() == 0) v.fail("", "expected a non-empty list of values", "write e.g. [2, 4, 8]");
    std::vector<std::string> vs;
    for (size_t i = 0; i < v.size(); ++i) vs.push_back(v.at(i).as_string());
    grid.values.push_back(vs);
  }
  const uint64_t points = grid.size();
  if (points == 0) root.fail("grid", "has more than 2^63 points", "split the sweep into several files");
  // A serving scenario's rows carry its latency and throughput figures (serving_sweep_columns).
  bool serving = false;
  try {
    serving = load_scenario(scenario.string(), fixed).kind == WorkloadKind::Serving;
  } catch (const config::InputError&) {  // the base alone may be incomplete: each row says why
  }
  const std::vector<std::string> result_cols =
      serving ? serving_sweep_columns()
              : std::vector<std::string>{
                    "num_gpus", "step_time_s",          "tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu",
                    "mfu",      "memory_per_gpu_bytes", "oom",          "bottleneck",           "scaling_efficiency",
                    "error"};
  const size_t nk = grid.keys.size();
  const size_t num_gpus_col = nk, per_gpu_col = nk + 3, efficiency_col = nk + 9,
               error_col = nk + result_cols.size() - 1, width = nk + result_cols.size();
  std::vector<std::string> header_fields = grid.keys;
  header_fields.insert(header_fields.end(), result_cols.begin(), result_cols.end());

  SweepOutput output(csv_path, join_csv(header_fields), grid, width, error_col);
  SweepSummary sum;
  sum.points = points;
  sum.resumed = output.prefix_rows();
  sum.invalid = output.prefix_invalid();

  std::unique_ptr<tbb::global_control> limit;
  if (threads > 0) limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);
  const size_t slots = 2 * tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
  StopSignals signals;
  // Rows are simulated in parallel and written in grid order: the pipeline's last stage takes them
  // in order, holding at most `slots` finished rows that wait for an earlier one.
  struct Item {
    uint64_t index = 0;
    std::vector<std::string> row;
    bool simulated = false;
  };
  uint64_t next = output.prefix_rows(), written = output.prefix_rows();
  const uint64_t todo = points - output.prefix_rows();
  uint64_t done = 0;
  tbb::parallel_pipeline(slots,
                         tbb::make_filter<void, Item>(tbb::filter_mode::serial_in_order, [&](tbb::flow_control& fc) {
                           if (next >= points || g_stop_signal.load()) {
                             fc.stop();
                             return Item{};
                           }
                           return Item{next++, {}, false};
                         }) & tbb::make_filter<Item, Item>(tbb::filter_mode::parallel, [&](Item item) {
                           const std::vector<std::string> point = grid.point(item.index);
                           item.row = point;  // looked up (edited grid) or simulated below
                           return item;
                         }) & tbb::make_filter<Item, Item>(tbb::filter_mode::serial_in_order, [&](Item item) {
                           // Rows kept from an edited grid's file are looked up in order.
                           if (const auto* kept = output.kept_row(join_csv(item.row))) {
                             item.row = *kept;
                           } else {
                             item.simulated = true;
                           }
                           return item;
                         }) & tbb::make_filter<Item, Item>(tbb::filter_mode::parallel, [&](Item item) {
                           if (item.simulated)
                             item.row = simulate_point(scenario, fixed, grid, item.row, width, error_col, serving);
                           return item;
                         }) & tbb::make_filter<Item, void>(tbb::filter_mode::serial_in_order, [&](Item item) {
                           output.append(item.row);
                           ++written;
                           if (item.simulated)
                             ++sum.simulated;
                           else
                             ++sum.resumed;
                           if (!item.row[error_col].empty()) ++sum.invalid;
                           if (++done % 16 == 0 || done == todo)
                             progress << "\r" << done << "/" << todo << " points" << std::flush;
                         }));
  if (done > 0) progress << "\n";
  const bool complete = written == points;
  output.finish(complete);
  sum.interrupted_by = complete ? 0 : g_stop_signal.load();
  sum.written = written;
  if (complete && output.regular_file() && !serving) {
    uint64_t groups = 1;
    bool any_scale_out = false;
    for (size_t k = 0; k < nk; ++k) {
      if (scales_out(grid.keys[k]))
        any_scale_out = true;
      else
        groups *= grid.values[k].size();  // <= points, no overflow
    }
    if (any_scale_out && groups <= kMaxScalingGroups)
      fill_scaling_efficiency(csv_path, grid.keys, width, num_gpus_col, per_gpu_col, efficiency_col);
  }
  return sum;
}

}  // namespace stacksim::analysis
