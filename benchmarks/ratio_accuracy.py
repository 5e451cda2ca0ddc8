"""How well predictions compare two runs of one source: the question an upgrade or a scale-out asks.

For two training rows of the same source and metric, the predicted ratio between them over the
measured one is (1 + e_a) / (1 + e_b), with e the rows' signed errors; its error is
100 * (max(r, 1/r) - 1) %, the same whichever row comes first. A stack's constant shortfall (a
source whose software reaches 80 % of what the model predicts everywhere) cancels in the ratio,
which is what `stacksim compare` reports. Pairs are grouped by what differs between them:
  - GPU type (same model and GPU count): the upgrade question;
  - GPU count (same model, GPU type and precision): scaling;
  - any two rows of the source.
Used by accuracy_report.py and heldout_report.py.
"""
import statistics

import yaml


def case_keys(yaml_paths):
    """id -> (source key, GPU, GPU count, model name, precision) from stacksim-validation/1 files."""
    keys = {}
    for path in yaml_paths:
        with open(path) as f:
            data = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        for c in data.get("cases", []) if isinstance(data, dict) else []:
            hw = c.get("hardware") or {}
            keys[c["id"]] = (
                (c.get("source") or {}).get("key"),
                hw.get("gpu"),
                hw.get("num_gpus"),
                (c.get("model") or {}).get("name"),
                (c.get("parallelism") or {}).get("precision"),
            )
    return keys


def pair_errors(cases, keys):
    """cases: `stacksim validate --json` records. Returns {group: [error % per pair]}."""
    by_source = {}
    for c in cases:
        if c.get("kind") != "training" or c.get("error_pct") is None or c["id"] not in keys:
            continue
        by_source.setdefault((keys[c["id"]][0], c["metric"]), []).append((keys[c["id"]], c["error_pct"]))
    groups = {"GPU type": [], "GPU count": [], "any two rows": []}
    for rows in by_source.values():
        for i in range(len(rows)):
            for j in range(i + 1, len(rows)):
                (ka, ea), (kb, eb) = rows[i], rows[j]
                r = (1 + ea / 100) / (1 + eb / 100)
                err = 100 * (max(r, 1 / r) - 1)
                groups["any two rows"].append(err)
                same_model = ka[3] == kb[3]
                if same_model and ka[2] == kb[2] and ka[1] != kb[1]:
                    groups["GPU type"].append(err)
                if same_model and ka[1] == kb[1] and ka[4] == kb[4] and ka[2] != kb[2]:
                    groups["GPU count"].append(err)
    return groups


def print_table(groups):
    print("| pairs of rows of one source (what differs) | pairs | median error of the ratio % | mean % |")
    print("|---|---:|---:|---:|")
    labels = {
        "GPU type": "the GPU type (same model and GPU count): an upgrade",
        "GPU count": "the GPU count (same model, GPU and precision): scaling",
        "any two rows": "anything",
    }
    for g, errs in groups.items():
        if errs:
            print(f"| {labels[g]} | {len(errs)} | {statistics.median(errs):.1f} | {statistics.mean(errs):.1f} |")
