"""A perfect-play reference for Connect Four positions near the end of the game, and the test set it labels.

:func:`solve` is Pons' negamax (alpha-beta, centre-first move order, a transposition table of upper bounds)
in pure Python: exact for any position, but only fast for positions with few empty cells (measured on this
2-core VM: about 0.1 s for 12 empty cells, seconds for 16; the opening is out of its reach). The test set
(:func:`make_test_set`, stored in ``perfect_moves.json``) holds positions of uniformly random games with
``min_empty``..``max_empty`` empty cells where the choice matters (not every legal move has the same
win / draw / loss outcome), each move labelled with its exact score, as PARL's AlphaZero test set
(there: 1000 positions labelled by Pons' C++ solver, over all stages of the game).

Score (Pons): 0 a draw; ``(43 - moves) // 2`` for the player to move when it wins with its next stone, smaller
the later it wins; negative when it loses. Source: P. Pons, "Solving Connect 4: how to build a perfect AI" (2019).

Usage::

    python examples/alphazero/solver.py --positions 300 --seed 0   # writes examples/alphazero/perfect_moves.json
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
from connect4 import CELLS, WIDTH, Board

ORDER = (3, 2, 4, 1, 5, 0, 6)  # centre first


class Solver:
    """Exact negamax scores; keeps its transposition table across calls (``key -> upper bound``)."""

    def __init__(self) -> None:
        self.table: dict[int, int] = {}
        self.nodes = 0

    def negamax(self, b: Board, alpha: int, beta: int) -> int:
        """The score of ``b`` when it lies in ``(alpha, beta)``; else a bound on the side of the window it fails."""
        self.nodes += 1
        if b.moves >= CELLS:
            return 0
        legal = b.legal()
        for c in legal:
            if b.is_winning_move(c):
                return (CELLS + 1 - b.moves) // 2
        upper = (CELLS - 1 - b.moves) // 2
        upper = min(upper, self.table.get(b.key(), upper))
        if beta > upper:
            beta = upper
            if alpha >= beta:
                return beta
        for c in ORDER:
            if c in legal:
                score = -self.negamax(b.play(c), -beta, -alpha)
                if score >= beta:
                    return score
                if score > alpha:
                    alpha = score
        self.table[b.key()] = alpha
        return alpha

    def solve(self, b: Board) -> int:
        """The exact score of ``b`` for the player to move (see the module docstring)."""
        return self.negamax(b, -CELLS, CELLS)

    def move_scores(self, b: Board) -> list[int | None]:
        """The exact score of each column for the player to move (``None`` for a full column).

        Raises:
            ValueError: the game is over (a full board).
        """
        if b.moves >= CELLS:
            raise ValueError("the board is full: no move to score")
        scores: list[int | None] = [None] * WIDTH
        for c in b.legal():
            scores[c] = (CELLS + 1 - b.moves) // 2 if b.is_winning_move(c) else -self.solve(b.play(c))
        return scores


def outcome(score: int) -> int:
    """+1 win, 0 draw, -1 loss of a score."""
    return (score > 0) - (score < 0)


def perfect_and_good(scores: list[int | None]) -> tuple[list[int], list[int]]:
    """The columns of best score (PARL's "perfect moves") and of best outcome (its "good moves")."""
    legal = [s for s in scores if s is not None]
    best = max(legal)
    perfect = [c for c, s in enumerate(scores) if s is not None and s == best]
    good = [c for c, s in enumerate(scores) if s is not None and outcome(s) == outcome(best)]
    return perfect, good


def make_test_set(n: int, *, min_empty: int = 8, max_empty: int = 14, seed: int = 0) -> list[dict]:
    """``n`` positions from uniformly random games, with ``min_empty..max_empty`` empty cells, where the move matters.

    Returns:
        dicts ``{"moves": [int], "scores": [int | None] * 7}``: the 0-based columns played from the empty board
        and each column's exact score.
    """
    rng = np.random.default_rng(seed)
    solver, out = Solver(), []
    while len(out) < n:
        stop = CELLS - int(rng.integers(min_empty, max_empty + 1))
        b, moves = Board(), []
        while b.moves < stop:
            legal = b.legal()
            col = int(rng.choice(legal))
            if b.is_winning_move(col):
                break
            b, moves = b.play(col), [*moves, col]
        if b.moves < stop:
            continue
        scores = solver.move_scores(b)
        _, good = perfect_and_good(scores)
        if len(good) == len(b.legal()):
            continue  # every move gives the same outcome: no decision to test
        out.append({"moves": moves, "scores": scores})
        if len(solver.table) > 2_000_000:
            solver.table.clear()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--positions", type=int, default=300)
    parser.add_argument("--min-empty", type=int, default=8)
    parser.add_argument("--max-empty", type=int, default=14)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "perfect_moves.json"))
    args = parser.parse_args()
    if not 1 <= args.min_empty <= args.max_empty <= CELLS - 1:
        parser.error("need 1 <= --min-empty <= --max-empty <= 41")
    data = make_test_set(args.positions, min_empty=args.min_empty, max_empty=args.max_empty, seed=args.seed)
    meta = {"positions": len(data), "min_empty": args.min_empty, "max_empty": args.max_empty, "seed": args.seed,
            "source": "uniformly random games; exact scores by examples/alphazero/solver.py"}
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "positions": data}, f, separators=(",", ":"))
    print(f"wrote {len(data)} positions to {args.out}")


if __name__ == "__main__":
    main()
