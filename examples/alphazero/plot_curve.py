"""Plot an AlphaZero run's ``curve.csv`` (written by train.py): win rate against OpenSpiel's MCTS bot and the
perfect / good move rates on the solver's test set, per iteration.

Usage::

    python examples/alphazero/plot_curve.py examples/alphazero/results/curve.csv examples/alphazero/curve.png
    python examples/alphazero/plot_curve.py curve.csv curve.png --mark 272.5 --mark-label "resumed"  # a line

Needs matplotlib (``pip install matplotlib``).
"""

from __future__ import annotations

import argparse
import csv
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv")
    parser.add_argument("png")
    parser.add_argument("--title", default="AlphaZero, Connect Four, 2 actors")
    parser.add_argument("--mark", type=float, default=None, help="draw a vertical line after this iteration")
    parser.add_argument("--mark-label", default="", help="the legend of --mark")
    args = parser.parse_args()
    with open(args.csv) as f:
        rows = [r for r in csv.DictReader(f) if not math.isnan(float(r["perfect_move_rate"] or "nan"))]
    if not rows:
        raise SystemExit(f"{args.csv} holds no evaluated iteration yet")
    it = [int(r["iteration"]) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, label in (("win_rate_vs_mcts", "win rate vs OpenSpiel MCTS-100"),
                       ("perfect_move_rate", "perfect-move rate (test set)"),
                       ("good_move_rate", "good-move rate (test set)"),
                       ("policy_perfect_move_rate", "perfect-move rate, network alone")):  # fmt: skip
        ax.plot(it, [float(r[key]) for r in rows], marker=".", label=label)
    if args.mark is not None:
        ax.axvline(args.mark, color="grey", linestyle="--", linewidth=1, label=args.mark_label or None)
    ax.set_xlabel("iteration")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    ax.set_title(args.title)
    fig.tight_layout()
    fig.savefig(args.png, dpi=90, metadata={"Software": None})


if __name__ == "__main__":
    main()
