"""PUCT Monte-Carlo tree search of AlphaZero (Silver et al. 2017, "Mastering the game of Go without human
knowledge"; Silver et al. 2018 for the game-independent form), batched over many games at once.

One :func:`search` call grows the trees of B games in lock-step: in each of the ``simulations`` rounds it walks
every game's tree from its root to a new leaf by ``argmax_a Q(s,a) + c_puct P(s,a) sqrt(N(s)) / (1 + N(s,a))``,
evaluates the B leaves with one network call, and backs the values up. A game's tree is a dict
``key -> Node`` that a caller keeps between moves, so the subtree of the move played is reused (as PARL's
``MCTS`` object, which keeps its ``Qsa`` / ``Nsa`` dicts across the moves of one game). Moves that end the game
are scored by the rules (a win +1, a full board 0), never by the network; so are the two-ply tactics the rules
decide (Pons' ``possibleNonLosingMoves``): a position with a winning move is worth +1 and the search visits only
its winning moves; a move that lets the opponent win with its next stone is worth -1 and is not visited while
another move is not lost. Proven values climb the tree as in MCTS-Solver (Winands et al. 2008; OpenSpiel's
``MCTSBot`` solves the same way): a position with a proven won move, or whose moves are all proven, is proven.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from connect4 import WIDTH, Board

#: ``evaluate(boards) -> (priors float32 [B, 7], values float32 [B])``: the network's move probabilities (over all
#: 7 columns; illegal ones are masked here) and value in [-1, 1] for the player to move of each board
Evaluator = Callable[[list[Board]], tuple[np.ndarray, np.ndarray]]


class Node:
    """One expanded position: priors ``P``, visit counts ``N``, total values ``W`` (float64 ``[7]``, the value of
    a move for this node's player to move), ``terminal`` (float64 ``[7]``, :meth:`connect4.Board.move_outcomes`:
    +1 a move that wins at once, -1 one that lets the opponent win with its next stone, 0 the last move of a
    drawn board, NaN otherwise; then the moves the search proves, MCTS-Solver), ``allowed`` (bool ``[7]``: the
    moves the search visits: the won moves when there are any, else the moves not proven lost when there are
    any, else every legal move), ``value`` (the position's value for its player to move once proven: +1 a move
    wins, else the best proven move when every move is proven; NaN otherwise) and the child boards."""

    __slots__ = ("board", "P", "N", "W", "n_total", "legal", "allowed", "terminal", "value", "children", "root_P")

    def __init__(self, board: Board, prior: np.ndarray) -> None:
        self.board = board
        self.legal = board.legal_mask()
        self.terminal = board.move_outcomes()
        self.settle()
        p = np.where(self.allowed, prior, 0.0)
        total = p.sum()
        self.P = p / total if total > 0 else self.allowed / max(self.allowed.sum(), 1)
        self.N = np.zeros(WIDTH)
        self.W = np.zeros(WIDTH)
        self.n_total = 0
        self.children: list[Board | None] = [None] * WIDTH
        self.root_P = self.P

    def select(self, c_puct: float) -> int:
        """The allowed column of highest ``Q + U`` (unvisited moves have Q = 0)."""
        q = np.divide(self.W, self.N, out=np.zeros(WIDTH), where=self.N > 0)
        u = c_puct * self.root_P * math.sqrt(max(self.n_total, 1)) / (1.0 + self.N)
        return int(np.argmax(np.where(self.allowed, q + u, -np.inf)))

    def settle(self) -> None:
        """Recompute ``allowed`` and ``value`` from ``terminal`` (after a move's value was proven)."""
        t, legal = self.terminal, self.legal
        wins = t == 1.0
        if wins.any():
            self.allowed, self.value = wins, 1.0
            return
        open_ = legal & ~(t == -1.0)
        self.allowed = open_ if open_.any() else legal
        known = ~np.isnan(t[legal])
        self.value = float(t[legal].max()) if legal.any() and known.all() else math.nan

    def child(self, col: int) -> Board:
        b = self.children[col]
        if b is None:
            b = self.children[col] = self.board.play(col)
        return b


def _backup(path: list[tuple[Node, int]], value: float, proven: float = math.nan) -> None:
    """``value``: the value of the last move of ``path`` for the player who makes it; ``proven``: that value when it
    is exact (a finished game, or a position the rules or the tree decide), else NaN.

    MCTS-Solver (Winands, Bjornsson and Saito 2008, "Monte-Carlo Tree Search Solver"): a proven move value is
    stored in its node's ``terminal``; a node whose moves are decided (a winning move, or every move proven) is
    proven in turn, for the move into it, up the path."""
    for node, col in reversed(path):
        node.N[col] += 1
        node.W[col] += value
        node.n_total += 1
        if not math.isnan(proven):
            if math.isnan(node.terminal[col]):
                node.terminal[col] = proven
                node.settle()
            proven = -node.value
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
        float64 ``[B, 7]``: the roots' visit counts (0 for illegal columns), 0 too for the moves a proof rules
        out (all but the won moves when a move is proven won; the proven lost moves while another is open).

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
            if node.allowed.sum() > 1:
                noise[node.allowed] = rng.dirichlet([dirichlet_alpha] * int(node.allowed.sum()))
            else:
                noise = node.P
            node.root_P = (1 - noise_fraction) * node.P + noise_fraction * noise
    for _ in range(simulations):
        pending: list[tuple[int, Board, list[tuple[Node, int]]]] = []
        for i, root in enumerate(nodes):
            tree, node, path = trees[i], root, []
            while True:
                col = node.select(c_puct)
                path.append((node, col))
                if not math.isnan(node.terminal[col]):
                    value = float(node.terminal[col])  # proven: a win (+1), a draw (0) or a loss (-1)
                    _backup(path, value, value)
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
                leaf = trees[i][board.key()] = Node(board, p)
                value = float(v) if math.isnan(leaf.value) else leaf.value  # the rules' value when they decide it
                _backup(path, -value, -leaf.value)  # value is for the leaf's player, the opponent of the mover
    for node in nodes:
        node.root_P = node.P
    # a proven win is played, a proven loss is not while another move is open (their visits may lag behind)
    return np.stack([np.where(n.allowed, n.N, 0.0) if n.N[n.allowed].sum() > 0 else n.N.copy() for n in nodes])


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
