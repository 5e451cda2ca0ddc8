#!/usr/bin/python3
"""Bad-input check of `stacksim validate`: one case per (kind, source) of a case file, each with one
field replaced by a hostile value, must come back as a prediction or as "not buildable: <reason>"
on its own line, exit 0, within a time limit; never a crash, an internal error, a hang or a whole
run lost to one bad case. Prints the offenders; exits 1 if there are any.

    /usr/bin/python3 benchmarks/fuzz_cases.py [build/bin/stacksim] [../shared/validation/cases.yaml]
"""
import concurrent.futures
import copy
import os
import subprocess
import sys
import tempfile

import yaml

FIELDS = ["hardware.gpu", "hardware.num_gpus", "hardware.gpus_per_node", "hardware.intra_node",
          "hardware.inter_node.fabric", "hardware.inter_node.nics_per_node", "hardware.inter_node.nic_gbps",
          "model.layers", "model.hidden", "model.heads", "model.kv_heads", "model.ffn_hidden", "model.vocab",
          "model.seq_len", "model.mlp", "model.moe", "model.attention", "model.moe.experts", "model.moe.top_k",
          "model.moe.expert_ffn_hidden", "model.moe.shared_experts", "model.moe.moe_layer_freq",
          "parallelism.tp", "parallelism.pp", "parallelism.dp", "parallelism.cp", "parallelism.ep", "parallelism.vp",
          "parallelism.sequence_parallel", "parallelism.micro_batch", "parallelism.global_batch",
          "parallelism.recompute", "parallelism.zero", "parallelism.precision",
          "op.m", "op.n", "op.k", "op.dtype", "op.size_bytes", "op.gpus", "op.batch_per_gpu",
          "measured.step_time_s", "measured.tokens_per_s_per_gpu", "measured.mfu", "measured.tflops",
          "measured.busbw_GBps", "measured.bandwidth_GBps", "notes"]
VALUES = [None, 0, -1, 3, 10**12, 1e-30, 2.5, float("nan"), "abc", "", True, [], {},
          "FlashAttention-2, sliding window 0, head dim -5, alternate layers",
          "pipeline schedule: DualPipe; multi-token-prediction depth: 99; HYBRID_SHARD; checkpointing of every 0th layer",
          "--recompute-modules mla_up_proj moe shared_experts core_attn; expert-tensor-parallel 1; ETP1"]


def set_path(case, path, value):
    node = case
    keys = path.split(".")
    for k in keys[:-1]:
        if not isinstance(node.get(k), dict):
            return False
        node = node[k]
    if keys[-1] not in node:
        return False
    node[keys[-1]] = value
    return True


def check(binary, case, path, value):
    c = copy.deepcopy(case)
    if not set_path(c, path, value):
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump({"format": "stacksim-validation/1", "cases": [c]}, f)
        name = f.name
    try:
        r = subprocess.run([binary, "validate", name], capture_output=True, text=True, timeout=120)
        lines = [line for line in r.stdout.splitlines() if line.startswith(c["id"][:40])]
        if r.returncode != 0 or len(lines) != 1 or "internal" in (r.stdout + r.stderr).lower():
            return (c["id"], path, repr(value), r.returncode, (r.stderr or r.stdout).strip()[-200:])
    except subprocess.TimeoutExpired:
        return (c["id"], path, repr(value), "timeout", "")
    finally:
        os.unlink(name)
    return None


def main() -> int:
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/bin/stacksim"
    cases_file = sys.argv[2] if len(sys.argv) > 2 else "../shared/validation/cases.yaml"
    with open(cases_file) as f:
        doc = yaml.safe_load(f)
    picked = {}
    for c in doc["cases"] if isinstance(doc, dict) else doc:
        picked.setdefault((c.get("kind"), c.get("source", {}).get("key")), c)
    jobs = [(case, path, value) for case in picked.values() for path in FIELDS for value in VALUES]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda j: check(binary, *j), jobs))
    ran = sum(1 for case, path, value in jobs if set_path(copy.deepcopy(case), path, value))
    bad = [r for r in results if r]
    print(f"{len(picked)} cases, {ran} mutated runs, {len(bad)} offenders")
    for b in bad:
        print(*b, sep=" | ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
