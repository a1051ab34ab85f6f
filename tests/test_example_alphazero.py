"""examples/alphazero: Connect Four rules, the PUCT search, the solver, the OpenSpiel bridge, and a tiny run of
train.py with 2 remote actors on an embedded cluster."""

from __future__ import annotations

import csv
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "examples" / "alphazero"
sys.path.insert(0, str(EXAMPLE))

from connect4 import Board, board_planes  # noqa: E402
from mcts import search  # noqa: E402
from solver import Solver, perfect_and_good  # noqa: E402


def uniform(boards):
    return np.full((len(boards), 7), 1 / 7, np.float32), np.zeros(len(boards), np.float32)


def test_rules_wins_draws_and_illegal_moves():
    b = Board.from_moves("445566")  # X: 4 5 6 on the bottom row (1-based), O on top of them
    assert b.is_winning_move(6) and b.is_winning_move(2)  # the bottom row closes on either side
    assert not b.is_winning_move(0)
    vertical = Board.from_moves("121212")
    assert vertical.is_winning_move(0) and not vertical.is_winning_move(1)
    diagonal = Board.from_moves("1223343447")  # X holds the / diagonal of columns 1-3 (1-based); 4 closes it
    assert diagonal.is_winning_move(3)
    full = Board.from_moves("1" * 6)
    assert full.legal() == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="illegal move 0"):
        full.play(0)
    with pytest.raises(ValueError, match="illegal move 7"):
        Board().play(7)
    with pytest.raises(ValueError, match="wins the game"):
        Board.from_moves("12121213")  # X won with its 4th stone in column 1; a move follows it
    b = Board.from_moves("4453")
    assert (Board.from_array(b.to_array()) == b) and b.mirror().mirror() == b
    assert b.mirror() == Board.from_moves("4435")
    planes = board_planes([b])
    assert planes.shape == (1, 2, 6, 7) and planes.dtype == np.float32
    assert planes[0, 0, 5, 3] == 1 and planes[0, 1, 4, 3] == 1 and planes.sum() == 4  # X to move, row 0 at top


def test_board_from_array_rejects_bad_input():
    with pytest.raises(ValueError, match=r"shape \[6, 7\]"):
        Board.from_array(np.zeros((7, 6)))
    floating = np.zeros((6, 7), int)
    floating[0, 0] = -1
    with pytest.raises(ValueError, match="floats"):
        Board.from_array(floating)
    with pytest.raises(ValueError, match="only \\+1"):
        Board.from_array(np.full((6, 7), 2))


def test_mcts_takes_a_win_and_blocks_a_loss():
    win = Board.from_moves("121212")  # X to move: column 1 wins
    counts = search([win], [{}], uniform, 10)[0]
    assert counts.argmax() == 0 and counts.sum() == counts[0] == 10  # a win in one: no simulation elsewhere
    block = Board.from_moves("17273")  # O to move; X holds columns 1, 2, 3 (1-based) of the bottom row
    counts = search([block], [{}], uniform, 10)[0]
    assert counts.argmax() == 3 and counts[3] == 10  # the only move that does not lose at once
    # O to move; X threatens row 2 of column 4 (1-based), still empty: a stone in column 4 lets X win on top of it
    under = Board.from_moves("5336576")
    assert under.move_outcomes()[3] == -1 and np.isnan(under.move_outcomes()[[0, 1, 2, 4, 5, 6]]).all()
    counts = search([under], [{}], uniform, 30)[0]
    assert counts[3] == 0 and counts.sum() == 30
    counts = search([Board.from_moves("12121")], [{}], uniform, 5)[0]  # O must block X's column 1 (1-based)
    assert counts[0] == 5
    with pytest.raises(ValueError, match="same length"):
        search([win], [], uniform, 10)
    with pytest.raises(ValueError, match="simulations must be >= 1"):
        search([win], [{}], uniform, 0)


def test_mcts_solver_proves_a_double_threat():
    root = Board.from_moves("3344")  # X to move: column 2 or 5 (1-based) makes three in a row open at both ends
    tree: dict = {}
    counts = search([root], [tree], uniform, 40)[0]
    node = tree[root.key()]
    assert node.value == 1 and set(np.flatnonzero(node.terminal == 1)) <= {1, 4} and node.allowed.sum() >= 1
    assert counts.sum() > 0 and set(np.flatnonzero(counts)) <= {1, 4}  # only proven wins are returned
    after = tree[root.play(1).key()]
    assert after.value == -1  # O cannot block both ends


