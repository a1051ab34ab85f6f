"""The Results page: PARL's published Atari learning curves beside ours, drawn at build time from the committed runs.

A page holds a fenced block ```` ```{atari-results} ```` (alone on its lines); at ``source-read`` it is replaced by
a summary table (one line per row of :data:`ROWS`: PARL's score at its budget and hardware, ours at the same
budget, our wall-clock) and, per row, a figure and a table of its runs. The figures are drawn at
``builder-inited`` into ``docs/_generated/results/<key>.png``: for each run, the mean score of the last 100
training games (whole games, unclipped) against agent steps, and PARL's values read off its published figure as
markers.

A run is a folder ``examples/<example>/results/<name>/seed<k>/`` holding what the example wrote: ``curve.csv``
(``env_steps``, ``wall_s``, ``episode_return``: one line per finished game), ``summary.json`` (absent for a run
stopped before it wrote one), and the record of ``benchmarks/atari/run_curve.py`` (``run.json``: command, commit,
dates, load average, CPU seconds, exit status, and a ``note`` where something needs saying); a run continued with
``--resume`` has one more record per continuation, ``run-resume-<k>.json`` (k = 1, 2, ...): its wall-clock and CPU
seconds are the sums over the records, its load the median of each, its end that of the last. A row whose folder has
no such run, or a file that cannot be read or drawn, fails the build.
"""

from __future__ import annotations

import csv
import json
import pathlib
import re
from dataclasses import dataclass, field
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
WINDOW = 100  # games in the running mean (the targets: "mean of the last 100 games")
_BLOCK = re.compile(r"^```\{atari-results\}[ \t]*\n```[ \t]*$", re.M)


def trailing_mean(values: list[float], window: int) -> list[float]:
    """The mean of the last ``window`` values (fewer at the start) at each position of ``values``."""
    out, total = [], 0.0
    for i, value in enumerate(values):
        total += value - (values[i - window] if i >= window else 0.0)
        out.append(total / min(i + 1, window))
    return out


@dataclass(frozen=True)
class Series:
    """One configuration of a row: its label and its results folder (relative to the repository)."""

    label: str
    folder: str


@dataclass(frozen=True)
class Row:
    """One line of the Results page.

    ``parl_points``: (agent steps, score) read off PARL's published figure (by eye, the mean line);
    ``parl_budget``: the agent steps at which the summary compares (PARL's last point); ``target``: what ours
    must reach, in words."""

    key: str
    title: str
    env: str
    algorithm: str
    parl_points: tuple[tuple[float, float], ...]
    parl_hardware: str
    target: str
    series: tuple[Series, ...] = field(default_factory=tuple)

    @property
    def parl_budget(self) -> float:
        return self.parl_points[-1][0]


#: The rows with committed runs. PARL's values: its figures in the PARL-experiments repository and PARL's example
#: READMEs (impala_pong.png: IMPALA, 1 learner on a P40 GPU + 32 CPU actors).
ROWS: tuple[Row, ...] = (
    Row("R1", "IMPALA, Pong", "PongNoFrameskip-v4", "IMPALA",
        parl_points=((2e6, -18.0), (4e6, 3.0), (5e6, 15.0)),
        parl_hardware="1 learner on a P40 GPU, 32 actors on 32 CPUs",
        target="mean of the last 100 games >= 18 within 8M agent steps and 90 minutes",
        series=(Series("earlier default model (torch's init), lr 1e-3, learner batch 400",
                       "examples/impala/results/pong-lr1e-3"),
                Series("earlier default model (torch's init), lr 1e-3, learner batch 800",
                       "examples/impala/results/pong-lr1e-3-batch800"),
                Series("PARL's impala_config.py (--config parl), torch's conv init",
                       "examples/impala/results/pong-parl-config"),
                Series("PARL's impala_config.py (--config parl), paddle's conv init",
                       "examples/impala/results/pong-parl-config-paddle-init"),
                Series("PARL's torso, orthogonal init, lr 1e-3, learner batch 800",
                       "examples/impala/results/pong-ortho-lr1e-3-batch800"),
                Series("PARL's torso, orthogonal init, lr 3e-4, learner batch 800",
                       "examples/impala/results/pong-ortho-lr3e-4-batch800"))),
)

