#!/usr/bin/python3
"""Bad-input check of `stacksim run`: every KEY=VALUE of a grid of hostile values over a scenario's
keys must end in a result (exit 0) or an input error naming the key (exit 2) within a time limit;
never a crash, an internal error or a hang. Prints the offenders; exits 1 if there are any.

    /usr/bin/python3 benchmarks/fuzz_overrides.py [build/bin/stacksim] [scenarios/llama3-70b-64xh100.yaml]
"""
import subprocess
import sys

KEYS = ["model.preset", "cluster.nodes", "cluster.fabric.topology", "cluster.fabric.oversubscription", "cluster.fabric.routing",
        "cluster.fabric.group_switches", "cluster.fabric.nics_per_switch", "cluster.fabric.global_links_per_switch", "cluster.gpus_per_node", "cluster.nics_per_node",
        "model.layers", "model.hidden", "model.heads", "model.kv_heads", "model.ffn_hidden", "model.vocab",
        "model.seq_len", "model.moe.experts", "model.moe.top_k", "model.moe.groups", "model.moe.groups_per_token", "model.sliding_window", "model.full_attention_every", "model.mtp_layers",
        "parallelism.tp", "parallelism.pp", "parallelism.cp", "parallelism.dp", "parallelism.vp", "parallelism.ep", "parallelism.etp",
        "parallelism.micro_batch", "parallelism.global_batch", "parallelism.zero", "parallelism.shard_size",
        "parallelism.first_stage_layers", "parallelism.last_stage_layers", "parallelism.stage_layers", "parallelism.recompute_layers",
        "parallelism.dp_bucket_size", "parallelism.cp_comm", "parallelism.ep_dispatch", "parallelism.fsdp_impl", "parallelism.fp8_recipe", "parallelism.schedule", "parallelism.p2p_scatter_gather", "parallelism.ep_overlap", "parallelism.recompute_modules", "parallelism.optimizer_moments", "parallelism.offload_optimizer", "parallelism.fp8_swiglu_cache", "parallelism.chunked_loss", "parallelism.offload_activations", "parallelism.autocast", "parallelism.kernels", "parallelism.cuda_graphs", "parallelism.account_for_embedding_in_pipeline_split", "parallelism.account_for_loss_in_pipeline_split",
        "host.loader_workers", "host.cpu_seconds_per_sample", "host.kernel_launch", "host.step_overhead", "host.sample_bytes", "host.pinned",
        "host.prefetch", "host.storage_bytes_per_sample", "host.workers_build", "host.sample_cost_cv", "storage.read_GBps", "storage.write_GBps",
        "checkpoint.every_steps", "checkpoint.bytes", "checkpoint.async"]
VALUES = ["0", "-1", "1", "3", "7", "65536", "1000000000", "1e30", "1e-30", "0.001", "2.5", "-0.0", "nan", "inf",
          "abc", "true", "[]", "{}", "''"]


def main() -> int:
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/bin/stacksim"
    scenario = sys.argv[2] if len(sys.argv) > 2 else "scenarios/llama3-70b-64xh100.yaml"
    bad = []
    for key in KEYS:
        for value in VALUES:
            try:
                r = subprocess.run([binary, "run", scenario, "--set", f"{key}={value}"], capture_output=True, text=True,
                                   timeout=60)
                if r.returncode not in (0, 2) or (r.returncode == 2 and "key '" not in r.stderr):
                    bad.append((key, value, r.returncode, r.stderr.strip()[-200:]))
            except subprocess.TimeoutExpired:
                bad.append((key, value, "timeout", ""))
    print(f"{len(KEYS) * len(VALUES)} runs, {len(bad)} offenders")
    for b in bad:
        print(*b, sep=" | ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
