// Loader of the GPU catalogue (format and sources in gpu_spec.hpp).
#include "models/hardware/gpu_spec.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "config/yaml.hpp"

namespace stacksim::hw {
namespace {

// "1830 MHz", "1.98 GHz", "700 W", "1.2 kW": sim::units has no frequency or power dimension, and
// these two figures are descriptive (nothing in the model reads them), so a small parser suffices.
double scaled_value(const config::Node& node, const std::string& key,
                    const std::vector<std::pair<std::string, double>>& units, const std::string& example) {
  const std::string text = node[key].as_string();
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  for (const auto& [name, scale] : units)
    if (end != text.c_str() && unit == name) return node.positive(key, value * scale);
  node.fail(key, "'" + text + "' is not a quantity of the expected kind", "write it like '" + example + "'");
}

}  // namespace

double GpuSpec::peak(const std::string& dtype) const {
  auto it = peak_flops_per_s.find(dtype);
  return it == peak_flops_per_s.end() ? 0.0 : it->second;
}

double GpuSpec::max_efficiency(const std::string& dtype) const {
  auto it = gemm_max_efficiency.find(dtype);
  if (it != gemm_max_efficiency.end()) return it->second;
  // A dtype without its own measurement runs at the best measured 16-bit fraction (V100 lists
  // fp16 only; bf16 runs as fp16 there).
  for (const char* fallback : {"bf16", "fp16"})
    if (it = gemm_max_efficiency.find(fallback); it != gemm_max_efficiency.end()) return it->second;
  return 0.75;
}

GpuSpec GpuCatalog::parse_file(const std::string& path) {
  using sim::Dimension;
  const config::Node n = config::Node::load_file(path);
  n.require_map();
  n.check_keys({"name", "aliases", "architecture", "default_node", "sm_count", "boost_clock", "peak", "memory",
                "l2_cache", "tdp", "calibration", "sources", "notes"});
  GpuSpec g;
  g.file = path;
  g.name = n.required_string("name");
  const config::Node al = n["aliases"];
  for (size_t i = 0; al.is_sequence() && i < al.size(); ++i) g.aliases.push_back(al.at(i).as_string());
  g.architecture = n.required_string("architecture");
  g.default_node = n.string_or("default_node", "");
  g.sm_count = static_cast<int>(n.positive("sm_count", n.required_int("sm_count")));
  const config::Node pk = n["peak"];
  pk.check_keys({"fp32", "tf32", "fp16", "bf16", "fp8"});
  for (const std::string d : {"fp32", "tf32", "fp16", "bf16", "fp8"})
    if (pk.has(d)) g.peak_flops_per_s[d] = pk.positive(d, pk.required_quantity(d, Dimension::FlopRate));
  if (!g.peak_flops_per_s.count("fp16") && !g.peak_flops_per_s.count("bf16"))
    pk.fail("fp16", "a 16-bit peak is required", "add fp16: <TFLOPS> (dense, no sparsity)");
  const config::Node mem = n["memory"];
  mem.check_keys({"capacity", "bandwidth", "type"});
  g.memory_bytes = mem.positive("capacity", mem.required_quantity("capacity", Dimension::Bytes));
  g.hbm_Bps = mem.positive("bandwidth", mem.required_quantity("bandwidth", Dimension::Bandwidth));
  g.l2_bytes = n.optional_quantity("l2_cache", Dimension::Bytes).value_or(0);
  if (n.has("l2_cache")) n.positive("l2_cache", g.l2_bytes);
  if (n.has("boost_clock")) g.boost_clock_Hz = scaled_value(n, "boost_clock", {{"MHz", 1e6}, {"GHz", 1e9}}, "1830 MHz");
  if (n.has("tdp")) g.tdp_W = scaled_value(n, "tdp", {{"W", 1.0}, {"kW", 1e3}}, "700 W");
  const config::Node src = n["sources"];
  for (size_t i = 0; src.is_sequence() && i < src.size(); ++i) g.sources.push_back(src.at(i).as_string());
  if (g.sources.empty())
    n.fail("sources", "every GPU profile must cite where its figures come from",
           "add sources: [\"specs.yaml gpus.<id> (<source ids>)\"] or state the assumption");
  const config::Node cal = n["calibration"];
  cal.check_keys({"gemm_max_efficiency", "hbm_efficiency", "kernel_overhead", "attention_efficiency",
                  "flash2_efficiency", "flash1_efficiency", "source"});
  const config::Node ge = cal["gemm_max_efficiency"];
  ge.check_keys({"fp32", "tf32", "fp16", "bf16", "fp8"});
  for (const std::string d : {"fp32", "tf32", "fp16", "bf16", "fp8"})
    if (ge.has(d)) {
      const double e = ge.required_number(d);
      if (!(e > 0 && e <= 1)) ge.fail(d, "an efficiency must be in (0, 1]", "use the measured fraction of peak");
      g.gemm_max_efficiency[d] = e;
    }
  if (!g.gemm_max_efficiency.count("fp16") && !g.gemm_max_efficiency.count("bf16"))
    ge.fail("bf16", "a 16-bit GEMM efficiency is required",
            "add bf16: <MAMF TFLOP/s over peak> (or the architecture sibling's value, saying so)");
  // Every calibration figure is stated in the file, with its source: no silent defaults.
  auto fraction = [](const config::Node& node, const std::string& key) {
    const double v = node.required_number(key);
    if (!(v > 0 && v <= 1)) node.fail(key, "an efficiency must be in (0, 1]", "use a fraction such as 0.85");
    return v;
  };
  g.hbm_efficiency = fraction(cal, "hbm_efficiency");
  g.kernel_overhead_s = cal.non_negative("kernel_overhead", cal.required_quantity("kernel_overhead", Dimension::Time));
  const config::Node att = cal["attention_efficiency"];
  att.check_keys({"forward", "backward"});
  g.attention_forward_efficiency = fraction(att, "forward");
  g.attention_backward_efficiency = fraction(att, "backward");
  // FlashAttention-2-class kernels: where unstated, the same as the best kernels (Ampere and older).
  g.flash2_forward_efficiency = g.attention_forward_efficiency;
  g.flash2_backward_efficiency = g.attention_backward_efficiency;
  if (cal.has("flash2_efficiency")) {
    const config::Node f2 = cal["flash2_efficiency"];
    f2.check_keys({"forward", "backward"});
    g.flash2_forward_efficiency = fraction(f2, "forward");
    g.flash2_backward_efficiency = fraction(f2, "backward");
  }
  if (cal.has("flash1_efficiency")) {
    const config::Node f1 = cal["flash1_efficiency"];
    f1.check_keys({"forward", "backward"});
    g.flash1_forward_efficiency = fraction(f1, "forward");
    g.flash1_backward_efficiency = fraction(f1, "backward");
  }
  g.calibration_source = cal.string_or("source", "");
  if (g.calibration_source.empty())
    cal.fail("source", "the calibration must say which measurement each fraction comes from",
             "add source: \"gemm: MAMF ... (specs.yaml measured_anchors); hbm: STREAM ...\"");
  return g;
}

void GpuCatalog::add(const GpuSpec& g) {
  auto taken = [&](const std::string& name) {
    if (!gpus_.count(name) && !alias_.count(name)) return;
    const std::string owner = gpus_.count(name) ? gpus_.at(name).file : gpus_.at(alias_.at(name)).file;
    throw config::InputError(g.file, 0, "name", "GPU name or alias '" + name + "' is already used by " + owner,
                             "rename it or drop the alias from one of the two files");
  };
  taken(g.name);
  for (const auto& a : g.aliases) taken(a);
  gpus_[g.name] = g;
  for (const auto& a : g.aliases) alias_[a] = g.name;
  spelled_.emplace(spelling(g.name), g.name);  // the first profile keeps a shared spelling
  for (const auto& a : g.aliases) spelled_.emplace(spelling(a), g.name);
}

// Upper case, dashes for spaces and underscores, without a vendor prefix: "NVIDIA H100 80GB" and
// "nvidia_h100_80gb" are both H100-80GB.
std::string GpuCatalog::spelling(const std::string& name) {
  std::string s;
  for (char ch : name) {
    const char c = (ch == ' ' || ch == '_') ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (c == '-' && (s.empty() || s.back() == '-')) continue;
    s += c;
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (const char* prefix : {"NVIDIA-", "AMD-", "INSTINCT-", "TESLA-"})
      if (s.rfind(prefix, 0) == 0 && s.size() > std::strlen(prefix)) {
        s.erase(0, std::strlen(prefix));
        stripped = true;
      }
  }
  return s;
}

std::string GpuCatalog::resolve(const std::string& name) const {
  if (gpus_.count(name)) return name;
  if (auto it = alias_.find(name); it != alias_.end()) return it->second;
  std::string key = spelling(name);
  if (auto it = spelled_.find(key); it != spelled_.end()) return it->second;
  // A memory type after the part ("H100 80GB HBM3") names no other part than the rest does.
  for (const char* suffix : {"-HBM3E", "-HBM3", "-HBM2E", "-HBM2"}) {
    const size_t n = std::strlen(suffix);
    if (key.size() > n && key.compare(key.size() - n, n, suffix) == 0) {
      if (auto it = spelled_.find(key.substr(0, key.size() - n)); it != spelled_.end()) return it->second;
    }
  }
  return structured_match(key);
}

// A spelling split into what tells parts apart: the part number ("A100", "MI300X"), the memory
// ("80GB", "80G") and the form factor (SXM*, PCIe, NVL, OAM); a memory type (HBM3) or "GPU" is not
// read, any other word is marked unread. {"", 0, ""} parts compare equal to anything.
GpuCatalog::Parts GpuCatalog::parts(const std::string& spelled) {
  Parts p;
  size_t start = 0;
  while (start <= spelled.size()) {
    size_t end = spelled.find('-', start);
    if (end == std::string::npos) end = spelled.size();
    const std::string word = spelled.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    const size_t digits = word.find_first_not_of("0123456789");
    if (digits > 0 && digits != std::string::npos && (word.substr(digits) == "GB" || word.substr(digits) == "G")) {
      p.memory_gb = std::atoi(word.c_str());
    } else if (word.rfind("SXM", 0) == 0 || word == "OAM") {
      p.form = "SXM";  // SXM2..SXM5 and AMD's OAM are the same socketed module, by generation
    } else if (word == "PCIE" || word == "NVL") {
      p.form = word;
    } else if (p.part.empty() && std::isalpha(static_cast<unsigned char>(word[0])) &&
               word.find_first_of("0123456789") != std::string::npos) {
      p.part = word;
    } else if (word.rfind("HBM", 0) != 0 && word != "GPU") {
      p.unread = true;
    }
  }
  return p;
}

// The last resort of resolve(): a profile with the same part number whose memory and form factor
// do not contradict the name's ("A100 80GB PCIe" is A100-PCIe-80GB, "H100-SXM-80GB" is
// H100-SXM5-80GB). Several such profiles: the one the bare part number names (the catalogue's
// choice for "A100"), else none, as an ambiguous name must not pick a part silently.
std::string GpuCatalog::structured_match(const std::string& spelled) const {
  const Parts want = parts(spelled);
  // A word it cannot place ("H100-FAKE-1TB") may name another part: no guess, the nearest names
  // are suggested instead.
  if (want.part.empty() || want.unread) return "";
  // A profile's parts from all its spellings: A100-SXM4-80GB is an A100 of 80 GB in SXM form
  // whether it is written "A100", "A100-80GB" or in full.
  std::map<std::string, Parts> profiles;
  for (const auto& [key, profile] : spelled_) {
    const Parts have = parts(key);
    Parts& p = profiles[profile];
    if (p.part.empty() || key == spelling(profile)) p.part = have.part;
    if (!p.memory_gb) p.memory_gb = have.memory_gb;
    if (p.form.empty()) p.form = have.form;
  }
  std::vector<std::string> found;
  for (const auto& [profile, have] : profiles) {
    if (have.part != want.part) continue;
    if (want.memory_gb && have.memory_gb && have.memory_gb != want.memory_gb) continue;
    if (!want.form.empty() && !have.form.empty() && have.form != want.form) continue;
    found.push_back(profile);
  }
  if (found.size() == 1) return found.front();
  if (auto it = spelled_.find(want.part); it != spelled_.end())
    if (std::find(found.begin(), found.end(), it->second) != found.end()) return it->second;
  return "";
}

GpuCatalog GpuCatalog::load_dir(const std::string& dir) {
  GpuCatalog c;
  std::vector<std::string> files;
  if (std::filesystem::is_directory(dir + "/gpus"))
    for (const auto& e : std::filesystem::directory_iterator(dir + "/gpus"))
      if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) c.add(parse_file(f));
  if (c.gpus_.empty()) throw config::InputError(dir + "/gpus", 0, "", "no GPU profiles found", "check the folder");
  return c;
}

