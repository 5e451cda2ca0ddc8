#include "models/analysis/sweep.hpp"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "config/yaml.hpp"
#include "models/analysis/output.hpp"
#include "models/analysis/scenario.hpp"
#include "models/analysis/training.hpp"

namespace stacksim::analysis {
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The first `n` comma-separated fields of a CSV line (quoted fields allowed), joined back.
std::string key_of_line(const std::string& line, size_t n) {
  std::string key, field;
  size_t fields = 0;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) {
      key += (fields ? "," : "") + field;
      field.clear();
      if (++fields == n) return key;
      continue;
    }
    field += c;
  }
  if (fields + 1 == n) key += (fields ? "," : "") + field;
  return key;
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
  std::map<std::string, std::string> done;
  const std::string header_cols = "step_time_s,tokens_per_s,tokens_per_s_per_gpu,tflops_per_gpu,mfu,memory_per_gpu_bytes,oom,bottleneck,error";
  std::string header;
  for (const auto& k : keys) header += csv_field(k) + ",";
  header += header_cols;
  if (std::ifstream in{csv_path}) {
    std::string line;
    if (std::getline(in, line) && line == header)
      while (std::getline(in, line))
        if (!line.empty()) done[key_of_line(line, keys.size())] = line;
  }
  std::vector<std::string> rows(points.size());
  std::vector<char> todo(points.size(), 1);
  SweepSummary sum;
  sum.points = points.size();
  for (size_t i = 0; i < points.size(); ++i) {
    std::string key;
    for (size_t j = 0; j < keys.size(); ++j) key += (j ? "," : "") + csv_field(points[i][j]);
    if (auto it = done.find(key); it != done.end()) {
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
    std::string row;
    for (size_t j = 0; j < keys.size(); ++j) row += csv_field(points[i][j]) + ",";
    try {
      std::vector<std::string> sets = fixed;
      for (size_t j = 0; j < keys.size(); ++j) sets.push_back(keys[j] + "=" + points[i][j]);
      const Scenario s = load_scenario(scenario.string(), sets);
      if (s.kind != WorkloadKind::Training)
        throw config::InputError(scenario.string(), 0, "", "sweeps need a training scenario", "use one with model:");
      const TrainingResult r = simulate_training(s.training, RunOptions{});
      char buf[400];
      std::snprintf(buf, sizeof buf, "%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%s,", r.step_time_s, r.tokens_per_s,
                    r.tokens_per_s_per_gpu, r.model_tflops_per_gpu, r.mfu, r.memory_per_gpu_bytes,
                    r.oom ? "true" : "false");
      row += buf + csv_field(r.bottleneck) + ",";
    } catch (const std::exception& e) {
      row += ",,,,,,,," + csv_field(e.what());
    }
    rows[i] = row;
    const size_t n = ++finished;
    if (n % 16 == 0 || n == total) progress << "\r" << n << "/" << total << " points" << std::flush;
  });
  if (total > 0) progress << "\n";
  std::string text = header + "\n";
  for (const auto& r : rows) {
    text += r + "\n";
    if (r.size() >= 2 && r.back() != ',' && r.find(",,,,,,,,") != std::string::npos) ++sum.invalid;
  }
  write_text_atomically(csv_path, text);
  sum.simulated = total;
  return sum;
}

}  // namespace stacksim::analysis
