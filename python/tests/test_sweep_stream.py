"""stacksim.sweep(..., output=PATH) streams as `stacksim sweep -o` does: rows in grid order as they
complete, the same bytes for any thread count, a stop on SIGINT/SIGTERM after the rows in flight,
resumption without simulating a written row, a huge grid in bounded memory, and a CSV that is not
the sweep's refused untouched."""
import math
import os
import signal
import threading

import pandas as pd
import pytest

import stacksim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRID = {"parallelism.tp": [4, 8], "parallelism.dp": [1, 2], "parallelism.micro_batch": [1, 2]}


def base():
    # 64 GPUs, pp 4 x cp 2: tp * dp must be 8 (half the points are invalid rows).
    s = stacksim.Scenario.load(os.path.join(ROOT, "scenarios", "llama3-70b-64xh100.yaml"))
    return s.set("model.layers", 8).set("parallelism.vp", 1).set("parallelism.global_batch", 16)


class Counting:
    """Wraps stacksim._row: counts the simulated points; optionally sends a signal to this process
    when the n-th point starts (from a worker thread, as a user's Ctrl-C would arrive)."""

    def __init__(self, inner, signal_at=None, signum=signal.SIGINT, fake=False):
        self.inner, self.signal_at, self.signum, self.fake = inner, signal_at, signum, fake
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, base, point):
        with self.lock:
            self.calls += 1
            n = self.calls
        if n == self.signal_at:
            os.kill(os.getpid(), self.signum)
        if self.fake:  # a cheap stand-in result for grids too large to simulate
            return dict(point, num_gpus=8, step_time_s=1.0, error=None)
        return self.inner(base, point)


@pytest.fixture
def counting(monkeypatch):
    def install(**kw):
        c = Counting(stacksim._row, **kw)
        monkeypatch.setattr(stacksim, "_row", c)
        return c
    return install


def read(path):
    with open(path, "rb") as f:
        return f.read()


def test_rows_match_the_in_memory_sweep_in_grid_order(tmp_path):
    out = str(tmp_path / "s.csv")
    summary = stacksim.sweep(base(), GRID, threads=2, output=out)
    assert (summary.points, summary.written, summary.simulated, summary.resumed) == (8, 8, 8, 0)
    df = pd.read_csv(out)
    mem = stacksim.sweep(base(), GRID, threads=2)
    assert list(df.columns[:3]) == list(GRID)
    assert df[list(GRID)].values.tolist() == mem[list(GRID)].values.tolist()
    assert df["error"].isna().tolist() == mem["error"].isna().tolist()
    assert summary.invalid == int(df["error"].notna().sum()) == 4
    valid = df["error"].isna()
    for col in ("step_time_s", "mfu", "tokens_per_s_per_gpu"):
        assert df.loc[valid, col].tolist() == pytest.approx(mem.loc[valid, col].tolist(), rel=1e-8)


def test_same_bytes_for_one_and_two_threads(tmp_path):
    one, two = str(tmp_path / "1.csv"), str(tmp_path / "2.csv")
    stacksim.sweep(base(), GRID, threads=1, output=one)
    stacksim.sweep(base(), GRID, threads=2, output=two)
    assert read(one) == read(two)