def test_move_outcomes_match_a_two_ply_search():
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(40):  # random games: each move's outcome by the bitboard rules == by playing it out two plies
        b = Board()
        while True:
            outcomes, legal = b.move_outcomes(), b.legal()
            wins = [c for c in legal if b.is_winning_move(c)]
            for c in range(7):
                if c not in legal:
                    assert np.isnan(outcomes[c])
                elif wins:
                    assert (outcomes[c] == 1) == (c in wins)
                elif b.moves == 41:
                    assert outcomes[c] == 0
                else:
                    after = b.play(c)
                    assert (outcomes[c] == -1) == any(after.is_winning_move(d) for d in after.legal())
                    checked += 1
            c = int(rng.choice(legal))
            if b.is_winning_move(c) or b.moves == 41:
                break
            b = b.play(c)
    assert checked > 500


def test_leaf_value_of_a_won_position_is_exact():
    """A leaf whose player to move can win at once is worth +1 to that player, whatever the network says."""
    def optimist(boards):  # the network calls every position lost for its player to move
        return np.full((len(boards), 7), 1 / 7, np.float32), np.full(len(boards), -1.0, np.float32)

    # X to move; O threatens both ends of its bottom row (columns 0 and 4, 0-based): every move of X loses
    lost = Board.from_array(np.array([[0] * 7] * 4 + [[0, 0, 0, 0, 0, 1, 0], [0, -1, -1, -1, 0, 1, 1]]))
    assert (lost.move_outcomes()[lost.legal_mask()] == -1).all()
    tree: dict = {}
    counts = search([lost], [tree], optimist, 14)[0]
    node = tree[lost.key()]
    assert node.value == -1 and counts.sum() == 14 and node.allowed.all()
    q = node.W[counts > 0] / counts[counts > 0]
    assert np.allclose(q, -1.0)  # the network's -1 for O would have made every move look like a win for X


def minimax(b: Board) -> int:
    """Plain negamax without pruning or table: the reference for the solver's scores."""
    if b.moves == 42:
        return 0
    return max((43 - b.moves) // 2 if b.is_winning_move(c) else -minimax(b.play(c)) for c in b.legal())


def test_solver_on_known_positions():
    s = Solver()
    assert s.solve(Board.from_moves("121212")) == (43 - 6) // 2  # a win with the next stone
    rng = np.random.default_rng(0)
    checked = 0
    while checked < 6:  # positions with 7 empty cells from random games: alpha-beta == plain minimax
        b = Board()
        while b.moves < 35:
            c = int(rng.choice(b.legal()))
            if b.is_winning_move(c):
                break
            b = b.play(c)
        if b.moves == 35:
            scores = s.move_scores(b)
            assert s.solve(b) == minimax(b) == max(x for x in scores if x is not None)
            assert scores == [None if x is None else (43 - b.moves) // 2 if b.is_winning_move(x) else
                              -minimax(b.play(x)) for x in [c if c in b.legal() else None for c in range(7)]]
            checked += 1
    perfect, good = perfect_and_good([3, None, -2, 3, 1, -5, 0])
    assert perfect == [0, 3] and good == [0, 3, 4]


def test_test_set_is_labelled_by_the_solver():
    data = json.loads((EXAMPLE / "perfect_moves.json").read_text())
    assert data["meta"]["positions"] == len(data["positions"]) >= 100
    s = Solver()
    for pos in data["positions"][:5]:
        b = Board.from_moves(pos["moves"])
        assert s.move_scores(b) == pos["scores"]
        assert 42 - b.moves <= data["meta"]["max_empty"]


def test_open_spiel_bridge_plays_legal_moves():
    pytest.importorskip("pyspiel", reason="pip install 'parl-algorithms[open_spiel]' (nox installs it)")
    from connect4 import OpenSpielMCTS
    from train import play_match

    bot = OpenSpielMCTS(simulations=20, seed=0)
    result = play_match([uniform, bot], 2, simulations=8, c_puct=1.5)  # raises on an illegal column
    assert result.sum() == 2
    state = bot.new_game()
    with pytest.raises(ValueError, match="illegal"):
        for _ in range(7):
            OpenSpielMCTS.apply(state, 0)


def test_missing_open_spiel_is_named(monkeypatch):
    import builtins

    import connect4

    real = builtins.__import__

    def fake(name, *args, **kwargs):
        if name.startswith(("pyspiel", "open_spiel")):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match=r"parl-algorithms\[open_spiel\]"):
        connect4.require_open_spiel()


