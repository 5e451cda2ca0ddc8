#include "models/workload/model_catalog.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

namespace stacksim::workload {

std::string ModelCatalog::match_key(const std::string& name) {
  std::string key;
  int depth = 0;
  // A Hugging Face id's organisation ("meta-llama/") is not part of the name.
  const size_t slash = name.rfind('/');
  for (size_t i = slash == std::string::npos ? 0 : slash + 1; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '(')
      ++depth;
    else if (c == ')')
      depth = std::max(0, depth - 1);
    else if (depth == 0 && (std::isalnum(static_cast<unsigned char>(c)) || c == '.'))
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return key;
}

ModelCatalog ModelCatalog::load_dir(const std::string& dir) {
  std::vector<std::string> files;
  if (std::filesystem::is_directory(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw config::InputError(dir, 0, "", "no model catalogue files found",
                             "check the folder (or STACKSIM_ARCHITECTURES_DIR)");
  ModelCatalog c;
  for (const auto& f : files) {
    const config::Node list = config::Node::load_file(f);
    if (!list.is_sequence()) list.fail("", "expected a list of models", "write one '- name: ...' entry per model");
    for (size_t i = 0; i < list.size(); ++i) {
      const config::Node e = list.at(i);
      e.require_map();
      e.check_keys({"name", "aliases", "source", "model"});
      CatalogModel m{e.required_string("name"), {}, e.required_string("source"), e["model"], {}};
      if (e.has("aliases")) {
        const config::Node a = e["aliases"];
        if (!a.is_sequence()) e.fail("aliases", "expected a list of names", "write aliases: [name, name]");
        for (size_t k = 0; k < a.size(); ++k) m.aliases.push_back(a.at(k).as_string());
      }
      if (m.model.is_null()) e.fail("model", "missing", "add the model's shape as a scenario model: section");
      if (m.model.has("preset") || m.model.has("hf_config"))
        e.fail("model", "a catalogue entry cannot refer to another model", "write the shape out");
      // Parsed as a scenario's model section; a missing pretraining length is allowed here (a
      // scenario using the entry must then give seq_len).
      YAML::Node shape = YAML::Clone(m.model.yaml());
      if (!shape["seq_len"]) shape["seq_len"] = 1;
      m.config = parse_model(config::Node(shape, m.model.file(), m.model.path()), dir);
      if (!m.model.has("seq_len")) m.config.seq_len = 0;
      m.config.name = m.name;
      const size_t index = c.models_.size();
      std::vector<std::string> names = m.aliases;
      names.push_back(m.name);
      for (const auto& n : names) {
        const std::string k = match_key(n);
        for (const auto& [other, at] : c.index_)
          if (other == k && at != index)
            e.fail("aliases", "'" + n + "' is already a name of " + c.models_[at].name, "remove one of the two");
        c.index_.emplace_back(k, index);
      }
      c.models_.push_back(std::move(m));
    }
  }
  std::sort(c.index_.begin(), c.index_.end());
  return c;
}

const CatalogModel* ModelCatalog::find(const std::string& name) const {
  const std::string k = match_key(name);
  const auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(k, size_t{0}));
  return it != index_.end() && it->first == k ? &models_[it->second] : nullptr;
}

const CatalogModel& ModelCatalog::get(const std::string& name, const config::Node& where,
                                      const std::string& key) const {
  if (const CatalogModel* m = find(name)) return *m;
  std::vector<std::string> names;
  for (const auto& m : models_) names.push_back(m.name);
  const std::string near = config::nearest(name, names);
  where.fail(key, "unknown model '" + name + "'",
             (near.empty() ? "" : "did you mean '" + near + "'? ") +
                 "'stacksim catalog models' lists the bundled models; or describe the model's shape (layers, hidden, "
                 "heads, ...) or give hf_config");
}

std::string default_architectures_dir() {
  if (const char* env = std::getenv("STACKSIM_ARCHITECTURES_DIR")) return env;
  return std::string(STACKSIM_SOURCE_DIR) + "/models/workload/architectures";
}

const ModelCatalog& bundled_models() {
  static const ModelCatalog catalog = ModelCatalog::load_dir(default_architectures_dir());
  return catalog;
}

}  // namespace stacksim::workload
