"""stacksim.sweep(..., output=PATH): the CLI's streaming sweep (`stacksim sweep -o`), in Python.

- The grid is enumerated lazily (point i is computed from i): its size costs nothing. At most
  2 x threads points are in flight or waiting to be written.
- Rows are appended to the CSV in grid order as they complete, one os.write each: the file is
  always the grid's first N points in order, whatever the thread count.
- SIGINT or SIGTERM (when called from the main thread) stops the sweep after the rows in flight
  and raises SweepInterrupted (a KeyboardInterrupt) saying how to resume.
- Calling it again with the same grid and output resumes: the rows that are the grid's first
  points are kept and never simulated again. Rows of an edited grid are looked up by their grid
  values and the file is rebuilt through a temporary file beside it.
- A file whose first line is not this sweep's header is refused, never overwritten.
- scaling_efficiency is filled in when the sweep completes (a second pass, one entry per group).
The columns are the CLI's (grid keys, then its result columns), numbers written as "%.9g".
"""
from __future__ import annotations

import collections
import csv
import io
import json
import os
import signal
import stat
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from . import _core

ScenarioError = _core.InputError

TRAINING_COLUMNS = ["num_gpus", "step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu",
                    "memory_per_gpu_bytes", "oom", "bottleneck", "scaling_efficiency", "error"]
SERVING_COLUMNS = ["num_gpus", "output_tokens_per_s", "total_tokens_per_s", "requests_per_s",
                   "goodput_requests_per_s", "ttft_ms_p50", "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p99",
                   "e2e_latency_s_p50", "e2e_latency_s_p99", "kv_capacity_tokens", "kv_utilization_mean",
                   "preemptions", "max_rate_under_slo_per_s", "usd_per_million_tokens", "bottleneck", "error"]
SCALE_OUT_KEYS = {"cluster.nodes", "cluster.gpus_per_node", "parallelism.dp"}
MAX_SCALING_GROUPS = 1 << 20  # the second pass keeps one entry per group


class SweepInterrupted(KeyboardInterrupt):
    """A streaming sweep stopped by SIGINT/SIGTERM: `written` of `points` rows are in `path`."""

    def __init__(self, message: str, signum: int, written: int, points: int, path: str):
        super().__init__(message)
        self.signum, self.written, self.points, self.path = signum, written, points, path


@dataclass
class SweepSummary:
    """What a streaming sweep did: rows in the file, simulated now, kept from an earlier run."""
    path: str
    points: int
    written: int
    simulated: int
    resumed: int
    invalid: int


