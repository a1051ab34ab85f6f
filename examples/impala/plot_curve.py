"""Plot an IMPALA run's learning curve from its ``curve.csv`` (written by train.py).

Usage::

    python examples/impala/plot_curve.py runs/impala/PongNoFrameskip-v4-seed0/curve.csv pong_curve.png \
        --title "IMPALA PongNoFrameskip-v4, 2 actors"

Two panels: episode return (a dot per finished game, line: mean of the last 20) against env frames
(agent steps x frame skip) and against wall-clock minutes. Needs matplotlib (``pip install matplotlib``).
"""

from __future__ import annotations

import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv")
    parser.add_argument("png")
    parser.add_argument("--title", default="IMPALA")
    parser.add_argument("--frame-skip", type=int, default=4, help="env frames per agent step (Atari: 4)")
    parser.add_argument("--window", type=int, default=20, help="episodes in the running mean")
    args = parser.parse_args()
    with open(args.csv) as f:
        rows = [(int(r["env_steps"]), float(r["wall_s"]), float(r["episode_return"])) for r in csv.DictReader(f)]
    if not rows:
        raise SystemExit(f"{args.csv} holds no finished episode yet")
    steps, wall_s, returns = (np.array(c) for c in zip(*rows, strict=True))
    frames = steps * args.frame_skip
    window = min(args.window, len(returns))
    mean = np.convolve(returns, np.ones(window) / window, mode="valid")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, x, label in ((axes[0], frames / 1e6, "env frames (millions)"), (axes[1], wall_s / 60, "wall-clock (min)")):
        ax.plot(x, returns, ".", alpha=0.25, color="tab:blue", label="episode")
        ax.plot(x[window - 1:], mean, color="tab:red", label=f"mean of last {window}")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("episode return")
    axes[0].legend(loc="upper left")
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.png, dpi=90)


if __name__ == "__main__":
    main()