def test_network_rejects_wrong_shapes():
    import torch
    from train import PolicyValueNet

    net = PolicyValueNet(channels=8, blocks=1)
    logits, v = net(torch.zeros(3, 2, 6, 7))
    assert logits.shape == (3, 7) and v.shape == (3,)
    with pytest.raises(ValueError, match=r"\[B, 2, 6, 7\]"):
        net(torch.zeros(3, 84))


def _run(tmp_path, *extra):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, str(EXAMPLE / "train.py"), "--logdir", str(tmp_path), "--no-progress", *extra],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
    )  # fmt: skip


def test_tiny_run_with_two_remote_actors_and_restore(tmp_path):
    pytest.importorskip("pyspiel", reason="pip install 'parl-algorithms[open_spiel]' (nox installs it)")
    args = ["--actors", "2", "--games-per-iteration", "4", "--simulations", "4", "--eval-simulations", "4",
            "--channels", "8", "--blocks", "1", "--eval-every", "1", "--eval-games", "2", "--final-eval-games", "0",
            "--bot-simulations", "4", "--test-positions", "4", "--arena-games", "2"]  # fmt: skip
    proc = _run(tmp_path, "--iterations", "1", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = (tmp_path / "curve.csv").read_text().splitlines()
    assert rows[0].startswith("iteration,games,wall_s,cpu_s") and len(rows) == 2
    proc = _run(tmp_path, "--iterations", "2", *args, "--resume", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["iterations"] == 2 and summary["self_play_games"] == 8 and summary["actors"] == 2
    assert 0 <= summary["final_perfect_move_rate"] <= 1 and summary["test_positions"] == 4
    rows = list(csv.DictReader((tmp_path / "curve.csv").read_text().splitlines()))
    assert [r["iteration"] for r in rows] == ["1", "2"] and all(r["eval_games"] == "2" for r in rows)
    assert all(0 <= float(r["win_rate_vs_mcts"]) <= 1 for r in rows)


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--actors", "0"], "--actors must be >= 1"), (["--restore", "nope.pt"], "no such file"),
     (["--eval-games", "-1"], "--eval-games must be >= 0"),
     (["--resume", "nowhere"], "--resume nowhere: no checkpoint.pt there"),
     (["--resume", "nowhere", "--restore", "nope.pt"], "give one")],
)  # fmt: skip
def test_bad_flags_are_named(monkeypatch, capsys, argv, message):
    import train

    monkeypatch.setattr(sys, "argv", ["train.py", *argv])
    with pytest.raises(SystemExit) as exc:
        train.main()
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_a_checkpoint_of_another_network_is_refused_naming_the_flags(tmp_path, monkeypatch):
    pytest.importorskip("pyspiel", reason="pip install 'parl-algorithms[open_spiel]' (nox installs it)")
    import torch
    import train

    torch.save({"model": {}, "net": {"channels": 16, "blocks": 2}}, tmp_path / "checkpoint.pt")
    monkeypatch.setattr(sys, "argv", ["train.py", "--resume", str(tmp_path), "--channels", "8", "--blocks", "1"])
    with pytest.raises(SystemExit) as exc:
        train.main()
    message = str(exc.value.code)
    assert "'channels': 16" in message and "give the run's --channels and --blocks" in message


@pytest.mark.parametrize("content", [b"", b"\x80\x04not a checkpoint" * 10, "pickled code"])
def test_a_bad_checkpoint_is_refused_naming_the_file_and_the_fix(tmp_path, monkeypatch, content):
    """--restore loads tensors, numbers and strings only (``weights_only``): a damaged file, or one that would run code
    when unpickled, is refused with the fix named, and nothing in it is executed."""
    pytest.importorskip("pyspiel", reason="pip install 'parl-algorithms[open_spiel]' (nox installs it)")
    import train

    bad = tmp_path / "checkpoint.pt"
    if content == "pickled code":
        import torch

        torch.save({"model": {}, "payload": _Boom(tmp_path / "boom")}, bad)
    else:
        bad.write_bytes(content)
    monkeypatch.setattr(sys, "argv", ["train.py", "--restore", str(bad), "--logdir", str(tmp_path / "run"),
                                      "--channels", "8", "--blocks", "1"])
    with pytest.raises(SystemExit) as exc:
        train.main()
    message = str(exc.value.code)
    assert str(bad) in message and "start afresh without --restore" in message
    assert not (tmp_path / "boom").exists()


class _Boom:
    """An object whose unpickling would create a file (what a malicious checkpoint could do)."""

    def __init__(self, path: pathlib.Path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))
