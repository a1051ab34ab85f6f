"""Plots of benchmarks/README.md's tables, drawn at build time from the tables themselves (so a plot can never show
other numbers than the table it sits under in the README): each entry of :data:`PLOTS` names a section of the
README, the table in it (by the start of its header row), the rows and the columns to plot. The PNGs go to
``docs/_generated/bench/<name>.png``; docs/benchmarks.md shows them. A table that is renamed or reshaped so that
a plot no longer finds its numbers fails the build (``docs/tests/test_bench_plots.py`` checks every plot too).
"""

from __future__ import annotations

import pathlib
import re
from dataclasses import dataclass, field
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "benchmarks" / "README.md"
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class Plot:
    """One figure: bars (one bar per row, grouped by column), or with ``transpose`` one line per row against the
    columns' leading numbers.

    ``section`` is a heading's text (without the hashes) of benchmarks/README.md; ``header`` the start of the
    header row of the table under it; ``rows`` the first cells of the rows to plot (in that order); ``columns``
    the header cells of the numeric columns (each plotted as a series: its first number per cell); ``x_label`` /
    ``y_label`` the axes; ``reference`` horizontal lines ``{label: y}`` (targets)."""

    name: str
    title: str
    section: str
    header: str
    rows: tuple[str, ...]
    columns: tuple[str, ...]
    y_label: str
    x_label: str = ""
    log_y: bool = False
    reference: dict[str, float] = field(default_factory=dict)
    transpose: bool = False  # lines: x = the columns' numbers (e.g. workers), one line per row


PLOTS: tuple[Plot, ...] = (
    Plot("sb3", "Ours vs Stable-Baselines3: speed-up to the return threshold (median of 5 seeds, 2026-11-21)",
         "2026-11-21: all five rows (history)", "| algo | env | reached ours / SB3",
         ("PPO", "DQN", "A2C", "SAC", "TD3"),
         ("speed-up (SB3 s / ours s)",), "SB3 seconds / our seconds", reference={"P5 target (2x)": 2.0,
                                                                                   "even (1x)": 1.0}),
    Plot("scale", "The master against simulated workers (32 CPUs each): idle CPU and CPU per heartbeat",
         "The master at scale (`benchmarks/scale/bench_scale.py`, issue 24)", "| figure | 10 workers",
         ("S1 master CPU while idle", "S6 master CPU per heartbeat"),
         ("10 workers", "100 workers", "1,000 workers (32,000 CPUs)"), "% of a core / us per heartbeat",
         x_label="workers", log_y=True, transpose=True, reference={"S1 target (10 %)": 10.0}),
    Plot("impala", "IMPALA learner frames/s, ours vs RLlib (2 actors, CartPole-v1 rounds, load 12-15)",
         "IMPALA throughput against RLlib's IMPALA (`benchmarks/distributed/bench_impala.py`)",
         "| round | ours, learner frames/s | RLlib, learner frames/s | ratio |\n", ("0", "1", "2"),
         ("ours, learner frames/s", "RLlib, learner frames/s"), "learner frames/s", x_label="round"),
    Plot("es", "ES on HalfCheetah-v5: env steps/s, EvoKit vs EvoTorch (load 19-21)",
         "ES on HalfCheetah-v5, EvoKit vs EvoTorch (`benchmarks/evokit/bench_es_mujoco.py`)",
         "| run | env steps | env steps/s", ("evokit, 1 actor", "evokit, 2 actors", "evotorch PGPE, 2 Ray actors"),
         ("env steps/s",), "env steps/s"),
)


def number(cell: str) -> float:
    """The first number of a table cell (``"**1.54x**"`` -> 1.54, ``"9,098/s"`` -> 9098, ``"0.48 / 12.3 ms"`` ->
    0.48).

    Raises:
        ValueError: the cell holds no number.
    """
    found = _NUMBER.search(cell)
    if found is None:
        raise ValueError(f"no number in the table cell {cell!r}")
    return float(found.group().replace(",", ""))


