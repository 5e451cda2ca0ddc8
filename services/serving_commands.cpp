#include "services/serving_commands.hpp"

#include <cstdio>

#include "services/output.hpp"
#include "services/serving_datasets.hpp"

namespace stacksim::analysis {

int print_serving_catalog(const std::string& what, std::ostream& out) {
  char line[320];
  if (what == "engines") {
    out << "serving engines (serving.engine, models/serving/engines):\n";
    for (const auto& name : serving::engine_names()) {
      const serving::EngineProfile e = serving::load_engine_profile(name);
      std::snprintf(
          line, sizeof line,
          "  %-14s newest %-8s max_num_seqs %4d  batched tokens %6lld  block %3d  memory %.2f  chunked prefill %s\n",
          e.name.c_str(), e.version.c_str(), e.max_num_seqs, e.max_num_batched_tokens, e.block_size_tokens,
          e.gpu_memory_utilization, e.chunked_prefill ? "on" : "off");
      out << line;
    }
    return 0;
  }
  out << "serving datasets (workload.dataset, " << default_serving_datasets_path() << "):\n";
  const auto mean = [](const DatasetLengths& l) {
    return l.mean ? std::to_string(static_cast<long long>(*l.mean + 0.5)) : std::string("n/a");
  };
  for (const auto& d : bundled_serving_datasets()) {
    std::snprintf(line, sizeof line, "  %-28s mean input %6s  output %6s tokens  (%lld samples, %s tokenizer)\n",
                  d.name.c_str(), mean(d.input).c_str(), mean(d.output).c_str(), d.samples, d.tokenizer.c_str());
    out << line;
  }
  return 0;
}

// Chrome-trace JSON: one track per instance with its engine steps (prefill/decode counts, KV use),
// and one track of request lifetimes (queue + prefill to the first token, then decode).
void write_serving_trace(const std::string& path, const Scenario& s, const ServingRun& r) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "engine steps: " + s.name}}}});
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 2}, {"args", {{"name", "requests"}}}});
  for (const auto& st : r.result.step_records) {
    const std::string name = st.prefill_seqs > 0 ? (st.decode_seqs > 0 ? "mixed step" : "prefill step") : "decode step";
    events.push_back({{"name", name},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", st.instance + (st.prefill_pool ? 10000 : 0)},
                      {"ts", st.start_s * 1e6},
                      {"dur", st.seconds * 1e6},
                      {"args",
                       {{"decode_seqs", st.decode_seqs},
                        {"prefill_seqs", st.prefill_seqs},
                        {"prefill_tokens", st.prefill_tokens},
                        {"kv_utilization", st.kv_utilization}}}});
  }
  for (const auto& q : r.result.requests) {
    const int lane = static_cast<int>(q.id % 64);  // requests overlap: spread them over lanes
    events.push_back({{"name", "request " + std::to_string(q.id) + " to first token"},
                      {"ph", "X"},
                      {"pid", 2},
                      {"tid", lane},
                      {"ts", q.arrival_s * 1e6},
                      {"dur", (q.first_token_s - q.arrival_s) * 1e6},
                      {"args", {{"input_tokens", q.input_tokens}, {"instance", q.instance}}}});
    events.push_back({{"name", "request " + std::to_string(q.id) + " decode"},
                      {"ph", "X"},
                      {"pid", 2},
                      {"tid", lane},
                      {"ts", q.first_token_s * 1e6},
                      {"dur", (q.finish_s - q.first_token_s) * 1e6},
                      {"args", {{"output_tokens", q.output_tokens}, {"preemptions", q.preemptions}}}});
  }
  write_json_atomically(path, nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}});
}

}  // namespace stacksim::analysis
