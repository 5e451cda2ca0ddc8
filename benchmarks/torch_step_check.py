#!/usr/bin/python3
"""Predicted vs measured PyTorch training steps on one GPU (probe/torch_step.py's file).

Each measured configuration becomes a one-GPU scenario (the model torch_step.py builds: pre-norm
LayerNorm, GELU MLP of 4x hidden, tied embeddings, SDPA causal attention, eager PyTorch modules,
bf16 autocast over fp32 weights, AdamW, no recomputation) and is simulated twice: with the catalogue's GPU profile and with the
calibrated profile fitted from the same machine's probe run (calibration/profiles/); the host cost
per kernel is the default, itself measured there (models/host/host.hpp). Prints step
time predicted vs measured and the error per row, then the MAPE of each profile.

    /usr/bin/python3 benchmarks/torch_step_check.py [STEPS.yaml] [PROFILE.yaml] [--binary build/bin/stacksim]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_STEPS = os.path.join(ROOT, "calibration/measurements/h100-sxm5-80gb-devicevm-2026-11-24-torch-step.yaml")
DEFAULT_PROFILE = os.path.join(ROOT, "calibration/profiles/H100-SXM5-80GB-calibrated.yaml")


# The catalogue node of each GPU a measurement file may come from (one GPU of it is used).
NODES = {"H100-SXM5-80GB": "dgx-h100", "H200-SXM-141GB": "dgx-h200"}


def scenario(row, gpu, node):
    return {
        "name": f"{row['model']}-mb{row['micro_batch']}",
        "cluster": {"node": node, "nodes": 1, "gpus_per_node": 1, "gpu": gpu},
        "model": {"layers": row["layers"], "hidden": row["hidden"], "heads": row["heads"],
                  "ffn_hidden": row["ffn_hidden"], "vocab": row["vocab"], "seq_len": row["seq_len"],
                  "mlp": "gelu", "norm": "layernorm", "tied_embeddings": True, "attention": "flash"},
        "parallelism": {"tp": 1, "pp": 1, "dp": 1, "micro_batch": row["micro_batch"],
                        "global_batch": row["micro_batch"], "precision": "bf16", "recompute": "none",
                        "kernels": "eager", "autocast": True},
    }


def predict(binary, rows, gpu, node, hardware_dir, workdir):
    env = dict(os.environ)
    if hardware_dir:
        env["STACKSIM_HARDWARE_DIR"] = hardware_dir
    out = []
    for i, row in enumerate(rows):
        path = os.path.join(workdir, f"{gpu}-{i}.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(scenario(row, gpu, node), f)
        res = subprocess.run([binary, "run", path, "--json", path + ".json"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if res.returncode != 0:
            sys.exit(f"torch_step_check: stacksim failed on {row['model']} mb{row['micro_batch']}: {res.stderr}")
        with open(path + ".json") as f:
            out.append(json.load(f)["step_time_s"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("steps", nargs="?", default=DEFAULT_STEPS)
    ap.add_argument("profile", nargs="?", default=DEFAULT_PROFILE)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/bin/stacksim"))
    args = ap.parse_args()
    with open(args.steps) as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict) or doc.get("format") != "stacksim-torch-step/1":
        sys.exit(f"torch_step_check: {args.steps} is not a stacksim-torch-step/1 file (probe/torch_step.py writes one)")
    rows = doc["steps"]
    with open(args.profile) as f:
        calibrated = yaml.safe_load(f)["name"]
    base = calibrated.removesuffix("-calibrated")
    if base not in NODES:
        sys.exit(f"torch_step_check: no node for {base} (the profile's catalogue GPU); known: {', '.join(NODES)}")
    with tempfile.TemporaryDirectory() as tmp:
        # The bundled catalogue with the calibrated profile beside the sourced one.
        hw = os.path.join(tmp, "hardware")
        shutil.copytree(os.path.join(ROOT, "models/hardware"), hw)
        shutil.copy(args.profile, os.path.join(hw, "gpus", os.path.basename(args.profile)))
        catalogue = predict(args.binary, rows, base, NODES[base], None, tmp)
        fitted = predict(args.binary, rows, calibrated, NODES[base], hw, tmp)
    print(f"measured: {doc['machine']['gpu_name']}, torch {doc['machine'].get('torch', '?')} "
          f"({os.path.relpath(args.steps, ROOT)})")
    print(f"{'model':10s} {'mb':>3s} {'measured s':>11s} {'catalogue s':>12s} {'err%':>6s} {'calibrated s':>13s} {'err%':>6s}")
    errs = {"catalogue": [], "calibrated": []}
    for row, a, b in zip(rows, catalogue, fitted):
        m = row["step_time_s"]
        ea, eb = 100 * (a / m - 1), 100 * (b / m - 1)
        errs["catalogue"].append(ea)
        errs["calibrated"].append(eb)
        print(f"{row['model']:10s} {row['micro_batch']:3d} {m:11.4f} {a:12.4f} {ea:+6.1f} {b:13.4f} {eb:+6.1f}")
    for k, v in errs.items():
        print(f"{k:10s} profile: MAPE {sum(abs(e) for e in v) / len(v):.1f}%, mean {sum(v) / len(v):+.1f}%, "
              f"max |error| {max(abs(e) for e in v):.1f}% over {len(v)} steps")


if __name__ == "__main__":
    main()
