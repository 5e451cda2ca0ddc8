// Wall time of simulating one all-reduce (1 GiB per rank, NCCL's Auto choice, which also plans
// and estimates ring, tree and hierarchical) across 1,024 and 16,384 H100 GPUs on a two/three-tier
// fat-tree of radix-64 switches. The cluster is built once; each iteration plans the collective,
// binds a fresh engine and runs it (time_collective). Target: 16k GPUs in <= 2 s.
#include <benchmark/benchmark.h>

#include <string>

#include "models/collectives/collective.hpp"
#include "models/hardware/node_spec.hpp"
#include "topologies/builders.hpp"

using namespace stacksim;

namespace {

void BM_AllReduceFatTree(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const coll::Algorithm algorithm = static_cast<coll::Algorithm>(state.range(1));
  static const hw::NodeCatalog catalog = hw::NodeCatalog::load_dir(hw::default_hardware_dir());
  const std::string yaml =
      "node: dgx-h100\nnodes: " + std::to_string(gpus / 8) + "\nfabric: {topology: fat_tree, radix: 64}\n";
  const topo::ClusterConfig cfg = topo::parse_cluster_config(config::Node::load_string(yaml, "bench"), catalog);
  const topo::Cluster cluster = topo::build_cluster(cfg);
  const coll::CommTuning tuning = coll::tuning_for(cfg.node, cfg.nic);
  coll::Collective c;
  c.op = coll::CollectiveOp::AllReduce;
  c.bytes = double(1ull << 30);
  c.algorithm = algorithm;
  for (int i = 0; i < gpus; ++i) c.ranks.push_back(i);
  coll::CollectiveTiming t;
  // No DoNotOptimize: the result is used below, and Debian's benchmark 1.7 "+r" constraint
  // corrupts a double under GCC -O3 (google/benchmark#1340).
  for (auto _ : state) t = coll::time_collective(cluster, tuning, c);
  state.counters["busbw_GBps"] = benchmark::Counter(t.busbw_Bps / 1e9);
  state.SetLabel(std::string(coll::algorithm_name(t.algorithm)) + "/" + t.protocol + ", simulated " +
                 std::to_string(t.seconds * 1e3) + " ms");
}

}  // namespace

BENCHMARK(BM_AllReduceFatTree)
    ->ArgsProduct({{1024, 16384}, {static_cast<int>(coll::Algorithm::Ring), static_cast<int>(coll::Algorithm::Auto)}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

BENCHMARK_MAIN();