def test_resume_keeps_the_written_rows_and_cuts_a_torn_line(tmp_path, counting):
    full, out = str(tmp_path / "full.csv"), str(tmp_path / "s.csv")
    stacksim.sweep(base(), GRID, threads=2, output=full)
    lines = read(full).splitlines(keepends=True)
    with open(out, "wb") as f:  # header, 3 rows, and half of the 4th (a kill -9 mid-write)
        f.write(b"".join(lines[:4]) + lines[4][:10])
    c = counting()
    summary = stacksim.sweep(base(), GRID, threads=2, output=out)
    assert (summary.resumed, summary.simulated, c.calls) == (3, 5, 5)
    assert read(out) == read(full)
    again = stacksim.sweep(base(), GRID, threads=2, output=out)  # complete: nothing simulated
    assert (again.resumed, again.simulated, c.calls) == (8, 0, 5)
    assert read(out) == read(full)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_after_the_rows_in_flight_and_the_rerun_resumes(tmp_path, counting, signum):
    full, out = str(tmp_path / "full.csv"), str(tmp_path / "s.csv")
    stacksim.sweep(base(), GRID, threads=1, output=full)
    c = counting(signal_at=3, signum=signum)
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with pytest.raises(stacksim.SweepInterrupted, match="after [0-9]+ of 8 points.*again") as e:
        stacksim.sweep(base(), GRID, threads=1, output=out)
    assert e.value.signum == signum and 3 <= e.value.written < 8  # the point in flight is finished and kept
    kept = read(out)
    assert read(full).startswith(kept) and kept.count(b"\n") == 1 + e.value.written
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers  # restored
    calls = c.calls
    summary = stacksim.sweep(base(), GRID, threads=1, output=out)
    assert summary.resumed == e.value.written and c.calls - calls == 8 - e.value.written
    assert read(out) == read(full)


def test_a_grid_of_a_trillion_points_streams_and_resumes_in_bounded_memory(tmp_path, counting):
    grid = {f"k{i}": list(range(100)) for i in range(6)}  # 10^12 points: never materialised
    out = str(tmp_path / "big.csv")
    c = counting(signal_at=50, fake=True)
    with pytest.raises(stacksim.SweepInterrupted) as e:
        stacksim.sweep(base(), grid, threads=2, output=out)
    assert e.value.points == 10 ** 12 and 50 <= e.value.written <= 54  # at most 2 x threads in flight
    c.signal_at = c.calls + 60
    with pytest.raises(stacksim.SweepInterrupted) as again:
        stacksim.sweep(base(), grid, threads=2, output=out)
    assert again.value.written >= e.value.written + 60 > 100
    rows = pd.read_csv(out)
    assert len(rows) == again.value.written and rows["k5"].tolist()[:60] == list(range(60))
    assert (rows["k4"].iloc[100], rows["k5"].iloc[100]) == (1, 0)  # the last key varies fastest


def test_an_edited_grid_reuses_rows_by_their_values(tmp_path, counting):
    out = str(tmp_path / "s.csv")
    stacksim.sweep(base(), GRID, threads=2, output=out)
    edited = dict(GRID, **{"parallelism.dp": [2, 1]})  # the same points, another order
    c = counting()
    summary = stacksim.sweep(base(), edited, threads=2, output=out)
    assert (summary.resumed, summary.simulated, c.calls) == (8, 0, 0)
    df = pd.read_csv(out)
    assert df["parallelism.dp"].tolist()[:4] == [2, 2, 1, 1]
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".")]  # no temporary left


def test_a_csv_that_is_not_the_sweeps_is_refused_untouched(tmp_path):
    out = tmp_path / "mine.csv"
    out.write_text("name,value\nalice,1\n")
    with pytest.raises(stacksim.ScenarioError, match="not this sweep's header"):
        stacksim.sweep(base(), GRID, threads=1, output=str(out))
    assert out.read_text() == "name,value\nalice,1\n"
    with pytest.raises(stacksim.ScenarioError, match="not a regular file"):
        stacksim.sweep(base(), GRID, output=str(tmp_path))
    with pytest.raises(stacksim.ScenarioError, match="cannot create"):
        stacksim.sweep(base(), GRID, output=str(tmp_path / "no-such-dir" / "s.csv"))


def test_scaling_efficiency_is_filled_when_the_sweep_completes(tmp_path):
    g = {"hardware.gpu": ["H100-SXM5-80GB", "B200"], "cluster.nodes": [4, 8], "parallelism.dp": [1, 2]}
    out = str(tmp_path / "s.csv")
    stacksim.sweep(base(), g, threads=2, output=out)
    df = pd.read_csv(out)
    mem = stacksim.sweep(base(), g, threads=2)
    for got, want in zip(df["scaling_efficiency"], mem["scaling_efficiency"]):
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=1e-5)
    assert df["scaling_efficiency"].notna().sum() == 4
