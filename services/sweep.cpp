#include "services/sweep.hpp"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "config/yaml.hpp"
#include "services/output.hpp"
#include "services/scenario.hpp"
#include "services/training.hpp"
#include "services/serving_run.hpp"

namespace stacksim::analysis {
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The fields of one CSV line (quoted fields allowed), unquoted.
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else {
        quoted = !quoted;
      }
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

std::string join_csv(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) line += ',';
    line += csv_field(fields[i]);
  }
  return line;
}

// Keys whose values change how many GPUs a job runs on: the scale-out dimension of a sweep.
bool scales_out(const std::string& key) {
  return key == "cluster.nodes" || key == "cluster.gpus_per_node" || key == "parallelism.dp";
}

// Scaling efficiency of each valid row: its tokens/s per GPU over that of the valid row with the
// fewest GPUs among the rows that agree on every grid key that does not scale out (the first such
// row in grid order on a tie). Empty where a group has a single GPU count.
void fill_scaling_efficiency(std::vector<std::vector<std::string>>& rows, const std::vector<std::string>& keys,
                             size_t num_gpus_col, size_t per_gpu_col, size_t efficiency_col) {
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string group;
    for (size_t k = 0; k < keys.size(); ++k)
      if (!scales_out(keys[k])) group += rows[i][k] + '\x1f';
    rows[i][efficiency_col].clear();
    if (!rows[i][num_gpus_col].empty()) groups[group].push_back(i);
  }
  for (const auto& [group, members] : groups) {
    size_t base = members.front();
    std::set<double> counts;
    for (size_t i : members) {
      const double g = std::stod(rows[i][num_gpus_col]);
      counts.insert(g);
      if (g < std::stod(rows[base][num_gpus_col])) base = i;
    }
    if (counts.size() < 2) continue;
    const double base_rate = std::stod(rows[base][per_gpu_col]);
    for (size_t i : members) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.6g", std::stod(rows[i][per_gpu_col]) / base_rate);
      rows[i][efficiency_col] = buf;
    }
  }
}

}  // namespace