#: Rows of the reproduction plan that have no committed run yet (listed on the page as such).
PLANNED: tuple[tuple[str, str, str], ...] = (
    ("R2", "IMPALA, Breakout", "PARL: ~250 at 10M agent steps"),
    ("R3", "A2C on remote actors, Pong", "PARL: ~19 at 6M"),
    ("R4", "PPO, Pong (PARL's atari_config.py on EnvPool)", "PARL: ~20 at 3M"),
    ("R5", "Double / Dueling DQN, Pong", "PARL's DQN: ~20 at 3M"),
)


@dataclass
class Run:
    """One seed's committed run: its games (agent steps, wall-clock s, score) and its records."""

    path: pathlib.Path
    steps: list[int]
    game_wall_s: list[float]
    scores: list[float]
    summary: dict[str, Any]
    records: list[dict[str, Any]]  # run.json, then run-resume-1.json, ...

    @property
    def record(self) -> dict[str, Any]:
        """The last record (the one that says how the run ended)."""
        return self.records[-1]

    @property
    def wall_s(self) -> float:
        return sum(r["wall_s"] for r in self.records)

    @property
    def cpu_s(self) -> float:
        return sum(r["cpu_s"] for r in self.records)

    def running_mean(self) -> list[float]:
        """Mean of the last :data:`WINDOW` games at each game (fewer at the start)."""
        return trailing_mean(self.scores, WINDOW)

    def at(self, steps: float) -> tuple[float, float, int] | None:
        """(mean of the last 100 games, wall-clock s, agent steps) at the last game within ``steps`` agent steps;
        None if the run has no game there."""
        index = max((i for i, s in enumerate(self.steps) if s <= steps), default=None)
        if index is None:
            return None
        return self.running_mean()[index], self.game_wall_s[index], self.steps[index]


def load_runs(folder: str) -> list[Run]:
    """The ``seed*`` runs of a results folder.

    Raises:
        ValueError: the folder has no run, or a run lacks curve.csv / run.json or has no game.
    """
    base = ROOT / folder
    seeds = sorted(base.glob("seed*"))
    if not seeds:
        raise ValueError(f"{folder}: no seed*/ run folder (the Results page row needs its committed data)")
    runs = []
    for seed in seeds:
        missing = [name for name in ("curve.csv", "run.json") if not (seed / name).is_file()]
        if missing:
            raise ValueError(f"{seed.relative_to(ROOT)}: missing {', '.join(missing)}")
        with (seed / "curve.csv").open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        if not rows:
            raise ValueError(f"{seed.relative_to(ROOT)}/curve.csv: no finished game")
        resumes = sorted(seed.glob("run-resume-*.json"), key=lambda p: int(re.sub(r"\D", "", p.name) or 0))
        expected = [f"run-resume-{k}.json" for k in range(1, len(resumes) + 1)]
        if [p.name for p in resumes] != expected:
            raise ValueError(f"{seed.relative_to(ROOT)}: the continuation records must be {expected}, got "
                             f"{[p.name for p in resumes]}")
        runs.append(Run(seed, [int(r["env_steps"]) for r in rows], [float(r["wall_s"]) for r in rows],
                        [float(r["episode_return"]) for r in rows],
                        json.loads((seed / "summary.json").read_text()) if (seed / "summary.json").is_file() else {},
                        [json.loads(p.read_text()) for p in [seed / "run.json", *resumes]]))
    return runs


