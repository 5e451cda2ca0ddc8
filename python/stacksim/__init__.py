"""stacksim: predict AI-cluster training and LLM-serving performance before buying hardware.

    import stacksim
    s = stacksim.Scenario.load("scenarios/llama3-70b-64xh100.yaml")
    s.set("hardware.gpu", "H200-SXM-141GB")
    r = s.run()
    r.step_time_s, r.mfu, r.to_dict(), r.breakdown_frame()
"""
from __future__ import annotations

import copy
import json
import os
from typing import Any, Dict, Iterable, List, Optional

from . import _core, _sweep_csv
from ._sweep_csv import SweepInterrupted, SweepSummary

__all__ = ["Scenario", "Result", "ScenarioError", "SweepInterrupted", "SweepSummary", "run", "validate", "models"]

ScenarioError = _core.InputError
ScenarioError.__doc__ = "Bad scenario input (a ValueError): the message names the file, key, reason and fix."


def _dump_yaml(data: Dict[str, Any], origin: str = "<scenario>") -> str:
    # JSON is valid YAML 1.2 flow syntax, which yaml-cpp reads. NaN and infinity have no JSON
    # spelling: they go as YAML's .nan/.inf text, which the reader refuses with the key's name.
    def plain(v):
        if isinstance(v, float) and v != v:
            return ".nan"
        if isinstance(v, float) and v in (float("inf"), float("-inf")):
            return ".inf" if v > 0 else "-.inf"
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v

    try:
        return json.dumps(plain(data), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ScenarioError(f"{origin}: a value cannot be written as YAML: {e}. "
                            "Fix: use numbers, strings, lists and dicts with string keys") from None
    except RecursionError:
        raise ScenarioError(f"{origin}: the scenario refers to itself (or is nested too deeply)") from None


class Result:
    """One simulated training step (or collective table): the CLI's --json fields as attributes."""

    def __init__(self, data: Dict[str, Any]):
        self._data = data

    def __getattr__(self, name: str) -> Any:
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(name) from None

    def to_dict(self) -> Dict[str, Any]:
        return copy.deepcopy(self._data)

    def breakdown_frame(self):
        """The step-time breakdown as a pandas DataFrame (category, seconds, fraction)."""
        import pandas as pd

        b = self._data.get("breakdown", {})
        total = sum(b.values()) or 1.0
        return pd.DataFrame([{"category": k, "seconds": v, "fraction": v / total} for k, v in b.items()])

    def __repr__(self) -> str:
        if self._data.get("kind") == "serving":
            return (f"Result(output_tokens_per_s={self.output_tokens_per_s:.5g}, "
                    f"ttft_ms.p99={self.ttft_ms['p99']:.4g}, tpot_ms.p99={self.tpot_ms['p99']:.4g}, "
                    f"bottleneck={self.bottleneck!r})")
        if "step_time_s" in self._data:
            return f"Result(step_time_s={self.step_time_s:.4g}, mfu={self.mfu:.3f}, bottleneck={self.bottleneck!r})"
        return f"Result({list(self._data)})"


class Scenario:
    """A scenario: from a YAML file, a dict, or keyword sections; any key can be changed."""

    def __init__(self, data: Optional[Dict[str, Any]] = None, origin: str = "<scenario>", base_dir: str = ".", **sections):
        if data is not None and not isinstance(data, dict):
            raise ScenarioError(f"{origin}: a scenario is a dict of sections, got {type(data).__name__}")
        try:
            self._data: Dict[str, Any] = copy.deepcopy(data) if data else {}
        except RecursionError:
            raise ScenarioError(f"{origin}: the scenario refers to itself (or is nested too deeply)") from None
        self._data.update(copy.deepcopy(sections))
        self._origin = origin
        self._base_dir = base_dir

    @classmethod
    def load(cls, path: str) -> "Scenario":
        """Reads a scenario file with the CLI's reader: the same limits (size, node count, alias
        expansion), and duplicate keys or several documents refused, as ScenarioError."""
        if not isinstance(path, (str, os.PathLike)):
            raise ScenarioError(f"Scenario.load: expected a file path, got {type(path).__name__}")
        path = os.fspath(path)
        data = json.loads(_core.load_yaml(path))
        if not isinstance(data, dict):
            raise ScenarioError(f"{path}: a scenario must be a map of sections. Fix: write 'key: value' lines")
        return cls(data, origin=path, base_dir=os.path.dirname(os.path.abspath(path)))

    def set(self, key: str, value: Any) -> "Scenario":
        """Sets a dotted key (like the CLI's --set), e.g. set("parallelism.tp", 8). The key and the
        value's type and range are checked against the scenario schema (docs/scenario.md's key
        reference): ScenarioError, with "did you mean" for a misspelt key."""
        if not isinstance(key, str) or not key or any(not p for p in key.split(".")):
            raise ScenarioError(f"{self._origin}: key {key!r}: expected a dotted key such as 'parallelism.tp'")
        # The scenario schema (config/schema.hpp), as the CLI's --set is checked: an unknown key
        # names the nearest declared one, a wrong type or range what the key expects.
        _core.check_key(key, _dump_yaml({"v": value}, self._origin), self._origin)
        node = self._data
        parts = key.split(".")
        if key in ("model.preset", "model.hf_config") and isinstance(self._data.get("model"), dict):
            # Swapping the model: the scenario's own architecture keys give way, its training
            # choices stay (the C++ side's kScenarioModelRunKeys, for --set and sets=).
            kept = ("seq_len", "attention", "mtp_layers")
            self._data["model"] = {k: v for k, v in self._data["model"].items() if k in kept}
        for p in parts[:-1]:
            if node.get(p) is None:
                node[p] = {}
            node = node[p]
            if not isinstance(node, dict):
                raise ScenarioError(f"{self._origin}: key '{key}': '{p}' holds a value, not a map. "
                                    f"Fix: set '{p}' itself, or check the key path")
        node[parts[-1]] = value
        return self

    def to_dict(self) -> Dict[str, Any]:
        return copy.deepcopy(self._data)

    def run(self, trace: Optional[str] = None) -> Result:
        text = _core.run_yaml(_dump_yaml(self._data, self._origin), self._origin, [], self._base_dir, trace or "")
        return Result(json.loads(text))


def run(path_or_dict, **overrides) -> Result:
    """Runs a scenario file or dict; keyword overrides use '__' for dots (parallelism__tp=8)."""
    s = Scenario.load(path_or_dict) if isinstance(path_or_dict, str) else Scenario(path_or_dict)
    for k, v in overrides.items():
        s.set(k.replace("__", "."), v)
    return s.run()


def validate(cases_path: str, kinds: Iterable[str] = (), sources: Iterable[str] = (),
             ids: Iterable[str] = ()) -> Dict[str, Any]:
    """Validates a stacksim-validation/1 file: {"cases": [...], "summary": {...}}; `ids` keeps the
    cases whose id contains one of the substrings (like the CLI's --id)."""
    from . import _validate  # the harness lives in its own module; the product module does not link it
    return json.loads(_validate.validate(cases_path, list(kinds), list(sources), list(ids)))


def models() -> List[Dict[str, Any]]:
    """The bundled model catalogue: one dict per model (name, aliases, source, layers, hidden, heads,
    kv_heads, ffn_hidden, vocab, seq_len (None where no pretraining length is published), experts,
    top_k, params, active_params). Any name or alias works as the scenario key model.preset."""
    return json.loads(_core.catalog_models())


def _grid_points(grid: Dict[str, Iterable[Any]]) -> List[Dict[str, Any]]:
    import itertools

    keys = list(grid)
    values = [list(grid[k]) for k in keys]
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def _row(base: "Scenario", point: Dict[str, Any]) -> Dict[str, Any]:
    s = Scenario(base.to_dict(), origin=base._origin, base_dir=base._base_dir)
    row: Dict[str, Any] = dict(point)
    try:
        for k, v in point.items():
            s.set(k, v)
        r = s.run().to_dict()
        if r.get("kind") == "serving":
            _serving_row(r, row)
            return row
        for key in ("num_gpus", "step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "goodput_tokens_per_s",
                    "tflops_per_gpu", "mfu", "memory_per_gpu_bytes", "oom", "bottleneck", "recompute"):
            row[key] = r.get(key)
        for k, v in r.get("breakdown", {}).items():
            row["breakdown." + k] = v
        row["error"] = None
    except ValueError as e:  # an invalid combination is a row with its reason, never an abort
        row["error"] = str(e)
    return row


def _serving_row(r: Dict[str, Any], row: Dict[str, Any]) -> None:
    """A serving result's sweep columns (those of `stacksim sweep` on a serving scenario)."""
    for key in ("num_gpus", "output_tokens_per_s", "total_tokens_per_s", "requests_per_s", "goodput_requests_per_s",
                "preemptions", "bottleneck", "usd_per_million_tokens"):
        row[key] = r.get(key)
    for metric in ("ttft_ms", "tpot_ms", "e2e_latency_s"):
        for stat in ("p50", "p99"):
            row[f"{metric}_{stat}"] = r[metric][stat]
    row["kv_capacity_tokens"] = r["kv_cache"]["capacity_tokens"]
    row["kv_utilization_mean"] = r["kv_cache"]["utilization_mean"]
    m = r.get("max_rate_under_slo")
    row["max_rate_under_slo_per_s"] = (m.get("rate_per_s", 0.0) if m["feasible"] else 0.0) if m else None
    row["error"] = None


__all__.append("sweep")


def sweep(base: "Scenario", grid: Dict[str, Iterable[Any]], threads: Optional[int] = None, client=None,
          output: Optional[str] = None):
    """Runs the cartesian grid over any keys; returns a pandas DataFrame, one row per point in grid
    order. Points run in parallel (threads; the simulation releases the GIL) or, with a
    dask.distributed `client`, as one task per point on its workers (a point whose worker is lost
    is retried, up to twice). Invalid combinations become
    rows whose `error` column says why.

    With `output` (a CSV path) the sweep streams as `stacksim sweep -o` does and returns a
    SweepSummary instead of a DataFrame: the grid is enumerated lazily and rows are appended in
    grid order as they complete (memory bounded by 2 x threads rows, whatever the grid's size);
    SIGINT/SIGTERM stop it after the rows in flight with SweepInterrupted (a KeyboardInterrupt);
    the same call again resumes without simulating a written row; a file that is not this sweep's
    is refused. The columns are the CLI's (pandas.read_csv reads them back)."""
    import pandas as pd

    if output is not None:
        return _sweep_csv.stream(base, grid, output, threads, client, _row)
    points = _grid_points(grid)
    if client is not None:
        futures = client.map(_row, [base] * len(points), points, pure=False, retries=2)
        rows = client.gather(futures)
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=threads or os.cpu_count() or 1) as pool:
            rows = []
            for i, row in enumerate(pool.map(lambda p: _row(base, p), points), 1):
                rows.append(row)
                _progress(i, len(points))
    df = pd.DataFrame(rows)
    df["scaling_efficiency"] = _scaling_efficiency(df, list(grid))
    return df