SweepSummary run_sweep(const std::string& sweep_path, const std::string& csv_path, int threads, std::ostream& progress) {
  const config::Node root = config::Node::load_file(sweep_path);
  root.require_map();
  root.check_keys({"scenario", "set", "grid"});
  const std::filesystem::path dir = std::filesystem::path(sweep_path).parent_path();
  std::filesystem::path scenario = root.required_string("scenario");
  if (scenario.is_relative()) scenario = dir / scenario;
  std::vector<std::string> fixed;
  const config::Node set = root["set"];
  for (const auto& k : set.keys()) fixed.push_back(k + "=" + set[k].as_string());
  const config::Node grid = root["grid"];
  grid.require_map();
  std::vector<std::string> keys = grid.keys();
  if (keys.empty()) root.fail("grid", "is empty", "give at least one key with a list of values");
  std::vector<std::vector<std::string>> values;
  for (const auto& k : keys) {
    const config::Node v = grid[k];
    if (!v.is_sequence() || v.size() == 0) v.fail("", "expected a non-empty list of values", "write e.g. [2, 4, 8]");
    std::vector<std::string> vs;
    for (size_t i = 0; i < v.size(); ++i) vs.push_back(v.at(i).as_string());
    values.push_back(vs);
  }
  // Points in grid order (the last key varies fastest).
  std::vector<std::vector<std::string>> points{{}};
  for (const auto& vs : values) {
    std::vector<std::vector<std::string>> next;
    for (const auto& p : points)
      for (const auto& v : vs) {
        auto q = p;
        q.push_back(v);
        next.push_back(q);
      }
    points.swap(next);
  }
  // Resume: rows already in the output (keyed by their grid values) are kept as they are.
  // A serving scenario's rows carry its latency and throughput figures (serving_sweep_columns).
  bool serving = false;
  try {
    serving = load_scenario(scenario.string(), fixed).kind == WorkloadKind::Serving;
  } catch (const config::InputError&) {  // the base alone may be incomplete: each row says why
  }
  const std::vector<std::string> result_cols =
      serving ? serving_sweep_columns()
              : std::vector<std::string>{"num_gpus", "step_time_s", "tokens_per_s", "tokens_per_s_per_gpu",
                                         "tflops_per_gpu", "mfu", "memory_per_gpu_bytes", "oom", "bottleneck",
                                         "scaling_efficiency", "error"};
  const size_t num_gpus_col = keys.size(), per_gpu_col = keys.size() + 3, efficiency_col = keys.size() + 9,
               error_col = keys.size() + result_cols.size() - 1, width = keys.size() + result_cols.size();
  std::vector<std::string> header_fields = keys;
  header_fields.insert(header_fields.end(), result_cols.begin(), result_cols.end());
  const std::string header = join_csv(header_fields);
  std::map<std::string, std::vector<std::string>> done_fields;
  if (std::ifstream in{csv_path}) {
    std::string line;
    if (std::getline(in, line) && line == header)
      while (std::getline(in, line)) {
        std::vector<std::string> f = split_csv(line);
        if (f.size() != width) continue;  // a damaged row is simulated again
        done_fields[join_csv({f.begin(), f.begin() + keys.size()})] = std::move(f);
      }
  }
  std::vector<std::vector<std::string>> rows(points.size());
  std::vector<char> todo(points.size(), 1);
  SweepSummary sum;
  sum.points = points.size();
  for (size_t i = 0; i < points.size(); ++i) {
    if (auto it = done_fields.find(join_csv(points[i])); it != done_fields.end()) {
      rows[i] = it->second;
      todo[i] = 0;
      ++sum.resumed;
    }
  }
  std::unique_ptr<tbb::global_control> limit;
  if (threads > 0) limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);
  std::atomic<size_t> finished{0};
  const size_t total = points.size() - sum.resumed;
  tbb::parallel_for(size_t(0), points.size(), [&](size_t i) {
    if (!todo[i]) return;
    std::vector<std::string> row = points[i];
    row.resize(width);
    try {
      std::vector<std::string> sets = fixed;
      for (size_t j = 0; j < keys.size(); ++j) sets.push_back(keys[j] + "=" + points[i][j]);
      const Scenario s = load_scenario(scenario.string(), sets);
      if (serving != (s.kind == WorkloadKind::Serving))
        throw config::InputError(scenario.string(), 0, "serving", "this point is not the same kind of scenario as the sweep's base",
                                 "sweep serving scenarios over serving keys");
      if (serving) {
        const std::vector<std::string> values = serving_sweep_row(s.serving);
        std::copy(values.begin(), values.end(), row.begin() + keys.size());
        rows[i] = std::move(row);
        const size_t n = ++finished;
        if (n % 16 == 0 || n == total) progress << "\r" << n << "/" << total << " points" << std::flush;
        return;
      }
      if (s.kind != WorkloadKind::Training)
        throw config::InputError(scenario.string(), 0, "", "sweeps need a training scenario", "use one with model:");
      const TrainingResult r = simulate_training(s.training, RunOptions::step_only());
      const auto num = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.9g", v);
        return std::string(buf);
      };
      const std::vector<std::string> values = {std::to_string(r.num_gpus), num(r.step_time_s), num(r.tokens_per_s),
                                               num(r.tokens_per_s_per_gpu), num(r.model_tflops_per_gpu), num(r.mfu),
                                               num(r.memory_per_gpu_bytes), r.oom ? "true" : "false", r.bottleneck};
      std::copy(values.begin(), values.end(), row.begin() + keys.size());
    } catch (const std::exception& e) {
      row[error_col] = e.what();
    }
    rows[i] = std::move(row);
    const size_t n = ++finished;
    if (n % 16 == 0 || n == total) progress << "\r" << n << "/" << total << " points" << std::flush;
  });
  if (total > 0) progress << "\n";
  if (!serving) fill_scaling_efficiency(rows, keys, num_gpus_col, per_gpu_col, efficiency_col);
  std::string text = header + "\n";
  for (const auto& r : rows) {
    text += join_csv(r) + "\n";
    if (!r[error_col].empty()) ++sum.invalid;
  }
  write_text_atomically(csv_path, text);
  sum.simulated = total;
  return sum;
}

}  // namespace stacksim::analysis
