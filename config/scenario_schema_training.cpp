// The scenario schema, part 1: the top level, the cluster, the model, the parallel plan, the
// host pipeline, checkpoints, failures, prices, software and the collective benchmark. Each row
// is one key: type, unit, default, range, one line of doc (config/schema.hpp). The parsers
// (topologies/builders.cpp, models/workload/*, models/host/*, services/*) read these keys; a
// key added there is added here, and docs/scenario.md is regenerated (`stacksim schema --markdown`).
#include "config/scenario_schema_rows.hpp"

namespace stacksim::config::rows {

namespace {

void add_top_and_cluster(std::vector<KeySpec>& t) {
  t.push_back(text("name", "the file's stem", "the scenario's name in outputs"));
  t.push_back(text("description", "", "free text, not read"));
  t.push_back(section("hardware", "what-if swaps of hardware"));
  t.push_back(
      text("hardware.gpu", "the node's GPU", "the GPU in every node (wins over cluster.gpu); any usual spelling"));
  t.push_back(section("cluster", "the machines: node type, count and fabric (required)"));
  t.push_back(text("cluster.node", "", "node type, models/hardware/nodes/*.yaml (required)"));
  t.push_back(integer("cluster.nodes", "nodes", "", 1, kNoLimit, "number of nodes (required)"));
  t.push_back(text("cluster.gpu", "the node's GPU", "GPU profile, models/hardware/gpus/*.yaml"));
  t.push_back(integer("cluster.gpus_per_node", "GPUs", "the node's", 1, 1024, "GPUs per node"));
  t.push_back(integer("cluster.nics_per_node", "NICs", "the node's", 0, 1024, "scale-out NICs per node"));
  t.push_back(text("cluster.nic", "the node's NIC", "NIC profile, models/hardware/nics/*.yaml"));
  t.push_back(flag("cluster.gpudirect_rdma", "true", "false: inter-node GPU traffic goes through host memory"));
  t.push_back(section("cluster.fabric", "the scale-out network"));
  t.push_back(choice("cluster.fabric.topology", "fat_tree|rail_optimized|single_switch|dragonfly", "the node's",
                     "fabric shape (dragonfly: HPE Slingshot, Cray Aries)"));
  t.push_back(integer("cluster.fabric.tiers", "switch tiers", "chosen from the size", 2, 3, "fat-tree tiers"));
  t.push_back(number("cluster.fabric.oversubscription", "down:up", "1", 1, 1024, "fat-tree taper (1 = non-blocking)"));
  t.push_back(integer("cluster.fabric.radix", "ports", "the NIC's switch", -kNoLimit, kNoLimit, "switch ports"));
  t.push_back(quantity("cluster.fabric.switch_latency", Dimension::Time, 0, "ns", "the NIC's switch", 0, false,
                       kNoLimit, "one switch hop's latency, with its unit (e.g. 600 ns)"));
  t.push_back(choice("cluster.fabric.routing", "dmodk|ecmp", "dmodk on InfiniBand, ecmp on Ethernet",
                     "dmodk: static fat-tree routing; ecmp: per-flow hashing"));
  t.push_back(integer("cluster.fabric.group_switches", "switches", "radix / 2", -kNoLimit, kNoLimit,
                      "dragonfly: switches per group"));
  t.push_back(integer("cluster.fabric.nics_per_switch", "NICs", "radix / 4", -kNoLimit, kNoLimit,
                      "dragonfly: NICs per switch"));
  t.push_back(integer("cluster.fabric.global_links_per_switch", "links", "radix / 4", -kNoLimit, kNoLimit,
                      "dragonfly: global links per switch"));
  t.push_back(section("storage", "the job's storage per node; replaces the node type's NVMe figures"));
  t.push_back(quantity("storage.read_GBps", Dimension::Bandwidth, 1e9, "GB/s", "the node's", 1e6, false, kNoLimit,
                       "read bandwidth per node (loaders; at least 1 MB/s)"));
  t.push_back(quantity("storage.write_GBps", Dimension::Bandwidth, 1e9, "GB/s", "the node's", 0, true, kNoLimit,
                       "write bandwidth per node (checkpoints)"));
}

void add_model(std::vector<KeySpec>& t) {
  t.push_back(section("model", "the network trained or served (required)"));
  t.push_back(text("model.preset", "", "a bundled model (`stacksim catalog models`); keys beside it override it"));
  t.push_back(text("model.hf_config", "", "a Hugging Face config.json, relative to the scenario file"));
  t.push_back(text("model.name", "the preset's", "the model's name in outputs"));
  t.push_back(integer("model.layers", "layers", "", 1, 10'000, "Transformer layers"));
  t.push_back(integer("model.hidden", "", "", 1, 1 << 20, "hidden size"));
  t.push_back(integer("model.heads", "", "", 1, 1 << 16, "attention heads"));
  t.push_back(integer("model.kv_heads", "", "heads", 1, kNoLimit, "key/value heads (GQA)"));
  t.push_back(integer("model.head_dim", "", "hidden / heads", 1, kNoLimit, "per-head dimension"));
  t.push_back(integer("model.ffn_hidden", "", "4 x hidden", 1, 1 << 24, "MLP inner size"));
  t.push_back(integer("model.vocab", "tokens", "", 1, 100'000'000, "vocabulary size"));
  t.push_back(integer("model.seq_len", "tokens", "", 1, 100'000'000, "tokens per sequence"));
  t.push_back(choice("model.mlp", "gelu|swiglu", "the preset's, else gelu", "MLP kind"));
  t.push_back(choice("model.norm", "layernorm|rmsnorm", "the preset's, else layernorm", "normalisation"));
  t.push_back(flag("model.tied_embeddings", "the preset's", "input and output embeddings shared"));
  t.push_back(flag("model.qkv_bias", "the preset's", "biases on the Q/K/V projections"));
  t.push_back(choice("model.attention", "flash|flash2|flash1|unfused", "flash", "attention kernel implementation"));
  t.push_back(choice("model.attention_kind", "mha|gqa|mla", "from kv_heads / mla", "attention kind (a check)"));
  t.push_back(integer("model.sliding_window", "tokens", "0", 0, kNoLimit, "windowed attention (0 = none)"));
  t.push_back(integer("model.full_attention_every", "layers", "0", 0, kNoLimit,
                      "with sliding_window: every Nth layer attends fully (GPT-OSS)"));
  t.push_back(integer("model.mtp_layers", "layers", "0", 0, 16, "multi-token prediction depth (DeepSeek-V3)"));
  t.push_back(section("model.mla", "multi-head latent attention sizes (DeepSeek)"));
  t.push_back(integer("model.mla.q_lora_rank", "", "0", -kNoLimit, kNoLimit, "query latent rank (0 = none)"));
  t.push_back(integer("model.mla.kv_lora_rank", "", "", -kNoLimit, kNoLimit, "key/value latent rank (required)"));
  t.push_back(integer("model.mla.qk_nope_head_dim", "", "", -kNoLimit, kNoLimit, "non-rotary Q/K head dim (required)"));
  t.push_back(integer("model.mla.qk_rope_head_dim", "", "", -kNoLimit, kNoLimit, "rotary Q/K head dim (required)"));
  t.push_back(integer("model.mla.v_head_dim", "", "", -kNoLimit, kNoLimit, "value head dim (required)"));
  t.push_back(
      section("model.sparse_attention", "DeepSeek Sparse Attention: an indexer picks the keys (DeepSeek-V3.2)"));
  t.push_back(
      integer("model.sparse_attention.index_heads", "heads", "", -kNoLimit, kNoLimit, "indexer heads (required)"));
  t.push_back(
      integer("model.sparse_attention.index_head_dim", "", "", -kNoLimit, kNoLimit, "indexer head dim (required)"));
  t.push_back(integer("model.sparse_attention.topk_tokens", "tokens", "", -kNoLimit, kNoLimit,
                      "keys each query attends (required)"));
  t.push_back(section("model.moe", "mixture of experts"));
  t.push_back(integer("model.moe.experts", "experts", "", -kNoLimit, kNoLimit, "routed experts (required)"));
  t.push_back(integer("model.moe.top_k", "experts", "", -kNoLimit, kNoLimit, "experts per token (required)"));
  t.push_back(integer("model.moe.shared_experts", "experts", "0", -kNoLimit, kNoLimit, "always-active experts"));
  t.push_back(integer("model.moe.expert_ffn_hidden", "", "ffn_hidden", -kNoLimit, kNoLimit, "one expert's MLP size"));
  t.push_back(integer("model.moe.first_dense_layers", "layers", "0", -kNoLimit, kNoLimit, "leading dense layers"));
  t.push_back(integer("model.moe.layer_freq", "layers", "1", -kNoLimit, kNoLimit, "an MoE layer every N layers"));
  t.push_back(number("model.moe.imbalance", "x mean", "the preset's, else 1.1", -kNoLimit, kNoLimit,
                     "the busiest rank's load over the mean"));
  t.push_back(
      number("model.moe.capacity_factor", "x mean", "0 (dropless)", -kNoLimit, kNoLimit, "token capacity per expert"));
  t.push_back(integer("model.moe.groups", "groups", "0", -kNoLimit, kNoLimit, "expert groups (DeepSeek n_group)"));
  t.push_back(
      integer("model.moe.groups_per_token", "groups", "0", -kNoLimit, kNoLimit, "groups a token may use (topk_group)"));
}

void add_host(std::vector<KeySpec>& t) {
  t.push_back(section("host", "the data pipeline (simulated for one node) and host launch costs"));
  t.push_back(quantity("host.cpu_seconds_per_sample", Dimension::Time, 1.0, "s", "0", 0, false, 3600,
                       "read + decode + augment + tokenise on one core"));
  t.push_back(integer("host.loader_workers", "per GPU", "8", 1, 1024, "data-loader worker processes"));
  t.push_back(integer("host.prefetch", "batches", "2", 0, 1024, "batches prefetched (0 = the training process loads)"));
  t.push_back(choice("host.workers_build", "batches|samples", "batches",
                     "batches: PyTorch DataLoader; samples: a parallel map (tf.data, DALI)"));
  t.push_back(number("host.sample_cost_cv", "std / mean", "0", 0, 10, "spread of a sample's cost (lognormal)"));
  t.push_back(quantity("host.storage_bytes_per_sample", Dimension::Bytes, 1.0, "B", "0", 0, false, 1e12,
                       "bytes read from storage per sample"));
  t.push_back(quantity("host.storage_read_bandwidth", Dimension::Bandwidth, 0, "GB/s", "the node's NVMe", 1e6, false,
                       kNoLimit, "a network filesystem's read bandwidth per node, with its unit"));
  t.push_back(quantity("host.sample_bytes", Dimension::Bytes, 1.0, "B", "0", 0, false, 1e12,
                       "host-to-device bytes per sample"));
  t.push_back(flag("host.pinned", "true", "false: pageable copies staged by the CPU, blocking the step"));
  t.push_back(quantity("host.kernel_launch", Dimension::Time, 0, "us", "measured per stack", 0, false, 0.1,
                       "host time per kernel launch, with its unit"));
  t.push_back(quantity("host.step_overhead", Dimension::Time, 0, "ms", "measured per stack", 0, false, 60,
                       "host work per step besides launches, with its unit"));
  t.push_back(section("checkpoint", "periodic checkpoints"));
  t.push_back(integer("checkpoint.every_steps", "steps", "", 1, kNoLimit, "a checkpoint every N steps (required)"));
  // At most 1 EB: a 100-trillion-parameter model's 14 B per parameter is 1.4 PB.
  t.push_back(
      quantity("checkpoint.bytes", Dimension::Bytes, 1.0, "B", "14 B per parameter", 0, true, 1e18, "checkpoint size"));
  t.push_back(quantity("checkpoint.write_bandwidth", Dimension::Bandwidth, 0, "GB/s", "the node's storage", 0, true,
                       kNoLimit, "write bandwidth per node, with its unit"));
  t.push_back(quantity("checkpoint.aggregate_write_bandwidth", Dimension::Bandwidth, 0, "GB/s", "none", 0, true,
                       kNoLimit, "the storage target's total write bandwidth, with its unit"));
  t.push_back(flag("checkpoint.async", "false", "true: only the device-to-host snapshot blocks"));
  t.push_back(section("failures", "node or GPU failures (needs checkpoint)"));
  t.push_back(positive("failures.mtbf_hours_per_node", "hours", "", "mean time between failures of one node"));
  t.push_back(positive("failures.mtbf_hours_per_gpu", "hours", "", "or of one GPU"));
  t.push_back(quantity("failures.restart_s", Dimension::Time, 1.0, "s", "0", 0, false, kNoLimit,
                       "time to restart after a failure"));
  t.push_back(section("prices", "prices, for cost per million tokens"));
  t.push_back(number("prices.gpu_hour_usd", "USD/h", "0", 0, kNoLimit, "per GPU-hour"));
  t.push_back(number("prices.node_hour_usd", "USD/h", "0", 0, kNoLimit, "per node-hour"));
  t.push_back(number("prices.nic_hour_usd", "USD/h", "0", 0, kNoLimit, "per NIC-hour"));
  t.push_back(section("software", "the stack that runs the job (stacks/*.yaml; docs/stacks.md)"));
  t.push_back(text("software.framework", "megatron-core", "framework family (required in the section)"));
  t.push_back(text("software.version", "", "the framework's version"));
  t.push_back(integer("software.year", "", "", 0, 2100, "the year of the stack (2015 to 2100)"));
}

void add_collective(std::vector<KeySpec>& t) {
  t.push_back(section("collective", "a collective benchmark instead of model/parallelism"));
  t.push_back(choice("collective.op", "all_reduce|reduce_scatter|all_gather|all_to_all|broadcast|send_recv", "",
                     "the collective (required)"));
  t.push_back(integer("collective.gpus", "GPUs", "the cluster's", 2, kNoLimit, "GPUs 0..N-1 take part"));
  t.push_back(list("collective.ranks", "", "the GPUs that take part, e.g. [0, 1, 2, 3]"));
  t.push_back(typed("collective.sizes", KeyType::ListOrMap, "", "1 KiB to 8 GiB by 2",
                    "message sizes: a list, or {min, max, factor}"));
  t.push_back(quantity("collective.sizes.min", Dimension::Bytes, 1.0, "B", "", 0, true, kNoLimit, "smallest size"));
  t.push_back(quantity("collective.sizes.max", Dimension::Bytes, 1.0, "B", "", 0, true, kNoLimit, "largest size"));
  t.push_back(typed("collective.sizes.factor", KeyType::Number, "", "2", "step between sizes", 1, kNoLimit, true));
  t.push_back(choice("collective.algorithm", "auto|ring|tree|hierarchical|nvls|in_switch|nvls_tree", "auto",
                     "the algorithm (auto: NCCL's choice)"));
}

}  // namespace

void add_training_rows(std::vector<KeySpec>& t) {
  add_top_and_cluster(t);
  add_model(t);
  add_plan_rows(t);
  add_host(t);
  add_collective(t);
}

}  // namespace stacksim::config::rows