# Keys whose values change how many GPUs a job runs on (as `stacksim sweep` defines them).
_SCALE_OUT_KEYS = {"cluster.nodes", "cluster.gpus_per_node", "parallelism.dp"}


def _scaling_efficiency(df, keys: List[str]):
    """Tokens/s per GPU of each valid row over that of the valid row with the fewest GPUs among the
    rows agreeing on every grid key that does not scale out (the first in grid order on a tie);
    NaN where such a group has a single GPU count. The same rule as `stacksim sweep`'s column."""
    import math

    eff = [math.nan] * len(df)
    if "num_gpus" not in df or "tokens_per_s_per_gpu" not in df:  # serving rows have no per-GPU rate
        return eff
    groups: Dict[tuple, List[int]] = {}
    for i in range(len(df)):
        if isinstance(df["error"].iloc[i], str):
            continue
        groups.setdefault(tuple(df[k].iloc[i] for k in keys if k not in _SCALE_OUT_KEYS), []).append(i)
    for members in groups.values():
        gpus = [df["num_gpus"].iloc[i] for i in members]
        if len(set(gpus)) < 2:
            continue
        base = members[gpus.index(min(gpus))]
        for i in members:
            eff[i] = df["tokens_per_s_per_gpu"].iloc[i] / df["tokens_per_s_per_gpu"].iloc[base]
    return eff


