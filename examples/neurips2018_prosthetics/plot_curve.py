"""Plot a prosthetics run from its ``episodes.csv`` and ``curve.csv`` (written by train.py).

Usage::

    python examples/neurips2018_prosthetics/plot_curve.py runs/neurips2018_prosthetics/RunFastest-seed0 curve.png

Two panels against simulator steps: the rules' round-2 return of each training episode (dots; line: mean of the
last 20) with the evaluations (ensemble, random round-2 targets), and the episode length in simulator steps
(the model falls when the pelvis drops below 0.6 m; 1000 = the whole episode). Needs matplotlib.
"""

from __future__ import annotations

import argparse
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def read(path: str) -> dict[str, np.ndarray]:
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return {}
    return {key: np.array([float(r[key]) for r in rows]) for key in rows[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("logdir", help="the run's folder (episodes.csv, curve.csv)")
    parser.add_argument("png")
    parser.add_argument("--title", default="AI for Prosthetics (2018), multi-head DDPG, RunFastest stage")
    parser.add_argument("--window", type=int, default=20)
    args = parser.parse_args()
    episodes = read(os.path.join(args.logdir, "episodes.csv"))
    evals = read(os.path.join(args.logdir, "curve.csv"))
    if not episodes:
        raise SystemExit(f"{args.logdir}/episodes.csv holds no finished episode yet")
    x = episodes["env_steps"] / 1e3
    window = min(args.window, len(x))
    smooth = np.convolve(episodes["r2_return"], np.ones(window) / window, mode="valid")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    axes[0].plot(x, episodes["r2_return"], ".", alpha=0.3, label="training episode")
    axes[0].plot(x[window - 1:], smooth, color="tab:red", label=f"mean of last {window}")
    if evals:
        axes[0].plot(evals["env_steps"] / 1e3, evals["eval_return_mean"], "s", color="tab:green",
                     label="evaluation (ensemble)")
    axes[0].set_ylabel("round-2 return (rules; max 10,000)")
    axes[0].legend(loc="upper left", fontsize="small")
    axes[1].plot(x, episodes["frames"], ".", alpha=0.3)
    axes[1].plot(x[window - 1:], np.convolve(episodes["frames"], np.ones(window) / window, mode="valid"),
                 color="tab:red")
    axes[1].set_ylabel("episode length (simulator steps, max 1000)")
    for ax in axes:
        ax.set_xlabel("simulator steps (thousands)")
        ax.grid(alpha=0.3)
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.png, dpi=90)


if __name__ == "__main__":
    main()