def field(v: Any) -> str:
    """A value as the CSV writes it: numbers as the CLI does ('%.9g'), booleans as true/false."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "%.9g" % v
    if isinstance(v, str):
        return v.replace("\r", " ").replace("\n", " ")  # one row per line, whatever the message
    return json.dumps(v)


def csv_line(fields: Sequence[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(fields)
    return buf.getvalue()


def point(values: List[List[Any]], index: int) -> Tuple[Any, ...]:
    """Point `index` of the cartesian product, the last key varying fastest."""
    out = []
    for vs in reversed(values):
        index, digit = divmod(index, len(vs))
        out.append(vs[digit])
    return tuple(reversed(out))


def _fail(path: str, what: str, fix: str) -> ScenarioError:
    return ScenarioError(f"{path}: {what}. Fix: {fix}")


class _Output:
    """The CSV: created, resumed (appended after the grid's first points) or rebuilt."""

    def __init__(self, path: str, header: List[str], values: List[List[Any]], points: int, error_col: int):
        self.path, self.tmp, self.fd, self.in_place = path, None, -1, False
        self.prefix_rows = self.prefix_invalid = 0
        self.kept: Dict[Tuple[str, ...], List[Any]] = {}  # grid values -> [row, emitted]
        head = csv_line(header)
        try:
            st = os.stat(path)  # a symlink is followed to the file it names
        except FileNotFoundError:
            st = None
        except OSError as e:
            raise _fail(path, f"cannot read the output ({e.strerror})", "check the path") from None
        if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            self.in_place = True  # a device or FIFO: written as it goes, nothing to resume
            try:
                self.fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
            except OSError:
                raise _fail(path, "cannot open the output for writing (a FIFO needs a reader)",
                            "write the sweep to a regular file") from None
            os.set_blocking(self.fd, True)
            self.append_text(head)
            return
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise _fail(path, "is not a regular file", "name a .csv file for the sweep's rows")
        prefix_end, rebuild = 0, False
        if st is not None and st.st_size > 0:
            prefix_end, rebuild = self._read_existing(head, values, points, error_col, len(header))
        if st is None or st.st_size == 0:
            try:
                self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            except OSError as e:
                raise _fail(path, f"cannot create the output ({e.strerror})",
                            "check that its folder exists and is writable") from None
            self.append_text(head)
        elif not rebuild:
            self.fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            os.ftruncate(self.fd, prefix_end)  # a torn or damaged tail is cut
        else:  # rebuilt beside the old file: its first prefix_end bytes, then the rows from here on
            folder, name = os.path.split(os.path.abspath(path))
            try:
                self.fd, self.tmp = tempfile.mkstemp(prefix="." + name + ".", dir=folder)
            except OSError:
                raise _fail(path, "cannot create a temporary file beside it", "check that its folder is writable") from None
            os.fchmod(self.fd, 0o644)
            with open(path, "rb") as f:
                os.write(self.fd, f.read(prefix_end))

    def _read_existing(self, head, values, points, error_col, width):
        keys = len(values)
        rebuild = False
        with open(self.path, "rb") as f:
            first = f.readline()
            if first.decode("utf-8", "replace") != head:
                raise _fail(self.path, "holds something other than this sweep's rows (its first line is not this "
                            f"sweep's header '{head.strip()[:120]}')",
                            "choose another output file, or delete this one to start the sweep over")
            prefix_end = len(first)
            for raw in f:
                if not raw.endswith(b"\n"):
                    continue  # a row cut by a kill: simulated again
                rows = list(csv.reader([raw.decode("utf-8", "replace").rstrip("\n")]))
                row = rows[0] if rows else []
                if len(row) != width:
                    rebuild = True  # a damaged row inside: simulated again
                    continue
                grid_values = tuple(row[:keys])
                if (not rebuild and not self.kept and self.prefix_rows < points
                        and grid_values == tuple(field(v) for v in point(values, self.prefix_rows))):
                    self.prefix_rows += 1
                    self.prefix_invalid += bool(row[error_col])
                    prefix_end += len(raw)
                else:
                    self.kept[grid_values] = [row, False]
        return prefix_end, rebuild or bool(self.kept)

    def kept_row(self, grid_values: Tuple[str, ...]) -> Optional[List[str]]:
        entry = self.kept.get(grid_values) if self.kept else None
        if entry is None:
            return None
        entry[1] = True
        return entry[0]

    def append_text(self, text: str) -> None:
        data = text.encode("utf-8", "replace")
        while data:
            try:
                n = os.write(self.fd, data)
            except OSError as e:
                raise _fail(self.tmp or self.path, f"writing the sweep's rows failed ({e.strerror})",
                            "check the free disk space; call the sweep again to resume") from None
            data = data[n:]

    def finish(self, complete: bool) -> None:
        if self.tmp is not None:
            if not complete:  # rows not reached yet stay in the file, at its end
                for row, emitted in self.kept.values():
                    if not emitted:
                        self.append_text(csv_line(row))
            os.fsync(self.fd)
            os.replace(self.tmp, self.path)
            self.tmp = None
        elif not self.in_place:
            os.fsync(self.fd)
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.tmp is not None:  # finish() not reached: the old file stays as it was
            os.unlink(self.tmp)
            self.tmp = None


class _StopSignals:
    """SIGINT/SIGTERM only set a flag while the sweep runs (main thread only): the rows in flight
    finish and are written, then the sweep stops."""

    def __init__(self):
        self.signum = 0
        self.old: Dict[int, Any] = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.old[sig] = signal.signal(sig, self._on_signal)
        return self

    def _on_signal(self, signum, frame):
        self.signum = self.signum or signum

    def __exit__(self, *exc):
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        return False


def _fields(row: Dict[str, Any], grid_fields: Tuple[str, ...], columns: List[str]) -> List[str]:
    return list(grid_fields) + [field(row.get(c)) for c in columns]


def stream(base, grid: Dict[str, Iterable[Any]], output: str, threads: Optional[int], client,
           row_fn: Callable[[Any, Dict[str, Any]], Dict[str, Any]]) -> SweepSummary:
    """Runs the grid, writing each row to `output` as it completes (module docstring)."""
    if not isinstance(output, (str, os.PathLike)):
        raise ScenarioError(f"sweep: output is a file path, got {type(output).__name__}")
    output = os.fspath(output)
    keys = list(grid)
    if not keys:
        raise ScenarioError("sweep: the grid is empty. Fix: give at least one key with a list of values")
    values = [list(grid[k]) for k in keys]
    points = 1
    for k, vs in zip(keys, values):
        if not vs:
            raise ScenarioError(f"sweep: grid key '{k}' has no values. Fix: give it a non-empty list")
        points *= len(vs)
    serving = "serving" in base._data
    columns = SERVING_COLUMNS if serving else TRAINING_COLUMNS
    error_col = len(keys) + len(columns) - 1
    out = _Output(output, keys + columns, values, points, error_col)
    summary = SweepSummary(output, points, out.prefix_rows, 0, out.prefix_rows, out.prefix_invalid)
    workers = threads or os.cpu_count() or 1
    pool = None
    if client is None:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=workers)
        submit = lambda p: pool.submit(row_fn, base, p)  # noqa: E731
    else:
        submit = lambda p: client.submit(row_fn, base, p, pure=False, retries=2)  # noqa: E731
    window = 2 * workers
    pending: collections.deque = collections.deque()  # (grid fields, kept row or future), grid order
    nxt = out.prefix_rows
    try:
        with _StopSignals() as stop:
            while (nxt < points and not stop.signum) or pending:
                while nxt < points and len(pending) < window and not stop.signum:
                    p = point(values, nxt)
                    grid_fields = tuple(field(v) for v in p)
                    kept = out.kept_row(grid_fields)
                    pending.append((grid_fields, kept if kept is not None else submit(dict(zip(keys, p)))))
                    nxt += 1
                if stop.signum:  # rows not started are dropped; those running finish and are written
                    for _, job in pending:
                        if not isinstance(job, list):
                            job.cancel()
                grid_fields, job = pending[0]
                if isinstance(job, list):
                    fields = job
                    summary.resumed += 1
                else:
                    if job.cancelled():
                        break
                    try:
                        row = job.result()
                    except Exception:
                        if stop.signum:  # cancelled while running (Dask)
                            break
                        raise
                    fields = _fields(row, grid_fields, columns)
                    summary.simulated += 1
                pending.popleft()
                out.append_text(csv_line(fields))
                summary.written += 1
                summary.invalid += bool(fields[error_col])
            signum = stop.signum
        complete = summary.written == points
        out.finish(complete)
    finally:
        out.close()
        for _, job in pending:
            if not isinstance(job, list):
                job.cancel()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    if not complete:
        name = signal.Signals(signum).name if signum else "a signal"
        raise SweepInterrupted(f"interrupted by {name} after {summary.written} of {points} points; the finished rows "
                               f"are in {output}. Call the sweep again with the same grid and output to resume "
                               "from there.", signum, summary.written, points, output)
    if not serving and not out.in_place:
        groups, any_scale_out = 1, False
        for k, vs in zip(keys, values):
            if k in SCALE_OUT_KEYS:
                any_scale_out = True
            else:
                groups *= len(vs)
        if any_scale_out and groups <= MAX_SCALING_GROUPS:
            _fill_scaling_efficiency(output, keys, len(keys) + len(columns))
    return summary