def _progress(done: int, total: int) -> None:
    # A one-line progress bar, only when stderr is a terminal (never in logs or tests).
    import sys

    if not sys.stderr.isatty():
        return
    width = 30
    filled = width * done // max(1, total)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} points")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


__all__.append("best_plans")



def best_plans(base: "Scenario", top: int = 5, max_tp: int = 8, micro_batches: Iterable[int] = (1, 2, 4),
               recompute: Iterable[str] = ("auto",), zero: Iterable[int] = (0, 1),
               threads: Optional[int] = None, client=None):
    """Plan search: enumerates (tp, pp, dp, cp=1, vp=1, micro-batch, recompute, ZeRO) plans that use
    all the cluster's GPUs, simulates them, drops invalid and out-of-memory plans and returns the
    `top` fastest as a DataFrame (with their breakdowns), fastest first. recompute "auto" (the
    default) is the least recomputation that fits; the `recompute` column says what it chose."""
    # The (tp, pp, dp) layouts come from the C++ plan space (plan_space.cpp: the divisibility,
    # head and memory rules `stacksim plan` applies), not from a second copy of its rules here.
    doc = json.loads(_core.plan_yaml(_dump_yaml(base._data), base._origin, [], base._base_dir, 0))
    ep = int(base.to_dict().get("parallelism", {}).get("ep", 1) or 1)
    candidates = sorted({(int(p["tp"]), int(p["pp"]), int(p["dp"])) for p in doc["plans"]
                         if p.get("cp", 1) == 1 and p.get("vp", 1) == 1 and p.get("ep", 1) == ep and p["tp"] <= max_tp})
    grid_rows = []
    for tp, pp, dp in candidates:
        for mb in micro_batches:
            for rc in recompute:
                for z in zero:
                    grid_rows.append({"parallelism.tp": tp, "parallelism.pp": pp, "parallelism.dp": dp,
                                      "parallelism.cp": 1, "parallelism.vp": 1, "parallelism.micro_batch": mb,
                                      "parallelism.recompute": rc, "parallelism.zero": z,
                                      "parallelism.sequence_parallel": tp > 1})
    import pandas as pd

    if client is not None:
        rows = client.gather(client.map(_row, [base] * len(grid_rows), grid_rows, pure=False, retries=2))
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=threads or os.cpu_count() or 1) as pool:
            rows = list(pool.map(lambda p: _row(base, p), grid_rows))
    df = pd.DataFrame(rows)
    ok = df[df["error"].isna() & (df["oom"] == False)]  # noqa: E712 (pandas column comparison)
    return ok.sort_values(["step_time_s"] + list(grid_rows[0].keys()) if grid_rows else ["step_time_s"],
                          kind="stable").head(top).reset_index(drop=True)


