"""Plot dqn_variants runs from their ``curve.csv`` files (written by train.py), one line per seed.

Usage::

    python examples/dqn_variants/plot_curve.py minatar_breakout.png examples/dqn_variants/results/minatar_breakout \
        --title "Dueling DQN, MinAtar/Breakout-v1" --random 0.38
    python examples/dqn_variants/plot_curve.py atari.png examples/dqn_variants/results/atari/pong_seed0 \
        examples/dqn_variants/results/atari/breakout_seed0 --title "Dueling DQN"

One panel per results folder (its ``seed*/curve.csv``, or its own ``curve.csv``): the evaluation return (mean
over the evaluation games, a marker per evaluation) and the mean return of the last 20 training games
(dashed), against env steps.

Where a folder also holds ``episodes.csv`` (env_steps, episode_return of every training game, exported from the
run's tensorboard ``train/episode_return``), its games are dots. ``--random``: a horizontal line at the random
policy's return. Needs matplotlib (``pip install matplotlib``).
"""

from __future__ import annotations

import argparse
import csv
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("png")
    parser.add_argument("folders", nargs="+", help="results folders holding seed*/curve.csv")
    parser.add_argument("--title", default="dqn_variants")
    parser.add_argument("--random", type=float, default=None, help="the random policy's evaluation return")
    args = parser.parse_args()
    fig, axes = plt.subplots(1, len(args.folders), figsize=(5.5 * len(args.folders), 3.8), squeeze=False)
    for ax, folder in zip(axes[0], args.folders, strict=True):
        files = sorted(pathlib.Path(folder).glob("seed*/curve.csv")) or sorted(pathlib.Path(folder).glob("curve.csv"))
        if not files:
            raise SystemExit(f"{folder}: no curve.csv nor seed*/curve.csv; pass a folder written by train.py --logdir")
        for i, path in enumerate(files):
            with path.open(newline="") as f:
                rows = list(csv.DictReader(f))
            steps = [int(r["env_steps"]) / 1e3 for r in rows]
            color = f"C{i}"
            ax.plot(steps, [float(r["eval_return_mean"]) for r in rows], "o-", color=color,
                    label=f"{path.parent.name}: eval")
            ax.plot(steps, [float(r["train_return_mean"]) for r in rows], "--", color=color, alpha=0.6,
                    label=f"{path.parent.name}: train (last 20 games)")
            episodes = path.parent / "episodes.csv"  # optional: env_steps, episode_return of each training game
            if episodes.exists():
                with episodes.open(newline="") as f:
                    games = list(csv.DictReader(f))
                ax.plot([int(g["env_steps"]) / 1e3 for g in games], [float(g["episode_return"]) for g in games], ".",
                        color=color, alpha=0.3, label=f"{path.parent.name}: training games")
        if args.random is not None:
            ax.axhline(args.random, color="grey", linestyle=":", label="random policy")
        ax.set_title(pathlib.Path(folder).name)
        ax.set_xlabel("env steps (thousands)")
        ax.set_ylabel("game return")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small")
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.png, dpi=90, metadata={"Software": None})


if __name__ == "__main__":
    main()
