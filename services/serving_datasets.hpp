// Request-length statistics of public serving datasets (models/workload/serving_datasets.yaml):
// what a scenario's workload.dataset or a validation case's serving.dataset names, so that lengths
// the scenario leaves out can be taken from the dataset. Only published figures; a length the
// file leaves null is not invented.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "models/serving/request_workload.hpp"

namespace stacksim::analysis {

struct DatasetLengths {
  std::optional<double> mean, stdev;
  long long min_tokens = 1;
  std::optional<long long> max_tokens;
};

struct ServingDataset {
  std::string name;
  std::vector<std::string> aliases;
  std::string description, tokenizer, source, url;
  DatasetLengths input, output;
  long long samples = 0;
};

// The bundled table (STACKSIM_SERVING_DATASETS overrides the file), loaded once per process.
const std::vector<ServingDataset>& bundled_serving_datasets();
std::string default_serving_datasets_path();

// The dataset a name or a case's free text names: the name or an alias as the text's first word
// ("sharegpt (200 prompts, fixed seed)" -> sharegpt), case-insensitive; nullptr when none.
const ServingDataset* find_serving_dataset(const std::string& text);

// A length distribution from the dataset's statistics: normal(mean, stdev) clamped to [min, max]
// where the spread is published; else, with published bounds, the maximum-entropy distribution on
// [min, max] with that mean (a truncated exponential: the least-assuming shape the published
// figures allow); else the mean as a fixed length. nullopt when the mean is null.
std::optional<serving::LengthDist> dataset_length_dist(const DatasetLengths& l);

}  // namespace stacksim::analysis
