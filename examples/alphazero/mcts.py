"""PUCT Monte-Carlo tree search of AlphaZero (Silver et al. 2017, "Mastering the game of Go without human
knowledge"; Silver et al. 2018 for the game-independent form), batched over many games at once.

One :func:`search` call grows the trees of B games in lock-step: in each of the ``simulations`` rounds it walks
every game's tree from its root to a new leaf by ``argmax_a Q(s,a) + c_puct P(s,a) sqrt(N(s)) / (1 + N(s,a))``,
evaluates the B leaves with one network call, and backs the values up. A game's tree is a dict
``key -> Node`` that a caller keeps between moves, so the subtree of the move played is reused (as PARL's
``MCTS`` object, which keeps its ``Qsa`` / ``Nsa`` dicts across the moves of one game). Moves that end the game
are scored by the rules (a win +1, a full board 0), never by the network.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from connect4 import CELLS, WIDTH, Board

#: ``evaluate(boards) -> (priors float32 [B, 7], values float32 [B])``: the network's move probabilities (over all
#: 7 columns; illegal ones are masked here) and value in [-1, 1] for the player to move of each board
Evaluator = Callable[[list[Board]], tuple[np.ndarray, np.ndarray]]


class Node:
    """One expanded position: priors ``P``, visit counts ``N``, total values ``W`` (float64 ``[7]``, the value of
    a move for this node's player to move), ``terminal`` (float64 ``[7]``: the outcome of a move that ends the
    game, NaN otherwise) and the child boards."""

    __slots__ = ("board", "P", "N", "W", "n_total", "legal", "terminal", "children", "root_P")

    def __init__(self, board: Board, prior: np.ndarray) -> None:
        self.board = board
        self.legal = board.legal_mask()
        p = np.where(self.legal, prior, 0.0)
        total = p.sum()
        self.P = p / total if total > 0 else self.legal / self.legal.sum()
        self.N = np.zeros(WIDTH)
        self.W = np.zeros(WIDTH)
        self.n_total = 0
        self.terminal = np.full(WIDTH, np.nan)
        self.children: list[Board | None] = [None] * WIDTH
        full_after = board.moves == CELLS - 1
        for c in np.flatnonzero(self.legal):
            if board.is_winning_move(int(c)):
                self.terminal[c] = 1.0
            elif full_after:
                self.terminal[c] = 0.0
        self.root_P = self.P

    def select(self, c_puct: float) -> int:
        """The column of highest ``Q + U`` (unvisited moves have Q = 0)."""
        q = np.divide(self.W, self.N, out=np.zeros(WIDTH), where=self.N > 0)
        u = c_puct * self.root_P * math.sqrt(max(self.n_total, 1)) / (1.0 + self.N)
        return int(np.argmax(np.where(self.legal, q + u, -np.inf)))

    def child(self, col: int) -> Board:
        b = self.children[col]
        if b is None:
            b = self.children[col] = self.board.play(col)
        return b


def _backup(path: list[tuple[Node, int]], value: float) -> None:
    """``value``: the value of the last move of ``path`` for the player who makes it."""
    for node, col in reversed(path):
        node.N[col] += 1
        node.W[col] += value
        node.n_total += 1
        value = -value


def search(
    roots: list[Board],
    trees: list[dict[int, Node]],
    evaluate: Evaluator,
    simulations: int,
    *,
    c_puct: float = 1.5,
    dirichlet_alpha: float = 1.0,
    noise_fraction: float = 0.0,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Run ``simulations`` simulations from each root.

    Args:
        roots: B boards, none finished.
        trees: B dicts (``{}`` for a new game), grown in place and kept by the caller for the next move.
        evaluate: the network (:data:`Evaluator`).
        simulations: simulations per root (>= 1).
        c_puct: exploration constant.
        dirichlet_alpha, noise_fraction: self-play exploration: the roots' priors become
            ``(1 - noise_fraction) P + noise_fraction Dir(dirichlet_alpha)`` for this call (0: no noise).
        rng: for the noise.

    Returns:
        float64 ``[B, 7]``: the roots' visit counts (0 for illegal columns).

    Raises:
        ValueError: lengths differ, ``simulations < 1``, or a root is a finished game (no legal move).
    """
    if len(roots) != len(trees):
        raise ValueError(f"roots and trees must have the same length, got {len(roots)} and {len(trees)}")
    if simulations < 1:
        raise ValueError(f"simulations must be >= 1, got {simulations}")
    missing = [(i, b) for i, b in enumerate(roots) if b.key() not in trees[i]]
    if missing:
        priors, _ = evaluate([b for _, b in missing])
        for (i, b), p in zip(missing, priors, strict=True):
            trees[i][b.key()] = Node(b, p)
    nodes = [trees[i][b.key()] for i, b in enumerate(roots)]
    for node in nodes:
        if not node.legal.any():
            raise ValueError("a root has no legal move (the board is full): finished games cannot be searched")
        node.root_P = node.P
        if noise_fraction > 0:
            rng = rng if rng is not None else np.random.default_rng()
            noise = np.zeros(WIDTH)
            noise[node.legal] = rng.dirichlet([dirichlet_alpha] * int(node.legal.sum()))
            node.root_P = (1 - noise_fraction) * node.P + noise_fraction * noise
    for _ in range(simulations):
        pending: list[tuple[int, Board, list[tuple[Node, int]]]] = []
        for i, root in enumerate(nodes):
            tree, node, path = trees[i], root, []
            while True:
                col = node.select(c_puct)
                path.append((node, col))
                if not math.isnan(node.terminal[col]):
                    _backup(path, float(node.terminal[col]))  # a win (+1) or a draw (0) by the rules
                    break
                board = node.child(col)
                nxt = tree.get(board.key())
                if nxt is None:
                    pending.append((i, board, path))
                    break
                node = nxt
        if pending:
            priors, values = evaluate([b for _, b, _ in pending])
            for (i, board, path), p, v in zip(pending, priors, values, strict=True):
                trees[i][board.key()] = Node(board, p)
                _backup(path, -float(v))  # v is for the leaf's player, the opponent of the mover
    for node in nodes:
        node.root_P = node.P
    return np.stack([node.N.copy() for node in nodes])


def visit_policy(counts: np.ndarray, temperature: float) -> np.ndarray:
    """float64 ``[B, 7]`` move probabilities ``N^(1/T) / sum`` from visit counts ``[B, 7]``; ``temperature`` 0:
    one-hot on the most visited column (ties: the lowest column)."""
    counts = np.asarray(counts, np.float64)
    if temperature == 0:
        out = np.zeros_like(counts)
        out[np.arange(len(counts)), counts.argmax(axis=1)] = 1.0
        return out
    powered = counts ** (1.0 / temperature)
    return powered / powered.sum(axis=1, keepdims=True)
