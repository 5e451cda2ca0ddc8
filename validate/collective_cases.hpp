// Predicts the `kind: collective` cases of a validation file (/work/shared/validation format
// stacksim-validation/1): the case's cluster is built from its hardware fields and the collective
// is timed alone, nccl-tests style, then compared with the published bus bandwidth.
//
// One global policy fills what a case leaves null (every filled field is listed in `defaults`):
//  - node type from the GPU name: A100-SXM4-40GB -> dgx-a100-40gb, A100* -> dgx-a100,
//    H100* -> dgx-h100, H200* -> dgx-h200, B200* -> dgx-b200, V100* -> dgx-2-v100, MI300X ->
//    mi300x-8gpu; the node's own
//    intra-node fabric (intra_node null or "nvlink": the system's standard NVLink/NVSwitch);
//  - gpus_per_node null: the node type's 8; op.gpus null: hardware.num_gpus, else 2 nodes (a
//    multi-node statement without a count); NIC: nic_gbps/fabric when given, else the node's;
//  - op.bytes null (maintainers' peak statements): 8 GiB;
//  - algorithm: multi-node all-reduce cases run NVLSTree across 8-GPU NVSwitch boxes that reduce
//    in-switch (unless the notes say NCCL_NVLS_ENABLE=0); else NCCL's choice (Auto) for a stated
//    GPU count with no algorithm named, Ring otherwise (a statement without a count is a network
//    peak: the maintainers benchmark it with Ring, specs.yaml NCCLT_196/NCCL_812); every other label (Azure's "NVLS" on
//    A100, which has no NVLS) means NCCL's default, i.e. Auto;
//  - rack-scale nodes (NVL72): a smaller gpus_per_node is a tray of one NVLink rack, unless the
//    system or notes describe NVL(ink) partitions: then each partition is an NVLink domain with its
//    GPUs' own NICs, joined over the fabric;
//  - per-NIC all-to-all statements: the case's all-to-all is simulated and the per-NIC bandwidth is
//    the network bytes each GPU sends, S (n-g)/n, over the time (each GPU owns one NIC).
#pragma once
#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

namespace stacksim::coll {

struct CollectiveCaseResult {
  std::string metric;  // busbw_GBps or per_nic_GBps
  double predicted = 0, measured = 0;
  std::string error;  // non-empty: the case could not be predicted, and why
  std::vector<std::string> defaults;
};

// One case (a map of the validation file).
CollectiveCaseResult predict_collective_case(const YAML::Node& c);

struct CollectiveCaseOutcome {
  std::string id, kind, source;
  CollectiveCaseResult result;
  double error_pct = 0;  // 100 (predicted - measured) / measured, when result.error is empty
};

struct ErrorSummary {
  size_t n = 0;
  double mape_pct = 0, max_abs_error_pct = 0;
};

struct CollectiveValidation {
  std::vector<CollectiveCaseOutcome> cases;  // in file order; errors included
  ErrorSummary overall;
  std::map<std::string, ErrorSummary> by_source;
  size_t errors = 0;
};

// All collective cases of a validation file. Throws config::InputError if the file is unreadable.
CollectiveValidation validate_collective_cases(const std::string& cases_path);

}  // namespace stacksim::coll