def plot_rows(out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Draw each row of :data:`ROWS` into ``out_dir/<key>.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for row in ROWS:
        fig, ax = plt.subplots(figsize=(7.0, 3.8), dpi=100)
        for series in row.series:
            for run in load_runs(series.folder):
                ax.plot([s / 1e6 for s in run.steps], run.running_mean(), linewidth=1.4,
                        label=f"{series.label}, {run.path.name}")
        xs, ys = zip(*row.parl_points, strict=True)
        ax.plot([x / 1e6 for x in xs], ys, "k*", markersize=11, label=f"PARL's figure ({row.parl_hardware})")
        ax.set_xlabel("agent steps (millions; 4 frames each)")
        ax.set_ylabel(f"score, mean of the last {WINDOW} games")
        ax.set_title(f"{row.key}: {row.title} ({row.env})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small", loc="lower right")
        fig.tight_layout()
        path = out_dir / f"{row.key}.png"
        fig.savefig(path, metadata={"Software": None})
        plt.close(fig)
        written.append(path)
    return written


def ended(run: Run) -> str:
    """How a run ended, in words: its budget spent, stopped (resumable or not), or failed; plus its record's note."""
    code = run.record.get("returncode")
    if code == 0 and not run.summary.get("interrupted"):
        text = "budget spent" if not run.summary.get("reached") else "target reached"
    elif code == 0 or code in (-2, -15):
        resumable = (run.path / "checkpoint.pt").is_file()
        text = "stopped" + (" (goes on with --resume)" if resumable else "")
    else:
        text = f"exit status {code}"
    notes = [r["note"] for r in run.records if r.get("note")]
    if len(run.records) > 1:
        notes.insert(0, f"continued {len(run.records) - 1} time(s) with --resume")
    return "; ".join([text, *notes])


def _standing(series: Series, budget: float) -> tuple[bool, float, int]:
    """What ranks a configuration for the summary line: the one with a run at PARL's budget (within 10 %) and the
    best score there stands for its row; where no run got that far, the one that went furthest."""
    runs = load_runs(series.folder)
    points = [run.at(budget) for run in runs]
    scores = [p[0] for p in points if p is not None and p[2] >= 0.9 * budget]
    return bool(scores), max(scores, default=float("-inf")), max(run.steps[-1] for run in runs)


def _fmt_score(value: float) -> str:
    return f"{value:+.1f}"


def render() -> str:
    """The Markdown that replaces the ``{atari-results}`` block."""
    lines = ["| row | env | algorithm | PARL (its hardware) | ours at PARL's budget | our wall-clock to it |",
             "|---|---|---|---|---|---|"]
    for row in ROWS:
        budget = row.parl_budget
        ours, walls = [], []
        furthest = max(row.series, key=lambda series: _standing(series, budget))
        for run in load_runs(furthest.folder):
            point = run.at(budget)
            if point is not None and point[2] >= 0.9 * budget:
                ours.append(_fmt_score(point[0]))
                walls.append(f"{point[1] / 60:.0f} min")
            else:
                ours.append(f"run to {run.steps[-1] / 1e6:.1f}M only")
        lines.append(f"| [{row.key}](#{row.key.lower()}) | {row.env} | {row.algorithm} | "
                     f"{_fmt_score(row.parl_points[-1][1])} at {budget / 1e6:g}M ({row.parl_hardware}) | "
                     f"{' / '.join(ours)} ({furthest.label}) | {' / '.join(walls) or '-'} |")
    for key, title, parl in PLANNED:
        lines.append(f"| {key} | {title} | | {parl} | not run yet | |")
    lines.append("")
    for row in ROWS:
        lines += [f"({row.key.lower()})=", f"## {row.key}: {row.title}", "",
                  f"Target: {row.target}.", "",
                  f"```{{figure}} /_generated/results/{row.key}.png",
                  f":alt: {row.title}: mean score of the last {WINDOW} games against agent steps, ours and PARL's",
                  "```", "",
                  "| configuration | seed | agent steps | final mean of 100 games | best mean of 100 | wall-clock | "
                  "load average (median, 1 min) | CPU s | commit | date (UTC) | how it ended |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for series in row.series:
            for run in load_runs(series.folder):
                means = run.running_mean()
                first = run.records[0]
                loads = " / ".join(f"{r['loadavg_1m']['median']:.1f}" for r in run.records)
                commits = " / ".join(f"`{r['commit'][:10]}`" for r in run.records)
                lines.append(
                    f"| {series.label} | {run.path.name} | {run.steps[-1]:,} | {_fmt_score(means[-1])} | "
                    f"{_fmt_score(max(means[WINDOW - 1:] or means))} | {run.wall_s / 60:.0f} min | "
                    f"{loads} | {run.cpu_s:,.0f} | {commits} | {first['start_utc'][:16].replace('T', ' ')} | "
                    f"{ended(run)} |")
        lines.append("")
    return "\n".join(lines)


def _source_read(app: Any, docname: str, source: list[str]) -> None:
    if _BLOCK.search(source[0]):
        source[0] = _BLOCK.sub(lambda _m: render(), source[0])


def _builder_inited(app: Any) -> None:
    plot_rows(DOCS / "_generated" / "results")


def setup(app: Any) -> dict[str, Any]:
    """Register the extension's event handlers."""
    app.connect("builder-inited", _builder_inited)
    app.connect("source-read", _source_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