def section_text(text: str, heading: str) -> str:
    """The text under the heading ``heading`` up to the next heading of the same or a higher level.

    Raises:
        ValueError: no such heading.
    """
    found = re.search(rf"^(#+) {re.escape(heading)}\s*$", text, re.M)
    if found is None:
        raise ValueError(f"benchmarks/README.md has no heading {heading!r}")
    level = len(found.group(1))
    rest = text[found.end():]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    return rest[: end.start()] if end else rest


def table(text: str, header: str) -> list[dict[str, str]]:
    """The rows of the first markdown table of ``text`` whose header row starts with ``header``, as dicts keyed
    by the header cells.

    Raises:
        ValueError: no such table.
    """
    start = text.find(header)
    if start < 0 or (start and text[start - 1] != "\n"):
        raise ValueError(f"no table whose header starts with {header.strip()!r}")
    rows = []
    for line in text[start:].splitlines():
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return [dict(zip(rows[0], row, strict=True)) for row in rows[2:]]


def series(plot: Plot, text: str) -> dict[str, list[float]]:
    """``{column: [number per row of plot.rows]}`` from the README text.

    Raises:
        ValueError: the section, the table, a row or a column is missing, or a cell holds no number.
    """
    rows = table(section_text(text, plot.section), plot.header)
    out: dict[str, list[float]] = {}
    for column in plot.columns:
        values = []
        for wanted in plot.rows:
            row = next((r for r in rows if next(iter(r.values())).startswith(wanted)), None)
            if row is None:
                raise ValueError(f"{plot.name}: no row starting with {wanted!r} in the table {plot.header.strip()!r}")
            if column not in row:
                raise ValueError(f"{plot.name}: no column {column!r} in the table {plot.header.strip()!r}")
            values.append(number(row[column]))
        out[column] = values
    return out


def draw(plot: Plot, text: str, out_dir: pathlib.Path) -> pathlib.Path:
    """Draws one plot into ``out_dir / f"{plot.name}.png"`` and returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    data = series(plot, text)
    fig, ax = plt.subplots(figsize=(7.2, 3.8), dpi=100)
    if plot.transpose:  # one line per row, x = the columns' leading numbers (e.g. 10, 100, 1,000 workers)
        xs = [number(c) for c in plot.columns]
        for i, row in enumerate(plot.rows):
            ax.plot(xs, [data[c][i] for c in plot.columns], marker="o", label=row)
        ax.set_xscale("log")
    else:
        x = np.arange(len(plot.rows))
        width = 0.8 / len(plot.columns)
        for k, column in enumerate(plot.columns):
            bars = ax.bar(x + (k - (len(plot.columns) - 1) / 2) * width, data[column], width, label=column)
            ax.bar_label(bars, fmt="%g", fontsize="small")
        ax.set_xticks(x, plot.rows)
    for label, y in plot.reference.items():
        ax.axhline(y, linestyle="--", linewidth=1, color="grey")
        ax.annotate(label, (0.01, y), xycoords=("axes fraction", "data"), fontsize="small", va="bottom")
    if plot.log_y:
        ax.set_yscale("log")
    ax.set_xlabel(plot.x_label)
    ax.set_ylabel(plot.y_label)
    ax.set_title(plot.title, fontsize="medium")
    ax.grid(alpha=0.3)
    if len(plot.columns) > 1 or plot.transpose:
        ax.legend(fontsize="small")
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{plot.name}.png"
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def draw_all(out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Every plot of :data:`PLOTS` from benchmarks/README.md."""
    text = README.read_text(encoding="utf-8")
    return [draw(plot, text, out_dir) for plot in PLOTS]


def _builder_inited(app: Any) -> None:
    draw_all(pathlib.Path(app.srcdir) / "_generated" / "bench")


def setup(app: Any) -> dict[str, Any]:
    """Register the builder-inited handler that draws the plots."""
    app.connect("builder-inited", _builder_inited)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
