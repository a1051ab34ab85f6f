"""Connect Four rules on bitboards (Pascal Pons' layout), the network's input planes, and a bridge to OpenSpiel.

A position is a :class:`Board`: ``position`` (the stones of the player to move) and ``mask`` (all stones) as
Python ints, one bit per cell, column-major with 7 bits per column (6 rows + 1 sentinel bit): the cell of
column ``c`` (0..6, left to right) and row ``r`` (0..5, bottom to top) is bit ``7 * c + r``. After a move
the two players swap (``position ^= mask``), so a board is always seen by the player to move
(PARL's ``getCanonicalForm``). Source: P. Pons, "Solving Connect 4: how to build a perfect AI" (2019).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

WIDTH, HEIGHT = 7, 6
CELLS = WIDTH * HEIGHT
_H1 = HEIGHT + 1
BOTTOM = [1 << (_H1 * c) for c in range(WIDTH)]
TOP = [1 << (HEIGHT - 1 + _H1 * c) for c in range(WIDTH)]
COLUMN = [((1 << HEIGHT) - 1) << (_H1 * c) for c in range(WIDTH)]
BOTTOM_MASK = sum(BOTTOM)
BOARD_MASK = sum(COLUMN)
#: the bit index of cell (row r from the top, column c) in the [6, 7] picture of a board
_BIT_OF_CELL = np.array([[_H1 * c + (HEIGHT - 1 - r) for c in range(WIDTH)] for r in range(HEIGHT)], np.uint64)


def aligned(pos: int) -> bool:
    """True when the stones ``pos`` hold four in a row (horizontal, vertical or either diagonal)."""
    for shift in (_H1, 1, HEIGHT, HEIGHT + 2):  # horizontal, vertical, diagonal /, diagonal \
        m = pos & (pos >> shift)
        if m & (m >> (2 * shift)):
            return True
    return False


def winning_cells(pos: int, mask: int) -> int:
    """The empty cells (a bitboard, reachable or not) that would complete four in a row for the stones ``pos``
    on a board whose stones are ``mask`` (Pons' ``compute_winning_position``)."""
    r = (pos << 1) & (pos << 2) & (pos << 3)  # vertical: only upwards
    for s in (_H1, HEIGHT, HEIGHT + 2):  # horizontal and both diagonals
        p = (pos << s) & (pos << 2 * s)
        r |= p & (pos << 3 * s)
        r |= p & (pos >> s)
        p = (pos >> s) & (pos >> 2 * s)
        r |= p & (pos << s)
        r |= p & (pos >> 3 * s)
    return r & (BOARD_MASK ^ mask)


class Board(NamedTuple):
    """A Connect Four position seen by the player to move.

    ``position``: that player's stones; ``mask``: all stones; ``moves``: the number of stones (0..42).
    """

    position: int = 0
    mask: int = 0
    moves: int = 0

    def legal(self) -> list[int]:
        """The columns (0..6) that are not full."""
        return [c for c in range(WIDTH) if not self.mask & TOP[c]]

    def legal_mask(self) -> np.ndarray:
        """bool ``[7]``: True for a column that is not full."""
        return np.array([not self.mask & TOP[c] for c in range(WIDTH)])

    def is_winning_move(self, col: int) -> bool:
        """Whether dropping a stone in ``col`` (a legal column) makes four in a row for the player to move."""
        return aligned(self.position | ((self.mask + BOTTOM[col]) & COLUMN[col]))

    def play(self, col: int) -> Board:
        """The board after the player to move drops a stone in ``col``, seen by the other player.

        Raises:
            ValueError: ``col`` is not 0..6 or the column is full (pick one of :meth:`legal`).
        """
        if not 0 <= col < WIDTH or self.mask & TOP[col]:
            raise ValueError(f"illegal move {col!r}: legal columns are {self.legal()}")
        return Board(self.position ^ self.mask, self.mask | (self.mask + BOTTOM[col]), self.moves + 1)

    def move_outcomes(self) -> np.ndarray:
        """float64 ``[7]``: what the rules alone decide about each move, for the player to move: +1 a move that
        wins at once; -1 a move that lets the opponent win with its next stone (it leaves an opponent's
        immediate win unblocked, or it fills the cell under one), only when no move wins at once; 0 the last
        move of a full board that does not win; NaN otherwise (undecided, and for full columns).
        Pons' ``possibleNonLosingMoves``."""
        out = np.full(WIDTH, np.nan)
        possible = (self.mask + BOTTOM_MASK) & BOARD_MASK
        mine = winning_cells(self.position, self.mask) & possible
        if mine:
            for c in range(WIDTH):
                if mine & COLUMN[c]:
                    out[c] = 1.0
            return out
        theirs = winning_cells(self.position ^ self.mask, self.mask)
        forced = possible & theirs
        two_threats = forced & (forced - 1)
        under = (theirs >> 1) & possible  # a stone here lets the opponent play on top of it and win
        last = self.moves == CELLS - 1
        for c in range(WIDTH):
            if not possible & COLUMN[c]:
                continue
            if two_threats or (forced and not forced & COLUMN[c]) or under & COLUMN[c]:
                out[c] = -1.0
            elif last:
                out[c] = 0.0
        return out

    def key(self) -> int:
        """A unique int for the position (Pons' key ``position + mask``)."""
        return self.position + self.mask

    def mirror(self) -> Board:
        """The board reflected left-right."""
        pos = mask = 0
        for c in range(WIDTH):
            shift = _H1 * (WIDTH - 1 - 2 * c)
            pc, mc = self.position & COLUMN[c], self.mask & COLUMN[c]
            pos |= pc << shift if shift >= 0 else pc >> -shift
            mask |= mc << shift if shift >= 0 else mc >> -shift
        return Board(pos, mask, self.moves)

    @classmethod
    def from_moves(cls, moves: str | list[int]) -> Board:
        """The board after the columns ``moves`` (``"4453"``: 1-based digits as in Pons' notation, or a list of
        0-based ints) were played from the empty board.

        Raises:
            ValueError: a move is illegal or the game was already won before it.
        """
        cols = [int(ch) - 1 for ch in moves] if isinstance(moves, str) else [int(c) for c in moves]
        board = cls()
        for i, col in enumerate(cols):
            if 0 <= col < WIDTH and not board.mask & TOP[col] and board.is_winning_move(col) and i < len(cols) - 1:
                raise ValueError(f"move {i} ({col}) wins the game; the moves after it cannot be played")
            board = board.play(col)
        return board

    @classmethod
    def from_array(cls, cells: np.ndarray) -> Board:
        """The board of ``cells``: int ``[6, 7]``, row 0 at the top, +1 the player to move, -1 the other, 0 empty.

        Raises:
            ValueError: wrong shape or values, a stone floating above an empty cell, or stone counts that no game
            reaches (the player to move has as many stones as the other, or one fewer).
        """
        cells = np.asarray(cells)
        if cells.shape != (HEIGHT, WIDTH):
            raise ValueError(f"cells must have shape [6, 7] (rows top to bottom), got {list(cells.shape)}")
        if not np.isin(cells, (-1, 0, 1)).all():
            raise ValueError("cells must hold only +1 (player to move), -1 (other player) and 0 (empty)")
        filled = cells != 0
        if (filled[:-1] & ~filled[1:]).any():
            raise ValueError("a stone floats above an empty cell: stones must lie on the bottom row or on a stone")
        mine, theirs = int((cells == 1).sum()), int((cells == -1).sum())
        if theirs - mine not in (0, 1):
            raise ValueError(f"the player to move has {mine} stones and the other {theirs}: impossible in a game")
        bits = _BIT_OF_CELL.astype(np.int64)
        position = sum(1 << int(b) for b in bits[cells == 1])
        mask = sum(1 << int(b) for b in bits[filled])
        return cls(position, mask, mine + theirs)

    def to_array(self) -> np.ndarray:
        """int8 ``[6, 7]``, row 0 at the top: +1 the player to move, -1 the other player, 0 empty."""
        planes = board_planes([self])[0]
        return (planes[0] - planes[1]).astype(np.int8)

    def __str__(self) -> str:
        first = self.moves % 2 == 0  # the player to move is "X" when it moved first
        sym = {1: "X" if first else "O", -1: "O" if first else "X", 0: "."}
        return "\n".join(" ".join(sym[int(v)] for v in row) for row in self.to_array()) + "\n0 1 2 3 4 5 6"


def board_planes(boards: list[Board]) -> np.ndarray:
    """float32 ``[B, 2, 6, 7]``: plane 0 the stones of the player to move, plane 1 the other player's; row 0 at
    the top. The network's input."""
    pos = np.array([b.position for b in boards], np.uint64)
    mask = np.array([b.mask for b in boards], np.uint64)
    mine = (pos[:, None, None] >> _BIT_OF_CELL) & np.uint64(1)
    allst = (mask[:, None, None] >> _BIT_OF_CELL) & np.uint64(1)
    return np.stack([mine, allst - mine], axis=1).astype(np.float32)


def require_open_spiel():
    """Import ``pyspiel`` and OpenSpiel's MCTS module.

    Raises:
        ImportError: open_spiel is not installed (``pip install 'parl-algorithms[open_spiel]'``).
    """
    try:
        import pyspiel
        from open_spiel.python.algorithms import mcts
    except ImportError as err:
        raise ImportError(
            "this needs OpenSpiel: pip install 'parl-algorithms[open_spiel]' (or pip install open-spiel==2.0.2)"
        ) from err
    return pyspiel, mcts


class OpenSpielMCTS:
    """OpenSpiel's ``connect_four`` MCTS bot (``open_spiel.python.algorithms.mcts.MCTSBot``): UCT with
    ``uct_c`` = 2, ``max_simulations`` simulations per move, one uniform random rollout per leaf
    (``RandomRolloutEvaluator(n_rollouts=1)``), MCTS-Solver on (OpenSpiel's default ``solve=True``).

    OpenSpiel's action is the column (0..6), as ours.

    Raises:
        ImportError: open_spiel is not installed.
    """

    def __init__(self, simulations: int = 100, seed: int = 0, uct_c: float = 2.0) -> None:
        pyspiel, mcts = require_open_spiel()
        self.game = pyspiel.load_game("connect_four")
        rng = np.random.RandomState(seed)
        self.bot = mcts.MCTSBot(self.game, uct_c, simulations, mcts.RandomRolloutEvaluator(1, rng), random_state=rng)

    def new_game(self):
        """A fresh OpenSpiel state (pass it to :meth:`step` and :meth:`apply`)."""
        return self.game.new_initial_state()

    def step(self, state) -> int:
        """The bot's column for OpenSpiel ``state``."""
        return int(self.bot.step(state))

    @staticmethod
    def apply(state, col: int) -> None:
        """Play ``col`` on the OpenSpiel ``state`` (both sides' moves go through this to keep it in step).

        Raises:
            ValueError: ``col`` is illegal in ``state``.
        """
        if col not in state.legal_actions():
            raise ValueError(f"column {col} is illegal in the OpenSpiel state; legal: {state.legal_actions()}")
        state.apply_action(col)
