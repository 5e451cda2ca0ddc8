"""Plots with matplotlib (Agg backend, written as PNG or SVG by file extension)."""
from __future__ import annotations

from typing import Iterable, List, Optional, Sequence


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str) -> None:
    """Writes the figure as the CLI writes its outputs (config/output_file.hpp): a fresh temporary
    file beside the target (O_EXCL: no existing name or link followed), fsync, rename; a device or
    a FIFO with a reader is written in place; anything else that is not a regular file is refused."""
    import os
    import stat
    import tempfile

    fmt = os.path.splitext(path)[1].lstrip(".").lower() or "png"
    target = os.path.realpath(path) if os.path.islink(path) else path
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        try:
            fd = os.open(target, os.O_WRONLY | (os.O_NONBLOCK if stat.S_ISFIFO(mode) else 0))
        except OSError as e:
            raise ValueError(f"{path}: cannot open the output for writing ({e.strerror}; a FIFO needs a reader)") from None
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format=fmt)
        return
    if mode is not None and not stat.S_ISREG(mode):
        raise ValueError(f"{path}: is not a regular file. Fix: name a .png or .svg file")
    folder = os.path.dirname(target) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(target) + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format=fmt)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, (mode & 0o7777) if mode is not None else 0o644)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def breakdown_bars(results: Sequence, labels: Sequence[str], path: str, title: str = "Where the step time goes"):
    """Stacked step-time breakdown (seconds per category) per result."""
    plt = _plt()
    cats: List[str] = []
    for r in results:
        for k, v in r.to_dict()["breakdown"].items():
            if v > 0 and k not in cats:
                cats.append(k)
    fig, ax = plt.subplots(figsize=(max(4, 1.4 * len(results) + 2), 4.5))
    bottom = [0.0] * len(results)
    for c in cats:
        vals = [r.to_dict()["breakdown"].get(c, 0.0) for r in results]
        ax.bar(list(labels), vals, bottom=bottom, label=c)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("seconds per step")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def scaling_curve(gpus: Sequence[int], tokens_per_s: Sequence[float], path: str, title: str = "Scaling"):
    """Tokens/s and scaling efficiency (relative to the smallest run, per GPU) vs GPU count."""
    plt = _plt()
    eff = [(t / g) / (tokens_per_s[0] / gpus[0]) for g, t in zip(gpus, tokens_per_s)]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(gpus, tokens_per_s, "o-", label="tokens/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("tokens/s")
    ax2 = ax.twinx()
    ax2.plot(gpus, eff, "s--", color="tab:red", label="scaling efficiency")
    ax2.set_ylim(0, 1.1)
    ax2.set_ylabel("scaling efficiency")
    ax.set_title(title)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def speedup_bars(labels: Sequence[str], speedups: Sequence[float], path: str, title: str = "Speedup over the baseline"):
    """Speedup bars of a compare or an elasticity study."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 0.5 * len(labels) + 1.5))
    ax.barh(list(labels), list(speedups), color=["tab:green" if s > 1.05 else "tab:gray" for s in speedups])
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xlabel("step-time speedup (x)")
    ax.set_title(title)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


# The latency figures a serving curve can draw: (sweep CSV column, axis label, SLO flag's unit).
SERVING_LATENCIES = {
    "ttft": ("ttft_ms_p99", "TTFT p99 (ms)"),
    "tpot": ("tpot_ms_p99", "TPOT p99 (ms)"),
    "e2e": ("e2e_latency_s_p99", "end-to-end latency p99 (s)"),
}


def serving_curve(groups, path: str, metrics: Sequence[str] = ("ttft", "tpot"), slos: Optional[dict] = None,
                  load_label: str = "request rate", title: str = "Latency against throughput"):
    """The latency-throughput curve of a serving sweep: one panel per latency in `metrics` (keys of
    SERVING_LATENCIES), output tokens/s on x and the p99 latency on y, one line per group.

    groups: {label: [(load, output_tokens_per_s, {csv column: value}), ...]} with the points in
    increasing load; slos: {metric: limit in the panel's unit}, drawn as a dashed horizontal line.
    Returns the (closed) figure, so callers can inspect its axes."""
    plt = _plt()
    slos = slos or {}
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.2 * len(metrics), 4.2), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        column, label = SERVING_LATENCIES[metric]
        for name, points in groups.items():
            xs = [p[1] for p in points]
            ys = [p[2][column] for p in points]
            (line,) = ax.plot(xs, ys, "o-", label=name)
            for load, x, y in zip([p[0] for p in points], xs, ys):
                ax.annotate(f"{load:g}", (x, y), textcoords="offset points", xytext=(3, 3), fontsize=7,
                            color=line.get_color())
        if metric in slos:
            ax.axhline(slos[metric], color="tab:red", ls="--", lw=1.0, label=f"SLO {slos[metric]:g}")
        ax.set_xlabel("output tokens/s")
        ax.set_ylabel(label)
        ax.set_title(f"{label.split(' (')[0]} (points: {load_label})", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return fig
