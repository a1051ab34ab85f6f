"""Writes ``refmoves1k_kaggle`` (the Kaggle "1k connect4 validation set" format PARL's AlphaZero examples read)
from ``examples/alphazero/perfect_moves.json``, since the Kaggle file cannot be downloaded here.

Each line is ``{"board": [42 cells, row-major from the top row, 0 empty / 1 first player / 2 second player],
"move score": [7 scores]}``; a full column, which has no score, gets -1000 (never PARL's perfect or good move).
The 300 positions are late ones (8-16 empty cells; see ``examples/alphazero/README.md``), not Kaggle's 1000 from
all stages of the game.

    python tests/parl2/make_connect4_refmoves.py <output file>
"""

import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROWS, COLS = 6, 7


def board_of(moves):
    board = [[0] * COLS for _ in range(ROWS)]
    for ply, col in enumerate(moves):
        row = max(r for r in range(ROWS) if board[r][col] == 0)
        board[row][col] = 1 + ply % 2
    return [cell for row in board for cell in row]


def main(out):
    data = json.loads((ROOT / "examples" / "alphazero" / "perfect_moves.json").read_text())
    with open(out, "w") as f:
        for pos in data["positions"]:
            scores = [-1000 if s is None else s for s in pos["scores"]]
            f.write(json.dumps({"board": board_of(pos["moves"]), "move score": scores}) + "\n")
    print(f"{len(data['positions'])} positions -> {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "refmoves1k_kaggle")
