#include "models/serving/request_workload.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config/error.hpp"

namespace stacksim::serving {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform draw in (0, 1) from (seed, request, stream, attempt): counter-based, so request i's
// lengths and gap do not depend on any other draw.
double uniform(uint64_t seed, long long index, int stream, int attempt = 0) {
  const uint64_t h = mix(mix(mix(seed) ^ static_cast<uint64_t>(index)) ^
                         (static_cast<uint64_t>(stream) << 32 | static_cast<uint32_t>(attempt)));
  return (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double normal(uint64_t seed, long long index, int stream, int attempt = 0) {
  const double u1 = uniform(seed, index, stream, 2 * attempt), u2 = uniform(seed, index, stream, 2 * attempt + 1);
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

long long draw_length(const LengthDist& d, uint64_t seed, long long index, int stream) {
  double v = d.mean_tokens;
  switch (d.kind) {
    case LengthDist::Kind::Fixed:
      break;
    case LengthDist::Kind::Uniform:
      v = d.min_tokens + uniform(seed, index, stream) * static_cast<double>(d.max_tokens - d.min_tokens + 1);
      v = std::floor(v);
      break;
    case LengthDist::Kind::Normal:
      v = std::round(d.mean_tokens + d.stddev_tokens * normal(seed, index, stream));
      break;
    case LengthDist::Kind::Histogram: {
      double total = 0;
      for (const auto& b : d.bins) total += b.second;
      double pick = uniform(seed, index, stream) * total;
      long long lo = d.min_tokens;
      for (const auto& [edge, weight] : d.bins) {
        if (pick < weight || &edge == &d.bins.back().first) {
          v = std::floor(lo + uniform(seed, index, stream + 100) * static_cast<double>(std::max(1LL, edge - lo)));
          break;
        }
        pick -= weight;
        lo = edge;
      }
      break;
    }
  }
  return std::clamp(static_cast<long long>(v), std::max(1LL, d.min_tokens), d.max_tokens);
}

// Gamma(shape k, scale 1) by Marsaglia and Tsang (2000); k < 1 boosted by U^(1/k).
double gamma_unit(double k, uint64_t seed, long long index) {
  const double boost = k < 1 ? std::pow(uniform(seed, index, 7), 1.0 / k) : 1.0;
  const double a = k < 1 ? k + 1 : k;
  const double d = a - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const double x = normal(seed, index, 5, attempt);
    const double v = std::pow(1 + c * x, 3);
    if (v <= 0) continue;
    const double u = uniform(seed, index, 6, attempt);
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v * boost;
  }
  return a * boost;  // the mean; unreachable in practice (acceptance > 95 % per attempt)
}

[[noreturn]] void bad(const Workload& w, const std::string& key, const std::string& reason, const std::string& fix) {
  throw config::InputError(w.origin, 0, "serving.workload." + key, reason, fix);
}

void check_lengths(const Workload& w, const LengthDist& d, const std::string& key) {
  if (d.min_tokens < 1 || d.max_tokens < d.min_tokens)
    bad(w, key, "length bounds must satisfy 1 <= min <= max", "fix " + key + ".min / max");
  if (d.kind == LengthDist::Kind::Fixed && d.mean_tokens < 1)
    bad(w, key, "a length must be >= 1 token", "set it to >= 1");
  if (d.kind == LengthDist::Kind::Normal && (d.mean_tokens < 1 || d.stddev_tokens < 0))
    bad(w, key, "normal lengths need mean >= 1 and stddev >= 0", "fix " + key);
  if (d.kind == LengthDist::Kind::Histogram) {
    if (d.bins.empty()) bad(w, key, "a histogram needs bins", "give [[upper_edge_tokens, weight], ...]");
    long long prev = d.min_tokens - 1;
    double total = 0;
    for (const auto& [edge, weight] : d.bins) {
      if (edge <= prev) bad(w, key, "histogram edges must increase", "sort the bins by edge");
      if (weight < 0) bad(w, key, "histogram weights must be >= 0", "fix the weights");
      prev = edge;
      total += weight;
    }
    if (total <= 0) bad(w, key, "histogram weights sum to 0", "give some bin a positive weight");
  }
}

}  // namespace

const char* arrival_mode_name(ArrivalMode m) {
  switch (m) {
    case ArrivalMode::Offline:
      return "offline";
    case ArrivalMode::Concurrency:
      return "concurrency";
    case ArrivalMode::Poisson:
      return "poisson";
    case ArrivalMode::Gamma:
      return "gamma";
    case ArrivalMode::FixedBatch:
      return "fixed_batch";
    case ArrivalMode::Trace:
      return "trace";
  }
  return "?";
}

double LengthDist::expected_tokens() const {
  switch (kind) {
    case Kind::Fixed:
    case Kind::Normal:
      return std::clamp(mean_tokens, static_cast<double>(std::max(1LL, min_tokens)), static_cast<double>(max_tokens));
    case Kind::Uniform:
      return 0.5 * static_cast<double>(min_tokens + max_tokens);
    case Kind::Histogram: {
      double total = 0, sum = 0;
      long long lo = min_tokens;
      for (const auto& [edge, weight] : bins) {
        total += weight;
        sum += weight * 0.5 * static_cast<double>(lo + edge);
        lo = edge;
      }
      return total > 0 ? sum / total : mean_tokens;
    }
  }
  return mean_tokens;
}

void check_workload(const Workload& w) {
  if (w.mode == ArrivalMode::Trace) {
    if (w.trace.empty()) bad(w, "trace", "the trace has no requests", "give a trace file with at least one row");
    double prev = 0;
    for (size_t i = 0; i < w.trace.size(); ++i) {
      const TraceRequest& r = w.trace[i];
      const std::string row = "row " + std::to_string(i + 1);
      if (!(r.arrival_s >= 0) || !std::isfinite(r.arrival_s))
        bad(w, "trace", row + ": arrival time " + std::to_string(r.arrival_s) + " s is negative or not a number",
            "arrival times are seconds from the start, >= 0");
      if (r.arrival_s < prev)
        bad(w, "trace", row + ": arrival time " + std::to_string(r.arrival_s) + " s is before the previous row's",
            "sort the trace by arrival time");
      if (r.input_tokens < 1 || r.output_tokens < 1)
        bad(w, "trace", row + ": input and output tokens must be >= 1", "fix the row's token counts");
      prev = r.arrival_s;
    }
    return;
  }
  if (w.num_requests < 1) bad(w, "num_requests", "no requests to simulate", "set num_requests >= 1");
  if ((w.mode == ArrivalMode::Poisson || w.mode == ArrivalMode::Gamma) &&
      !(w.rate_per_s > 0 && std::isfinite(w.rate_per_s)))
    bad(w, "request_rate_per_s", "an open-loop workload needs a request rate > 0", "set request_rate_per_s");
  if (w.mode == ArrivalMode::Gamma && !(w.gamma_shape > 0))
    bad(w, "gamma_shape", "the gamma shape (burstiness) must be > 0", "1 = Poisson; < 1 burstier");
  if (w.mode == ArrivalMode::Concurrency && w.concurrency < 1)
    bad(w, "max_concurrency", "closed-loop concurrency must be >= 1", "set max_concurrency");
  if (w.mode == ArrivalMode::FixedBatch && w.batch_size < 1)
    bad(w, "batch_size", "a fixed batch must hold >= 1 request", "set batch_size");
  check_lengths(w, w.input, "input_len");
  check_lengths(w, w.output, "output_len");
}

Request draw_request(const Workload& w, long long index) {
  Request r;
  r.id = index;
  if (w.mode == ArrivalMode::Trace) {
    const TraceRequest& t = w.trace.at(static_cast<size_t>(index));
    r.arrival_s = t.arrival_s;
    r.input_tokens = t.input_tokens;
    r.output_tokens = t.output_tokens;
    return r;
  }
  r.input_tokens = draw_length(w.input, w.seed, index, 1);
  r.output_tokens = draw_length(w.output, w.seed, index, 2);
  return r;
}

double draw_gap_s(const Workload& w, long long index) {
  if (w.mode == ArrivalMode::Poisson) return -std::log(uniform(w.seed, index, 3)) / w.rate_per_s;
  if (w.mode == ArrivalMode::Gamma) return gamma_unit(w.gamma_shape, w.seed, index) / (w.gamma_shape * w.rate_per_s);
  return 0;
}

std::vector<TraceRequest> load_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw config::InputError(path, 0, "serving.workload.trace", "cannot read the trace file", "check the path");
  std::vector<TraceRequest> out;
  std::string line;
  int line_no = 0;
  auto field = [&](const nlohmann::json& j, std::initializer_list<const char*> names, const std::string& what) {
    for (const char* n : names)
      if (j.contains(n) && j[n].is_number()) return j[n].get<double>();
    throw config::InputError(path, line_no, what, "row has no number for " + what, "give " + what + " on every row");
  };
  const bool jsonl = path.size() > 6 && path.substr(path.size() - 6) == ".jsonl";
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    nlohmann::json row;
    if (jsonl) {
      row = nlohmann::json::parse(line, nullptr, false);
      if (row.is_discarded() || !row.is_object())
        throw config::InputError(path, line_no, "", "not a JSON object", "one JSON object per line");
    } else {
      std::vector<std::string> cells;
      std::stringstream ss(line);
      std::string cell;
      while (std::getline(ss, cell, ',')) cells.push_back(cell);
      if (header.empty()) {
        header = cells;
        continue;
      }
      if (cells.size() != header.size())
        throw config::InputError(
            path, line_no, "",
            "row has " + std::to_string(cells.size()) + " cells, the header " + std::to_string(header.size()),
            "one value per column");
      for (size_t i = 0; i < cells.size(); ++i) {
        char* end = nullptr;
        const double v = std::strtod(cells[i].c_str(), &end);
        if (end == cells[i].c_str())
          throw config::InputError(path, line_no, header[i], "'" + cells[i] + "' is not a number", "fix the cell");
        row[header[i]] = v;
      }
    }
    TraceRequest r;
    r.arrival_s = field(row, {"arrival_s", "timestamp", "arrival_time"}, "arrival_s");
    r.input_tokens = static_cast<long long>(
        field(row, {"input_tokens", "prompt_tokens", "input_len", "input_length"}, "input_tokens"));
    r.output_tokens =
        static_cast<long long>(field(row, {"output_tokens", "output_len", "output_length"}, "output_tokens"));
    out.push_back(r);
  }
  return out;
}

}  // namespace stacksim::serving
