#!/usr/bin/python3
"""Fits an engine profile's unsourced physical parameters (gemm_efficiency, step overheads) on the
serving dev set and judges each by leave-one-source-out cross-validation.

For every grid value the engine files are copied with that value set in one profile entry and
`stacksim validate CASES --json` runs on them (STACKSIM_ENGINES_DIR). A source's cases belong to
the entry their engine and version resolve to (engines without a profile run as vLLM's newest, as
the case builder does). For each source of the family: the value that minimises the macro MAPE
over the family's OTHER sources predicts the held-out source; the CV error is that prediction's
MAPE, beside the MAPE of the file's current value.

  benchmarks/serving_fit.py build/bin/stacksim ../shared/validation/serving_dev.yaml \
      tensorrt-llm 0.6 gemm_efficiency 0.6,0.7,0.8,0.9,1.0
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINES = os.path.join(HERE, "..", "models", "serving", "engines")


def version_tuple(v):
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3]) if v else ()


def entry_for(profiles, engine, version):
    if engine not in profiles:
        engine, version = "vllm", ""
    entries = profiles[engine]["versions"]
    chosen = entries[0]["version"]
    m = re.search(r"(\d+\.\d+(\.\d+)?)", version or "")
    for e in entries[1:]:
        if m and version_tuple(e["version"]) > version_tuple(m.group(1)):
            break
        chosen = e["version"]
    return engine, chosen


def run(stacksim, cases, engines_dir):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    env = dict(os.environ, STACKSIM_ENGINES_DIR=engines_dir)
    subprocess.run([stacksim, "validate", cases, "--json", out], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    with open(out) as f:
        data = json.load(f)
    os.unlink(out)
    return {c["id"]: abs(c["error_pct"]) for c in data["cases"] if c.get("error_pct") is not None}


def main():
    stacksim, cases, engine, entry, key, grid = sys.argv[1:7]
    values = [float(v) for v in grid.split(",")]
    profiles = {}
    for name in os.listdir(ENGINES):
        if name.endswith(".yaml"):
            with open(os.path.join(ENGINES, name)) as f:
                p = yaml.safe_load(f)
            profiles[p["name"]] = p
    with open(cases) as f:
        dev = yaml.safe_load(f)["cases"]
    source_of, family = {}, set()
    for c in dev:
        sv = c["serving"]
        if entry_for(profiles, sv.get("engine"), str(sv.get("engine_version") or "")) == (engine, entry):
            source_of[c["id"]] = c["source"]["key"]
            family.add(c["source"]["key"])
    errors = {}
    for v in values:
        tmp = tempfile.mkdtemp()
        for name, p in profiles.items():
            q = json.loads(json.dumps(p))
            if name == engine:
                for e in q["versions"]:
                    if e["version"] == entry:
                        e[key] = v
            with open(os.path.join(tmp, name + ".yaml"), "w") as f:
                yaml.safe_dump(q, f)
        errors[v] = run(stacksim, cases, tmp)
        shutil.rmtree(tmp)
    current = run(stacksim, cases, ENGINES)

    def mape(errs, source):
        xs = [e for cid, e in errs.items() if source_of.get(cid) == source]
        return sum(xs) / len(xs) if xs else None

    def macro(errs, sources):
        xs = [m for s in sources if (m := mape(errs, s)) is not None]
        return sum(xs) / len(xs) if xs else float("inf")

    print(f"{engine} {entry} {key}: family sources {sorted(family)}")
    print(f"{'held-out source':40s} {'fit value':>9s} {'CV MAPE':>8s} {'current':>8s}")
    cv, cur = [], []
    for s in sorted(family):
        others = [o for o in family if o != s]
        if not others or mape(current, s) is None:
            continue
        best = min(values, key=lambda v: macro(errors[v], others))
        cv.append(mape(errors[best], s))
        cur.append(mape(current, s))
        print(f"{s:40s} {best:9.3g} {cv[-1]:8.1f} {cur[-1]:8.1f}")
    if cv:
        print(f"{'macro over held-out sources':40s} {'':9s} {sum(cv)/len(cv):8.1f} {sum(cur)/len(cur):8.1f}")
    best_all = min(values, key=lambda v: macro(errors[v], family))
    print(f"value fitted on every source of the family: {best_all:g} (macro MAPE {macro(errors[best_all], family):.1f})")


if __name__ == "__main__":
    main()