def _fill_scaling_efficiency(path: str, keys: List[str], width: int) -> None:
    """Tokens/s per GPU of each valid row over that of the valid row with the fewest GPUs among the
    rows agreeing on every grid key that does not scale out (the first in grid order on a tie);
    empty where such a group has a single GPU count. The file is replaced through a temporary."""
    nk = len(keys)
    gpus_col, per_gpu_col, eff_col = nk, nk + 3, nk + 9
    grouped = [i for i, k in enumerate(keys) if k not in SCALE_OUT_KEYS]
    groups: Dict[Tuple[str, ...], List[Any]] = {}  # -> [base gpus, base rate, several]

    def rows(f):
        next(f)
        for row in csv.reader(f):
            yield row

    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        for row in rows(f):
            if len(row) != width or not row[gpus_col]:
                continue
            gpus, key = float(row[gpus_col]), tuple(row[i] for i in grouped)
            g = groups.get(key)
            if g is None:
                groups[key] = [gpus, float(row[per_gpu_col]), False]
            elif gpus < g[0]:
                g[:] = [gpus, float(row[per_gpu_col]), True]
            elif gpus != g[0]:
                g[2] = True
    folder, name = os.path.split(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + name + ".", dir=folder)
    try:
        os.fchmod(fd, stat.S_IMODE(os.stat(path).st_mode))
        with open(path, newline="", encoding="utf-8", errors="replace") as f, \
                os.fdopen(fd, "w", newline="", encoding="utf-8") as o:
            o.write(f.readline())
            w = csv.writer(o, lineterminator="\n")
            for row in csv.reader(f):
                if len(row) == width:
                    row[eff_col] = ""
                    g = groups.get(tuple(row[i] for i in grouped)) if row[gpus_col] else None
                    if g is not None and g[2]:
                        row[eff_col] = "%.6g" % (float(row[per_gpu_col]) / g[1])
                w.writerow(row)
            o.flush()
            os.fsync(o.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
