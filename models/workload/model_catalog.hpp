// The bundled model catalogue: public architectures by name (models/workload/architectures/*.yaml,
// one file per family, each entry a scenario `model:` section with its source). Scenarios use it as
//   model: {preset: Llama 3 70B, seq_len: 4096}    (keys given beside preset override it)
// and the validation policy fills a case's unstated shape fields from the entry its model name
// names. Names match whatever the spelling: case, spaces, '-', '_' and parenthesised remarks do not
// count ("LLAMA3_8B", "Llama-3-8B" and "Llama 3 8B (Table 4)" are one name).
#pragma once
#include <string>
#include <vector>

#include "config/yaml.hpp"
#include "models/workload/model_config.hpp"

namespace stacksim::workload {

struct CatalogModel {
  std::string name;
  std::vector<std::string> aliases;
  std::string source;
  config::Node model;  // the entry's `model:` section as written
  ModelConfig config;  // parsed; seq_len 0 where no pretraining length is published
};

class ModelCatalog {
 public:
  static ModelCatalog load_dir(const std::string& dir);  // <dir>/*.yaml; InputError naming the file

  const CatalogModel* find(const std::string& name) const;  // nullptr when unknown
  // InputError (the nearest name suggested) when unknown.
  const CatalogModel& get(const std::string& name, const config::Node& where, const std::string& key) const;
  const std::vector<CatalogModel>& models() const { return models_; }

  // The spelling-insensitive form names are matched by.
  static std::string match_key(const std::string& name);

 private:
  std::vector<CatalogModel> models_;
  std::vector<std::pair<std::string, size_t>> index_;  // match key -> entry, sorted
};

// STACKSIM_ARCHITECTURES_DIR or the source tree's models/workload/architectures.
std::string default_architectures_dir();
// Loaded once per process (thread-safe function-local static).
const ModelCatalog& bundled_models();

}  // namespace stacksim::workload