bool GpuCatalog::has(const std::string& name) const { return !resolve(name).empty(); }

const GpuSpec& GpuCatalog::get(const std::string& name) const {
  if (const std::string profile = resolve(name); !profile.empty()) return gpus_.at(profile);
  std::vector<std::string> names;
  for (const auto& [k, v] : gpus_) names.push_back(k);
  for (const auto& [k, v] : alias_) names.push_back(k);
  std::string near = config::nearest(name, names);
  if (near.empty()) {
    // No close spelling: the profiles of the same part number ("H100-FAKE-1TB": the H100s).
    const std::string part = parts(spelling(name)).part;
    for (const auto& [k, v] : gpus_)
      if (!part.empty() && parts(spelling(k)).part == part) near += (near.empty() ? "" : "' or '") + k;
  }
  std::string all;
  for (const auto& [k, v] : gpus_) all += (all.empty() ? "" : ", ") + k;
  throw config::InputError("", 0, "gpu", "unknown GPU '" + name + "'",
                           (near.empty() ? "" : "did you mean '" + near + "'? ") + "Known GPUs: " + all +
                               " (add one as models/hardware/gpus/<name>.yaml)");
}

std::vector<std::string> GpuCatalog::names() const {
  std::vector<std::string> v;
  for (const auto& [k, s] : gpus_) v.push_back(k);
  return v;
}

}  // namespace stacksim::hw
