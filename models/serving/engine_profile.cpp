#include "models/serving/engine_profile.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "config/yaml.hpp"
#include "models/serving/dtype.hpp"

namespace stacksim::serving {
namespace {

std::vector<long> version_parts(const std::string& v) {
  std::vector<long> parts;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, '.')) parts.push_back(std::strtol(item.c_str(), nullptr, 10));
  return parts;
}

// Entries override the keys they list on top of the previous entry's profile.
void apply_entry(const config::Node& e, EngineProfile& p) {
  e.check_keys({"version",
                "max_num_seqs",
                "max_num_batched_tokens",
                "block_size_tokens",
                "gpu_memory_utilization",
                "kv_free_memory_fraction",
                "chunked_prefill",
                "prefix_caching",
                "scheduler",
                "kv_admission",
                "host_overlapped",
                "step_overhead_s",
                "step_overhead_cuda_graph_s",
                "per_sequence_overhead_s",
                "gemm_efficiency",
                "attention_efficiency",
                "quantized_checkpoint_kv_cache_dtype",
                "sparse_prefill_latent",
                "sparse_prefill_min_heads",
                "sparse_prefill_dense_max_tokens",
                "sources"});
  p.version = e.required_string("version");
  if (auto v = e.optional_int("max_num_seqs")) p.max_num_seqs = static_cast<int>(e.positive("max_num_seqs", *v));
  if (auto v = e.optional_int("max_num_batched_tokens"))
    p.max_num_batched_tokens = static_cast<long long>(e.positive("max_num_batched_tokens", *v));
  if (auto v = e.optional_int("block_size_tokens"))
    p.block_size_tokens = static_cast<int>(e.positive("block_size_tokens", *v));
  if (auto v = e.optional_number("gpu_memory_utilization"))
    p.gpu_memory_utilization = e.positive("gpu_memory_utilization", *v);
  if (auto v = e.optional_number("kv_free_memory_fraction"))
    p.kv_free_memory_fraction = e.positive("kv_free_memory_fraction", *v);
  p.chunked_prefill = e.bool_or("chunked_prefill", p.chunked_prefill);
  p.prefix_caching = e.bool_or("prefix_caching", p.prefix_caching);
  p.host_overlapped = e.bool_or("host_overlapped", p.host_overlapped);
  if (e.has("scheduler")) {
    const std::string s = e.required_string("scheduler");
    if (s == "mixed")
      p.scheduler = SchedulerPolicy::Mixed;
    else if (s == "prefill_first")
      p.scheduler = SchedulerPolicy::PrefillFirst;
    else
      e.fail("scheduler", "unknown scheduler '" + s + "'", "use mixed or prefill_first");
  }
  if (e.has("kv_admission")) {
    const std::string s = e.required_string("kv_admission");
    if (s == "on_demand")
      p.kv_admission = KvAdmission::OnDemand;
    else if (s == "reserve_full")
      p.kv_admission = KvAdmission::ReserveFull;
    else
      e.fail("kv_admission", "unknown admission '" + s + "'", "use on_demand or reserve_full");
  }
  if (auto v = e.optional_number("step_overhead_s")) p.step_overhead_s = e.non_negative("step_overhead_s", *v);
  if (auto v = e.optional_number("step_overhead_cuda_graph_s"))
    p.step_overhead_cuda_graph_s = e.non_negative("step_overhead_cuda_graph_s", *v);
  if (auto v = e.optional_number("per_sequence_overhead_s"))
    p.per_sequence_overhead_s = e.non_negative("per_sequence_overhead_s", *v);
  if (auto v = e.optional_number("gemm_efficiency")) p.gemm_efficiency = e.positive("gemm_efficiency", *v);
  if (auto v = e.optional_number("attention_efficiency"))
    p.attention_efficiency = e.positive("attention_efficiency", *v);
  p.sparse_prefill_latent = e.bool_or("sparse_prefill_latent", p.sparse_prefill_latent);
  if (auto v = e.optional_int("sparse_prefill_min_heads"))
    p.sparse_prefill_min_heads = static_cast<int>(e.positive("sparse_prefill_min_heads", *v));
  if (auto v = e.optional_int("sparse_prefill_dense_max_tokens"))
    p.sparse_prefill_dense_max_tokens =
        static_cast<long long>(e.non_negative("sparse_prefill_dense_max_tokens", static_cast<double>(*v)));
  if (e.has("quantized_checkpoint_kv_cache_dtype")) {
    const std::string s = e.required_string("quantized_checkpoint_kv_cache_dtype");
    try {
      p.quantized_checkpoint_kv_dtype = parse_dtype(s);
    } catch (const std::invalid_argument& err) {
      e.fail("quantized_checkpoint_kv_cache_dtype", err.what(), "use bf16, fp16 or fp8");
    }
  }
  const config::Node src = e["sources"];
  for (size_t i = 0; i < src.size(); ++i) p.sources.push_back(src.at(i).yaml().as<std::string>());
}

}  // namespace

std::string default_engines_dir() {
  if (const char* env = std::getenv("STACKSIM_ENGINES_DIR")) return env;
  return std::string(STACKSIM_SOURCE_DIR) + "/models/serving/engines";
}

std::vector<std::string> engine_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(default_engines_dir(), ec))
    if (f.path().extension() == ".yaml") names.push_back(f.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

EngineProfile load_engine_profile(const std::string& name, const std::string& version) {
  const std::string file = default_engines_dir() + "/" + name + ".yaml";
  if (!std::filesystem::exists(file)) {
    const auto names = engine_names();
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw config::InputError("", 0, "serving.engine", "unknown serving engine '" + name + "'", "use one of: " + list,
                             config::nearest(name, names));
  }
  const config::Node root = config::Node::load_file(file);
  root.check_keys({"name", "aliases", "versions"});
  const config::Node entries = root["versions"];
  if (entries.size() == 0) root.fail("versions", "no versions listed", "add at least one entry");
  EngineProfile p;
  p.name = root.required_string("name");
  const config::Node aliases = root["aliases"];
  for (size_t i = 0; i < aliases.size(); ++i) p.aliases.push_back(aliases.at(i).yaml().as<std::string>());
  p.file = file;
  const std::vector<long> want = version_parts(version);
  for (size_t i = 0; i < entries.size(); ++i) {
    const config::Node e = entries.at(i);
    if (!version.empty() && i > 0 && version_parts(e.required_string("version")) > want) break;
    apply_entry(e, p);
  }
  return p;
}

}  // namespace stacksim::serving
