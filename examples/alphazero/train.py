"""AlphaZero for Connect Four with self-play and evaluation games on remote actors (PARL's examples/AlphaZero).

Algorithm box (Silver et al. 2017 "Mastering the game of Go without human knowledge", Silver et al. 2018
"A general reinforcement learning algorithm that masters chess, shogi and Go through self-play")::

    f_theta(s) = (p, v): a small residual CNN, p over the 7 columns, v in [-1, 1] for the player to move
    for iteration i = 1 .. I:
        every actor (``@parl.remote_class``) gets theta and plays G / N games against itself: at each move a
            PUCT search of S simulations (mcts.py) from the position, with Dirichlet noise on the root's
            priors; the move is drawn from the visit counts (temperature 1 for the first T moves, then the
            most visited); each position gets pi = visit counts / S and z = the game's outcome for its player
        the learner keeps the positions of the last W iterations (and their mirror images) and takes Adam
            steps on  (z - v)^2 - pi . log p  (+ L2 weight decay) over minibatches drawn from them
        [--arena-games A: PARL's pitting: the new and the previous network play A games (both colours); the new
            one is kept only when it wins >= --update-threshold of the decided games (AlphaGo Zero's gating)]
        every E iterations: the actors play games against OpenSpiel's MCTS bot (uniform random rollouts, UCT
            c = 2, 100 simulations a move), half with each colour, and search the positions of the perfect-play
            test set (solver.py): win rate and perfect-move rate

Usage::

    python examples/alphazero/train.py --actors 2 --seed 0                   # embedded local cluster
    xparl start --port 8010 --cpu-num 5 && python examples/alphazero/train.py --address localhost:8010 --actors 5
    python examples/alphazero/train.py --resume runs/alphazero/seed0   # go on (or --restore FILE)

Writes ``<logdir>/summary.json``, ``<logdir>/curve.csv`` (one row per iteration), tensorboard scalars and
``<logdir>/checkpoint.pt`` (after every iteration).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from connect4 import CELLS, HEIGHT, WIDTH, Board, OpenSpielMCTS, board_planes, require_open_spiel
from mcts import search, visit_policy
from solver import perfect_and_good
from torch import nn
from tqdm import tqdm

import parl
from parl.utils import atomic_write, logger, summary
from parl_core.torch import Model

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_SET = os.path.join(HERE, "perfect_moves.json")
CURVE_COLUMNS = [
    "iteration", "games", "wall_s", "cpu_s", "examples", "loss_pi", "loss_v", "accepted", "pit_win_rate",
    "eval_games", "win_rate_vs_mcts", "draw_rate_vs_mcts", "perfect_move_rate", "good_move_rate",
    "policy_perfect_move_rate",
]  # fmt: skip


class PolicyValueNet(Model):
    """A residual CNN: ``forward(x)`` with ``x`` float32 ``[B, 2, 6, 7]`` (:func:`connect4.board_planes`) ->
    (policy logits float32 ``[B, 7]``, value float32 ``[B]`` in [-1, 1] for the player to move)."""

    def __init__(self, channels: int = 64, blocks: int = 2) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(2, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU())
        self.blocks = nn.ModuleList(
            nn.Sequential(
                nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels), nn.ReLU(),
                nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels),
            )
            for _ in range(blocks)
        )  # fmt: skip
        self.policy_head = nn.Sequential(nn.Conv2d(channels, 2, 1), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(),
                                         nn.Linear(2 * HEIGHT * WIDTH, WIDTH))  # fmt: skip
        self.value_head = nn.Sequential(nn.Conv2d(channels, 1, 1), nn.BatchNorm2d(1), nn.ReLU(), nn.Flatten(),
                                        nn.Linear(HEIGHT * WIDTH, 64), nn.ReLU(), nn.Linear(64, 1),
                                        nn.Tanh())  # fmt: skip

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if x.dim() != 4 or tuple(x.shape[1:]) != (2, HEIGHT, WIDTH):
            raise ValueError(f"x must be float32 [B, 2, 6, 7] (connect4.board_planes), got {list(x.shape)}")
        h = self.stem(x)
        for block in self.blocks:
            h = F.relu(h + block(h))
        return self.policy_head(h), self.value_head(h).squeeze(1)


def make_evaluator(model: PolicyValueNet):
    """The :data:`mcts.Evaluator` of ``model`` (eval mode, no gradient, on the model's device)."""
    device = next(model.parameters()).device

    def evaluate(boards: list[Board]) -> tuple[np.ndarray, np.ndarray]:
        with torch.inference_mode():
            logits, values = model(torch.from_numpy(board_planes(boards)).to(device))
            return torch.softmax(logits, 1).cpu().numpy(), values.cpu().numpy()

    model.eval()
    return evaluate


def outcome_of_move(board: Board, col: int) -> tuple[Board, float | None]:
    """The board after ``col`` and, when the game ended, its outcome for the player who played ``col``."""
    if board.is_winning_move(col):
        return board.play(col), 1.0
    nxt = board.play(col)
    return nxt, (0.0 if nxt.moves == CELLS else None)


def play_self_play(evaluate, games: int, cfg: dict, rng: np.random.Generator) -> dict:
    """``games`` self-play games in lock-step; returns their positions and targets.

    Returns:
        ``position``, ``mask`` uint64 ``[n]`` (the boards, :class:`connect4.Board`), ``pi`` float32 ``[n, 7]``
        (visit distributions), ``z`` float32 ``[n]`` (outcome for the player to move), ``plies`` int ``[games]``,
        ``first_player_score`` float ``[games]`` (+1 / 0 / -1).
    """
    boards, trees = [Board() for _ in range(games)], [{} for _ in range(games)]
    histories: list[list[tuple[Board, np.ndarray]]] = [[] for _ in range(games)]
    active = list(range(games))
    pos, mask, pis, zs, plies, first = [], [], [], [], [], []
    while active:
        counts = search([boards[g] for g in active], [trees[g] for g in active], evaluate, cfg["simulations"],
                        c_puct=cfg["c_puct"], dirichlet_alpha=cfg["dirichlet_alpha"],
                        noise_fraction=cfg["noise_fraction"], rng=rng)  # fmt: skip
        still = []
        for g, n in zip(active, counts, strict=True):
            board = boards[g]
            pi = n / n.sum()
            histories[g].append((board, pi))
            temperature = 1.0 if board.moves < cfg["temp_moves"] else 0.0
            col = int(rng.choice(WIDTH, p=visit_policy(n[None], temperature)[0]))
            boards[g], result = outcome_of_move(board, col)
            if result is None:
                still.append(g)
                continue
            mover = board.moves % 2
            for b, p in histories[g]:
                pos.append(b.position)
                mask.append(b.mask)
                pis.append(p)
                zs.append(result if b.moves % 2 == mover else -result)
            plies.append(boards[g].moves)
            first.append(result if mover == 0 else -result)
            trees[g] = {}
        active = still
    return dict(position=np.array(pos, np.uint64), mask=np.array(mask, np.uint64),
                pi=np.array(pis, np.float32), z=np.array(zs, np.float32), plies=np.array(plies),
                first_player_score=np.array(first))  # fmt: skip


def play_match(players: list, games: int, simulations: int, c_puct: float) -> np.ndarray:
    """``games`` games between ``players[0]`` and ``players[1]``; player 0 moves first in the even games.

    A player is an :data:`mcts.Evaluator` (searched with ``simulations`` PUCT simulations, most visited move) or
    an :class:`connect4.OpenSpielMCTS`.

    Returns:
        int ``[3]``: wins of player 0, draws, wins of player 1.

    Raises:
        RuntimeError: a player chose an illegal column.
    """
    boards, trees = [Board() for _ in range(games)], [[{}, {}] for _ in range(games)]
    spiel = [next((p.new_game() for p in players if isinstance(p, OpenSpielMCTS)), None) for _ in range(games)]
    active, result = list(range(games)), np.zeros(3, np.int64)
    while active:
        moves: dict[int, int] = {}
        for side in (0, 1):
            mine = [g for g in active if (boards[g].moves + g) % 2 == side]  # game g: side g % 2 moves first
            player = players[side]
            if not mine:
                continue
            if isinstance(player, OpenSpielMCTS):
                for g in mine:
                    moves[g] = player.step(spiel[g])
            else:
                counts = search([boards[g] for g in mine], [trees[g][side] for g in mine], player, simulations,
                                c_puct=c_puct)  # fmt: skip
                for g, n in zip(mine, counts, strict=True):
                    moves[g] = int(n.argmax())
        still = []
        for g in active:
            col, side = moves[g], (boards[g].moves + g) % 2
            if col not in boards[g].legal():
                raise RuntimeError(f"player {side} chose the illegal column {col} on\n{boards[g]}")
            if spiel[g] is not None:
                OpenSpielMCTS.apply(spiel[g], col)
            boards[g], outcome = outcome_of_move(boards[g], col)
            if outcome is None:
                still.append(g)
            elif outcome == 0:
                result[1] += 1
            else:
                result[0 if side == 0 else 2] += 1
        active = still
    return result


@parl.remote_class(wait=False)
class Actor:
    """Self-play, pitting and evaluation games with the weights it is sent (PARL's ``actor.py``)."""

    def __init__(self, net_cfg: dict, seed: int) -> None:
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.model = PolicyValueNet(**net_cfg)
        self.previous = PolicyValueNet(**net_cfg)

    def self_play(self, weights: dict, games: int, cfg: dict) -> dict:
        """Load ``weights``, play ``games`` self-play games (see :func:`play_self_play`); adds ``cpu_s``."""
        cpu = time.process_time()
        self.model.set_weights(weights)
        out = play_self_play(make_evaluator(self.model), games, cfg, self.rng)
        out["cpu_s"] = time.process_time() - cpu
        return out

    def pitting(self, previous_weights: dict, current_weights: dict, games: int, cfg: dict) -> dict:
        """PARL's pitting: ``games`` games previous vs current network. Returns ``result`` int ``[3]``
        (previous wins, draws, current wins) and ``cpu_s``."""
        cpu = time.process_time()
        self.previous.set_weights(previous_weights)
        self.model.set_weights(current_weights)
        players = [make_evaluator(self.previous), make_evaluator(self.model)]
        result = play_match(players, games, cfg["eval_simulations"], cfg["c_puct"])
        return dict(result=result, cpu_s=time.process_time() - cpu)

    def versus_mcts(self, weights: dict, games: int, offset: int, cfg: dict) -> dict:
        """``games`` games against OpenSpiel's MCTS bot; the network moves first in game ``g`` when
        ``g + offset`` is even. Returns ``result`` int ``[3]`` (network wins, draws, bot wins) and ``cpu_s``."""
        cpu = time.process_time()
        self.model.set_weights(weights)
        bot = OpenSpielMCTS(cfg["bot_simulations"], seed=int(self.rng.integers(2**31)))
        players = [make_evaluator(self.model), bot]
        if offset % 2:
            players = players[::-1]
        result = play_match(players, games, cfg["eval_simulations"], cfg["c_puct"])
        return dict(result=result if offset % 2 == 0 else result[::-1], cpu_s=time.process_time() - cpu)

    def perfect_moves(self, weights: dict, positions: list[dict], cfg: dict) -> dict:
        """Searches each test position (``{"moves", "scores"}``, solver.py); counts the most visited moves that are
        perfect / good, and the network's own most probable moves that are perfect."""
        cpu = time.process_time()
        self.model.set_weights(weights)
        evaluate = make_evaluator(self.model)
        boards = [Board.from_moves(p["moves"]) for p in positions]
        counts = search(boards, [{} for _ in boards], evaluate, cfg["eval_simulations"], c_puct=cfg["c_puct"])
        priors, _ = evaluate(boards)
        perfect = good = policy_perfect = 0
        for b, n, p, pos in zip(boards, counts, priors, positions, strict=True):
            best, ok = perfect_and_good(pos["scores"])
            perfect += int(n.argmax()) in best
            good += int(n.argmax()) in ok
            policy_perfect += int(np.where(b.legal_mask(), p, -1).argmax()) in best
        return dict(perfect=perfect, good=good, policy_perfect=policy_perfect, cpu_s=time.process_time() - cpu)


def split(total: int, parts: int) -> list[int]:
    """``total`` as ``parts`` near-equal non-negative ints."""
    return [len(a) for a in np.array_split(np.arange(total), parts)]


def augmented_batch(buffer: dict, idx: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Planes ``[B, 2, 6, 7]``, pi ``[B, 7]``, z ``[B]`` of rows ``idx``, each mirrored left-right with probability
    1/2 (Connect Four's symmetry)."""
    boards = [Board(int(p), int(m), 0) for p, m in zip(buffer["position"][idx], buffer["mask"][idx], strict=True)]
    x, pi = board_planes(boards), buffer["pi"][idx].copy()
    flip = rng.random(len(idx)) < 0.5
    x[flip] = x[flip][..., ::-1]
    pi[flip] = pi[flip][:, ::-1]
    return x, pi, buffer["z"][idx]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--actors", type=int, default=2, help="number of remote actors (PARL: actors_num)")
    parser.add_argument("--address", default=None, help="HOST:PORT of an xparl cluster (default: an embedded one)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="the learner's torch device (actors use the CPU)")
    parser.add_argument("--logdir", default=None, help="default: runs/alphazero/seed<seed>")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--time-limit-s", type=float, default=7200.0, help="stop after this wall time (then evaluate)")
    parser.add_argument("--games-per-iteration", type=int, default=64, help="self-play games (PARL: numEps)")
    parser.add_argument("--simulations", type=int, default=50, help="self-play PUCT simulations per move")
    parser.add_argument("--eval-simulations", type=int, default=200, help="simulations per move in evaluation")
    parser.add_argument("--c-puct", type=float, default=1.5)
    parser.add_argument("--dirichlet-alpha", type=float, default=1.0)
    parser.add_argument("--noise-fraction", type=float, default=0.25)
    parser.add_argument("--temp-moves", type=int, default=10, help="moves drawn from the visit counts, then greedy")
    parser.add_argument("--window", type=int, default=20, help="iterations of positions kept for training")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--sample-reuse", type=float, default=4.0,
                        help="Adam steps per iteration = sample_reuse * new positions / batch_size")  # fmt: skip
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--weight-decay", type=float, default=1e-4)
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--arena-games", type=int, default=0, help="PARL's pitting games per iteration (0: off)")
    parser.add_argument("--update-threshold", type=float, default=0.55)
    parser.add_argument("--eval-every", type=int, default=5, help="iterations between evaluations (0: none)")
    parser.add_argument("--eval-games", type=int, default=40, help="games vs OpenSpiel MCTS per evaluation")
    parser.add_argument("--final-eval-games", type=int, default=200, help="games vs OpenSpiel MCTS at the end")
    parser.add_argument("--bot-simulations", type=int, default=100, help="OpenSpiel MCTS simulations per move")
    parser.add_argument("--test-positions", type=int, default=300, help="perfect-play test positions used (0: none)")
    parser.add_argument("--target-win-rate", type=float, default=None,
                        help="stop once a periodic evaluation reaches this win rate vs the bot")  # fmt: skip
    parser.add_argument("--restore", default=None, help="a checkpoint.pt written by an earlier run (resumes)")
    parser.add_argument("--resume", default=None, metavar="DIR",
                        help="go on with the run whose --logdir is DIR: --restore DIR/checkpoint.pt, logging into DIR")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    for name in ("actors", "iterations", "games_per_iteration", "simulations", "eval_simulations", "window",
                 "batch_size", "channels", "bot_simulations"):  # fmt: skip
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for name in ("blocks", "arena_games", "eval_every", "eval_games", "final_eval_games", "test_positions"):
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    if args.resume is not None:
        if args.restore is not None:
            parser.error("--resume DIR and --restore FILE both given: --resume DIR is --restore DIR/checkpoint.pt "
                         "--logdir DIR; give one")
        args.restore, args.logdir = os.path.join(args.resume, "checkpoint.pt"), args.resume
        if not os.path.isfile(args.restore):
            parser.error(f"--resume {args.resume}: no checkpoint.pt there; pass the --logdir of an earlier run "
                         f"(it writes checkpoint.pt after every iteration)")
    if args.restore and not os.path.isfile(args.restore):
        parser.error(f"--restore {args.restore}: no such file; pass the checkpoint.pt of an earlier run")
    if args.eval_games or args.final_eval_games:
        try:
            require_open_spiel()
        except ImportError as err:
            parser.error(f"{err}; or pass --eval-games 0 --final-eval-games 0 to train without the OpenSpiel bot")
    test_set: list[dict] = []
    if args.test_positions:
        if not os.path.isfile(TEST_SET):
            parser.error(f"{TEST_SET} is missing: run python examples/alphazero/solver.py, or pass --test-positions 0")
        with open(TEST_SET) as f:
            test_set = json.load(f)["positions"][: args.test_positions]
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    logdir = args.logdir or os.path.join("runs", "alphazero", f"seed{args.seed}")
    os.makedirs(logdir, exist_ok=True)
    summary.set_logdir(logdir)
    device = torch.device(args.device)
    net_cfg = dict(channels=args.channels, blocks=args.blocks)
    model = PolicyValueNet(**net_cfg).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    cfg = dict(simulations=args.simulations, eval_simulations=args.eval_simulations, c_puct=args.c_puct,
               dirichlet_alpha=args.dirichlet_alpha, noise_fraction=args.noise_fraction, temp_moves=args.temp_moves,
               bot_simulations=args.bot_simulations)  # fmt: skip
    start_iter, curve_rows, wall_before, cpu_before, history, games_total = 0, [], 0.0, 0.0, [], 0
    if args.restore:
        try:  # tensors, numbers and strings only: nothing in the file is executed
            state = torch.load(args.restore, map_location=device, weights_only=True)
            if isinstance(state, dict) and state.get("net", net_cfg) != net_cfg:
                raise SystemExit(f"--restore {args.restore}: a network of {state['net']}, not {net_cfg} as asked; "
                                 f"give the run's --channels and --blocks")
            model.load_state_dict(state["model"])
        except SystemExit:
            raise
        except Exception as err:  # torch raises RuntimeError, EOFError, pickle errors, KeyError ... on a bad file
            raise SystemExit(f"--restore {args.restore}: not a readable checkpoint.pt of this example "
                             f"({type(err).__name__}); pass another run's checkpoint.pt, or start afresh "
                             f"without --restore") from None
        optimizer.load_state_dict(state["optimizer"])
        start_iter, curve_rows = state["iteration"], state["curve"]
        history = [{k: v.numpy() for k, v in h.items()} for h in state["history"]]
        wall_before, cpu_before, games_total = state["wall_s"], state["cpu_s"], state["games"]
        rng.bit_generator.state = state["rng"]
    start, cpu_start = time.perf_counter() - wall_before, time.process_time()

    if args.address is None:
        os.environ.setdefault("XPARL_PRELOAD", "torch,numpy,parl_core.torch")
        parl.connect(cpu_num=args.actors)
    else:
        parl.connect(args.address)
    actors = [Actor(net_cfg, args.seed * 1000 + 100 * start_iter + i) for i in range(args.actors)]
    actor_cpu = 0.0

    def on_actors(method: str, counts: list[int], *extra) -> list[dict]:
        nonlocal actor_cpu
        offsets = [int(o) for o in np.cumsum([0, *counts[:-1]])]  # versus_mcts: the first game's colour
        futures = [getattr(a, method)(*extra[:-1], n, *((off,) if method == "versus_mcts" else ()), extra[-1])
                   for a, n, off in zip(actors, counts, offsets, strict=True) if n > 0]  # fmt: skip
        out = [f.result() for f in futures]
        actor_cpu += sum(o["cpu_s"] for o in out)
        return out

    def evaluate(games: int) -> dict:
        weights = model.get_weights()
        row = {}
        if games:
            res = sum(o["result"] for o in on_actors("versus_mcts", split(games, args.actors), weights, cfg))
            row.update(eval_games=games, win_rate_vs_mcts=res[0] / games, draw_rate_vs_mcts=res[1] / games)
        if test_set:
            chunks = np.array_split(np.arange(len(test_set)), args.actors)
            futures = [a.perfect_moves(weights, [test_set[i] for i in c], cfg)
                       for a, c in zip(actors, chunks, strict=True) if len(c)]  # fmt: skip  (c: may be empty)
            out = [f.result() for f in futures]
            nonlocal actor_cpu
            actor_cpu += sum(o["cpu_s"] for o in out)
            n = len(test_set)
            row.update(perfect_move_rate=sum(o["perfect"] for o in out) / n,
                       good_move_rate=sum(o["good"] for o in out) / n,
                       policy_perfect_move_rate=sum(o["policy_perfect"] for o in out) / n)  # fmt: skip
        return row

    def cpu_s() -> float:
        return cpu_before + time.process_time() - cpu_start + actor_cpu

    bar = tqdm(total=args.iterations, initial=start_iter, disable=args.no_progress, unit="iter")
    iteration, last_eval, reached = start_iter, {}, False
    for iteration in range(start_iter + 1, args.iterations + 1):
        if time.perf_counter() - start > args.time_limit_s:
            iteration -= 1
            break
        weights = model.get_weights()
        t0 = time.perf_counter()
        parts = on_actors("self_play", split(args.games_per_iteration, args.actors), weights, cfg)
        self_play_s = time.perf_counter() - t0
        new = {k: np.concatenate([p[k] for p in parts]) for k in ("position", "mask", "pi", "z")}
        games_total += args.games_per_iteration
        history = [*history, new][-args.window:]
        buffer = {k: np.concatenate([h[k] for h in history]) for k in new}
        previous = {k: v.clone() for k, v in model.state_dict().items()} if args.arena_games else None
        model.train()
        steps = max(1, math.ceil(args.sample_reuse * len(new["z"]) / args.batch_size))
        losses = []
        for _ in range(steps):
            idx = rng.integers(0, len(buffer["z"]), min(args.batch_size, len(buffer["z"])))
            batch = augmented_batch(buffer, idx, rng)
            x, pi, z = (torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in batch)
            logits, v = model(x)
            loss_pi = -(pi * F.log_softmax(logits, 1)).sum(1).mean()
            loss_v = F.mse_loss(v, z)
            optimizer.zero_grad()
            (loss_pi + loss_v).backward()
            optimizer.step()
            losses.append((loss_pi.item(), loss_v.item()))
        loss_pi, loss_v = np.mean(losses, axis=0)
        accepted, pit_rate = 1, float("nan")
        if args.arena_games:
            res = sum(o["result"] for o in on_actors("pitting", split(args.arena_games, args.actors),
                                                     {k: v.cpu().numpy() for k, v in previous.items()},
                                                     model.get_weights(), cfg))  # fmt: skip
            decided = res[0] + res[2]
            pit_rate = res[2] / decided if decided else 0.0
            if decided == 0 or pit_rate < args.update_threshold:
                model.load_state_dict(previous)
                accepted = 0
        row = dict(iteration=iteration, games=games_total, wall_s=0.0, cpu_s=0.0, examples=len(buffer["z"]),
                   loss_pi=float(loss_pi), loss_v=float(loss_v), accepted=accepted, pit_win_rate=pit_rate,
                   eval_games=0, win_rate_vs_mcts=float("nan"), draw_rate_vs_mcts=float("nan"),
                   perfect_move_rate=float("nan"), good_move_rate=float("nan"),
                   policy_perfect_move_rate=float("nan"))  # fmt: skip
        evaluated = bool(args.eval_every) and iteration % args.eval_every == 0
        if evaluated:
            last_eval = evaluate(args.eval_games)
            row.update(last_eval)
            if args.target_win_rate is not None and last_eval.get("win_rate_vs_mcts", 0) >= args.target_win_rate:
                reached = True
        row["wall_s"], row["cpu_s"] = round(time.perf_counter() - start, 2), round(cpu_s(), 2)
        curve_rows.append([row[c] for c in CURVE_COLUMNS])
        plies = np.concatenate([p["plies"] for p in parts])
        first_score = np.concatenate([p["first_player_score"] for p in parts])
        scalars = {"train/loss_pi": loss_pi, "train/loss_v": loss_v, "self_play/games_per_s":
                   args.games_per_iteration / self_play_s, "self_play/mean_plies": plies.mean(),
                   "self_play/first_player_score": first_score.mean()}  # fmt: skip
        if evaluated:
            scalars.update({f"eval/{k}": v for k, v in last_eval.items()})
        for key, value in scalars.items():
            summary.add_scalar(key, float(value), iteration)
        bar.update(1)
        bar.set_postfix(games_s=f"{args.games_per_iteration / self_play_s:.1f}", loss=f"{loss_pi + loss_v:.3f}",
                        win=f"{last_eval.get('win_rate_vs_mcts', float('nan')):.2f}")  # fmt: skip
        with atomic_write(os.path.join(logdir, "checkpoint.pt")) as f:  # the previous one stays until this is whole
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": iteration,
                        "curve": [[v.item() if isinstance(v, np.generic) else v for v in row] for row in curve_rows],
                        "wall_s": time.perf_counter() - start, "cpu_s": cpu_s(),
                        "history": [{k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in h.items()}
                                    for h in history],
                        "games": games_total, "rng": rng.bit_generator.state, "net": net_cfg}, f)  # fmt: skip
        with open(os.path.join(logdir, "curve.csv"), "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(CURVE_COLUMNS)
            writer.writerows(curve_rows)
        if reached:
            break
    bar.close()
    train_wall, train_cpu = time.perf_counter() - start, cpu_s()
    final = evaluate(args.final_eval_games) if (args.final_eval_games or test_set) else {}
    result = {
        "algorithm": "AlphaZero", "game": "connect_four", "seed": args.seed, "actors": args.actors,
        "device": str(device), "iterations": iteration, "self_play_games": games_total,
        "train_wall_s": round(train_wall, 1), "train_cpu_s": round(train_cpu, 1),
        "total_wall_s": round(time.perf_counter() - start, 1), "total_cpu_s": round(cpu_s(), 1),
        "final_eval_games": args.final_eval_games, "opponent": f"OpenSpiel MCTSBot uct_c=2 random rollouts "
        f"{args.bot_simulations} simulations", "eval_simulations": args.eval_simulations,
        **{f"final_{k}": v for k, v in final.items()}, "test_positions": len(test_set),
        "loadavg_end": list(os.getloadavg()), "config": {k: v for k, v in vars(args).items()},
    }  # fmt: skip
    with open(os.path.join(logdir, "summary.json"), "w") as f:
        json.dump(result, f, indent=2)
    summary.flush()
    logger.info("summary: %s", json.dumps({k: v for k, v in result.items() if k != "config"}))


if __name__ == "__main__":
    main()