__all__.append("plan")


def plan(scenario, k: int = 10, **overrides):
    """Plan search in C++ (the CLI's `stacksim plan --json`): every valid plan that fits in memory,
    ranked by the fast tier, the best `k` confirmed by the replay. `scenario` is a Scenario, a dict
    or a path; keyword overrides use '__' for dots. Returns a DataFrame, one row per plan (tp, pp,
    dp, cp, vp, ep, micro_batch, recompute, zero, schedule, fast_step_time_s, step_time_s where
    replayed, ...), the replayed plans first by their replayed step time; its .attrs hold the
    search's counts (evaluated, fit, replayed, seconds)."""
    import pandas as pd

    s = Scenario.load(scenario) if isinstance(scenario, str) else (
        scenario if isinstance(scenario, Scenario) else Scenario(scenario))
    s = Scenario(s.to_dict(), origin=s._origin, base_dir=s._base_dir)
    for key, v in overrides.items():
        s.set(key.replace("__", "."), v)
    doc = json.loads(_core.plan_yaml(_dump_yaml(s._data), s._origin, [], s._base_dir, int(k)))
    rows = [{key: v for key, v in p.items() if key != "sets"} for p in doc["plans"]]
    df = pd.DataFrame(rows)
    df.attrs.update({key: doc[key] for key in ("evaluated", "enumerated", "fit", "replayed", "seconds")})
    return df


__all__.append("purchase")


def purchase(scenario_path: str, purchase_path: str = "", **overrides) -> Dict[str, Any]:
    """Purchase search in C++ (the CLI's `stacksim plan --purchase --json`) on a scenario file with
    a purchase: section (or `purchase_path`): for a training scenario the cheapest (or fastest) GPU
    type x cluster size x plan that trains purchase.tokens in time, for a serving scenario the
    cheapest GPU type x TP size x replicas that serves purchase.rate_per_s within its slo:.
    Keyword overrides use '__' for dots. Returns the JSON document as a dict ("options": the winner
    first, each with "why" it loses)."""
    sets = [f"{k.replace('__', '.')}={_override_text(v)}" for k, v in overrides.items()]
    return json.loads(_core.purchase_file(str(scenario_path), sets, str(purchase_path)))


__all__.append("compare")


def compare(base: "Scenario", variants: Iterable[Dict[str, Any]], elasticity: bool = False) -> Dict[str, Any]:
    """Baseline vs variants (each a dict of dotted keys to values), computed by the same C++ as
    `stacksim compare --json`: per variant the speedup, goodput speedup, reason in words,
    bottleneck, breakdown and run fields; `elasticity=True` adds the 2x-per-resource ranking."""
    variants = [dict(v) for v in variants]
    sets = [[f"{k}={_override_text(val)}" for k, val in v.items()] for v in variants]
    out = json.loads(_core.compare_yaml(_dump_yaml(base._data), base._origin, base._base_dir, sets, elasticity))
    for v, given in zip(out["variants"], variants):
        v["set"] = given  # the values as the caller typed them (lists stay lists)
    return out


def _override_text(value: Any) -> str:
    # An override's value as the C++ reads it: YAML flow text (JSON is YAML), strings as they are.
    return value if isinstance(value, str) else json.dumps(value)
