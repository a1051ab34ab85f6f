"""Plot the learning curves of examples/es_mujoco/train.py runs (their ``curve.csv``) into one PNG.

Usage::

    python benchmarks/evokit/plot_es_mujoco.py --out examples/es_mujoco/halfcheetah_curve.png runs/es/s*/curve.csv
"""

from __future__ import annotations

import argparse
import csv
import pathlib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("curves", nargs="+", type=pathlib.Path, help="curve.csv files, one per run")
    parser.add_argument("--out", required=True, type=pathlib.Path)
    parser.add_argument("--labels", nargs="+", help="one legend label per curve (default: the run's folder name)")
    parser.add_argument("--target", type=float, default=3000.0)
    parser.add_argument("--title", default="ES (EvoKit) on HalfCheetah-v5, 2 parl-remote actors")
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    labels = args.labels or [p.parent.name for p in args.curves]
    for path, label in zip(args.curves, labels, strict=True):
        with open(path) as f:
            rows = [r for r in csv.DictReader(f) if r["eval_return"]]
        steps = [int(r["env_steps"]) / 1e6 for r in rows]
        ax.plot(steps, [float(r["eval_return"]) for r in rows], marker=".", label=label)
    ax.axhline(args.target, color="grey", linestyle="--", linewidth=1, label=f"{args.target:g}")
    ax.set_xlabel("env steps (millions)")
    ax.set_ylabel("evaluation return (5 episodes)")
    ax.set_title(args.title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
