"""DQN, Double DQN and Dueling DQN on Atari (``parl.env.atari_wrappers``) and MinAtar, PARL's examples/DQN_variant.

Algorithm box (Mnih et al. 2015, "Human-level control through deep reinforcement learning"; van Hasselt et al.
2016, "Deep Reinforcement Learning with Double Q-learning" for ``--algo ddqn``; Wang et al. 2016, "Dueling Network
Architectures for Deep Reinforcement Learning" for ``--dueling``):

    fill the replay memory with `warmup_size` steps of the uniformly random policy (epsilon = 1)
    for each env step:
        act epsilon-greedily; epsilon decays linearly from 1 to 0.1 over the first tenth of the steps (PARL)
        store the newest frame, the action, the clipped reward and `terminated` (a time-limit truncation
            is not terminal) in a FrameReplayMemory (each frame once; stacks are rebuilt when sampled)
        every `update_freq` (4) steps: one DQN.learn / DDQN.learn on 32 transitions (MSE loss, Adam, as PARL);
            the target network is synced every `target_update` (2500) learn calls; the learning rate decays
            linearly from 3e-4 to 1e-5 over `total_steps / 10` learn calls (PARL's AtariAgent)
        every `eval_every` steps: evaluate whole games (unclipped rewards, no episodic life), write a row of
            curve.csv, summary.json and a checkpoint

Atari: 84x84 grey frames, 4 stacked, frame skip 4, episodic life, FIRE reset, clipped rewards
(``wrap_deepmind``), the Nature network (3 convolutions, a 512-unit layer; the dueling version splits it into a
value and an advantage stream of 512 units each). PARL's own DQN_variant model is a 4-convolution net with
max-pooling; this example follows the paper's network instead. Evaluation: epsilon 0.05 (the Nature paper's; a
purely greedy Breakout agent that never presses FIRE after a lost life would stall the game), at most 27,000
agent steps (30 minutes of play) a game.

MinAtar (Young & Tian 2019): observations 10x10xC in {0, 1}, no stacking, the MinAtar paper's network (one
3x3 convolution of 16 channels, a 128-unit layer), greedy evaluation (epsilon 0); the other settings as for Atari,
scaled down (memory 100k, warm-up 5k, target sync every 1000 learn calls, no learning-rate decay).

Replay memory: PARL keeps 1M transitions. Stored as stacked 4x84x84 uint8 observations, twice (obs and next_obs),
that is 56 GB; stored as single frames (FrameReplayMemory) it is 7 GB of uint8 (84 * 84 bytes a step), which fits
a 24 GB machine. ``np.zeros`` pages are allocated as they are written, so a short run uses less.

Usage::

    python examples/dqn_variants/train.py --env PongNoFrameskip-v4 --algo dqn --dueling
    python examples/dqn_variants/train.py --env BreakoutNoFrameskip-v4 --algo ddqn --dueling --seed 1
    python examples/dqn_variants/train.py --env MinAtar/Breakout-v1 --dueling --total-steps 300000
    python examples/dqn_variants/train.py --env MinAtar/Breakout-v1 --eval-random     # the random policy's return
    python examples/dqn_variants/train.py --env MinAtar/Breakout-v1 --restore runs/x/model.ckpt --total-steps 0
    # killed, pre-empted or stopped with Ctrl-C: continue where the last checkpoint left off
    python examples/dqn_variants/train.py --env MinAtar/Breakout-v1 --logdir runs/x --resume runs/x

Writes ``<logdir>/summary.json`` (eval_return_mean, env_steps, wall_s, cpu_s, ...), ``<logdir>/curve.csv`` (one
row per evaluation: env_steps, wall_s, cpu_s, eval_return_mean, eval_return_std, train_return_mean, epsilon, lr),
``<logdir>/model.ckpt`` (``parl.Agent.save``: weights and optimizer state; ``--restore`` starts from it with a
fresh replay memory), ``<logdir>/checkpoint.npz`` (everything ``--resume`` continues from: network, optimizer,
replay memory, schedules, counters, RNGs, the env; every ``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and
at the end; on MinAtar the resumed run is bit-exact, on Atari the emulator starts a new game: docs/long_runs.md)
and tensorboard scalars. ``--max-wall-s`` stops a run early and still evaluates and saves.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import time

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import parl
from parl.env import is_minatar, make_minatar
from parl.env.atari_wrappers import MonitorEnv, wrap_deepmind
from parl.utils import Checkpointer, RunLog, add_run_args

# PARL's examples/DQN_variant/train.py and atari_agent.py; MinAtar: the same rules at a smaller scale
CONFIGS = {
    "atari": dict(memory_size=1_000_000, warmup_size=50_000, update_freq=4, batch_size=32, gamma=0.99,
                  lr=3e-4, lr_end=1e-5, epsilon_end=0.1, target_update=2500, total_steps=10_000_000,
                  eval_every=100_000, eval_episodes=3, eval_epsilon=0.05, stack=4),
    "minatar": dict(memory_size=100_000, warmup_size=5_000, update_freq=4, batch_size=32, gamma=0.99,
                    lr=3e-4, lr_end=3e-4, epsilon_end=0.1, target_update=1000, total_steps=1_000_000,
                    eval_every=25_000, eval_episodes=20, eval_epsilon=0.0, stack=1),
}
ATARI_EVAL_MAX_STEPS = 27_000  # agent steps (108,000 frames: 30 minutes of play at 60 Hz)
CURVE_FIELDS = ("env_steps", "wall_s", "cpu_s", "eval_return_mean", "eval_return_std", "train_return_mean",
                "epsilon", "lr")


def is_atari(env_id: str) -> bool:
    """True for an ale-py id (``PongNoFrameskip-v4``, ``ALE/Pong-v5``)."""
    return "NoFrameskip" in env_id or env_id.startswith("ALE/")


class FrameReplayMemory:
    """A replay memory that stores each frame once and rebuilds the stacks of ``stack`` frames when sampling.

    Frames are written in the order the env produces them: an episode's reset frame
    (:meth:`start_episode`), then each step's new frame with the step's action, reward and terminal flag
    (:meth:`append`). A transition ends at frame ``k``: its ``obs`` is the stack ending at ``k - 1``, its
    ``next_obs`` the stack ending at ``k``. Frames before an episode's first frame are replaced by the first
    frame, as ``gymnasium.wrappers.FrameStackObservation`` (``wrap_deepmind``'s stacking) pads them, so a
    sampled stack equals the observation the agent saw.

    Args:
        max_size: capacity in frames (about the number of transitions kept).
        frame_shape: shape of one frame, e.g. ``(84, 84)`` (Atari) or ``(4, 10, 10)`` (MinAtar, ``stack=1``).
        stack: frames per observation (4 for Atari, 1 for an unstacked observation).
        seed: seed of the sampling generator.

    Raises:
        ValueError: ``max_size <= stack`` or ``stack < 1``.
    """

    def __init__(self, max_size: int, frame_shape: tuple[int, ...], stack: int = 4, *, seed: int | None = None):
        if stack < 1 or max_size <= stack:
            raise ValueError(f"FrameReplayMemory needs stack >= 1 and max_size > stack, got max_size={max_size}, "
                             f"stack={stack}")
        self.max_size, self.stack = int(max_size), int(stack)
        self.frames = np.zeros((self.max_size, *frame_shape), dtype=np.uint8)  # pages allocated when written
        self.action = np.zeros(self.max_size, dtype=np.int64)
        self.reward = np.zeros(self.max_size, dtype=np.float32)
        self.terminal = np.zeros(self.max_size, dtype=np.float32)
        self.episode_start = np.zeros(self.max_size, dtype=np.int64)  # absolute index of the frame's episode start
        self.count = 0  # frames written so far (absolute index of the next frame)
        self._start = -1
        self.rng = np.random.default_rng(seed)

    def _write(self, frame: np.ndarray) -> int:
        slot = self.count % self.max_size
        self.frames[slot] = frame
        self.episode_start[slot] = self._start
        self.count += 1
        return slot

    def start_episode(self, frame: np.ndarray) -> None:
        """Store the first frame of an episode (uint8 ``frame_shape``)."""
        self._start = self.count
        self._write(frame)

    def append(self, action: int, reward: float, terminal: bool, next_frame: np.ndarray) -> None:
        """Store one step: its action, reward, ``terminated`` flag and the frame it produced.

        Raises:
            RuntimeError: no episode was started (call :meth:`start_episode` after each reset).
        """
        if self._start < 0:
            raise RuntimeError("FrameReplayMemory.append before start_episode: store the reset frame first")
        slot = self._write(next_frame)
        self.action[slot], self.reward[slot], self.terminal[slot] = action, reward, terminal

    def size(self) -> int:
        """Frames held (at most ``max_size``)."""
        return min(self.count, self.max_size)

    def state_dict(self) -> dict:
        """The stored frames and steps (the ``size()`` slots written), counters and the sampling generator."""
        n = self.size()
        return {"frames": self.frames[:n].copy(), "action": self.action[:n].copy(), "reward": self.reward[:n].copy(),
                "terminal": self.terminal[:n].copy(), "episode_start": self.episode_start[:n].copy(),
                "count": self.count, "start": self._start, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        """Continue from a :meth:`state_dict`.

        Raises:
            ValueError: the frames do not fit this memory (another env or a smaller ``max_size``).
        """
        n = len(state["frames"])
        if n > self.max_size or state["frames"].shape[1:] != self.frames.shape[1:]:
            raise ValueError(f"FrameReplayMemory: the state holds {n} frames of shape {state['frames'].shape[1:]}, "
                             f"this memory {self.max_size} of shape {self.frames.shape[1:]}; use the same settings")
        for key in ("frames", "action", "reward", "terminal", "episode_start"):
            getattr(self, key)[:n] = state[key]
        self.count, self._start = int(state["count"]), int(state["start"])
        self.rng.bit_generator.state = state["rng"]

    def _stacks(self, ends: np.ndarray, starts: np.ndarray) -> np.ndarray:
        idx = np.maximum(ends[:, None] + np.arange(1 - self.stack, 1)[None, :], starts[:, None])
        out = self.frames[idx % self.max_size]  # [B, stack, *frame_shape]
        return out if self.stack > 1 else out[:, 0]

    def sample_batch(self, batch_size: int) -> tuple[np.ndarray, ...]:
        """A uniform minibatch of transitions.

        Returns:
            ``(obs, action, reward, next_obs, terminal)``: uint8 ``[B, stack, *frame_shape]`` (``[B,
            *frame_shape]`` if ``stack == 1``), int64 ``[B]``, float32 ``[B]``, uint8 like ``obs``, float32 ``[B]``.

        Raises:
            ValueError: fewer than ``stack + 1`` frames stored.
        """
        low = max(1, self.count - self.max_size + self.stack)  # the stack before frame k must not be overwritten
        if self.count - low < 1:
            raise ValueError(f"FrameReplayMemory.sample_batch: only {self.count} frames stored; fill it first")
        ends = self.rng.integers(low, self.count, size=batch_size)
        while True:  # an episode's first frame ends no transition: draw those again
            first = self.episode_start[ends % self.max_size] == ends
            if not first.any():
                break
            ends[first] = self.rng.integers(low, self.count, size=int(first.sum()))
        return self.sample_batch_by_index(ends)

    def sample_batch_by_index(self, ends: np.ndarray) -> tuple[np.ndarray, ...]:
        """The transitions that end at the absolute frame indices ``ends`` (int [B]; frame ``k`` is the
        ``k``-th frame stored, counting from 0), in the layout of :meth:`sample_batch`.

        Raises:
            ValueError: an index is an episode's first frame (no transition ends there), not stored yet, or
                overwritten (its stack is gone).
        """
        ends = np.asarray(ends, dtype=np.int64)
        slots = ends % self.max_size
        starts = self.episode_start[slots]
        low = max(1, self.count - self.max_size + self.stack)
        if ((ends < low) | (ends >= self.count) | (starts == ends)).any():
            raise ValueError(f"FrameReplayMemory.sample_batch_by_index: indices must lie in [{low}, {self.count}) "
                             "and not be the first frame of an episode")
        return (self._stacks(ends - 1, starts), self.action[slots], self.reward[slots], self._stacks(ends, starts),
                self.terminal[slots])


@functools.cache
def define_networks(backend: str = "torch") -> tuple[type, type]:
    """``(NatureQNetwork, MinAtarQNetwork)`` on ``backend`` (``"torch"`` or ``"paddle"``): ``parl_core.<backend>.Model``
    subclasses, so both can be built in one process (``main`` selects the backend of ``parl.algorithms``)."""
    nn = importlib.import_module(f"{backend}.nn")
    model_base = importlib.import_module(f"parl_core.{backend}").Model
    conv = nn.Conv2d if backend == "torch" else nn.Conv2D

    class QHead(model_base):
        """features float32 [B, in_dim] -> Q float32 [B, num_actions]; dueling (Wang et al. 2016):
        Q = V(s) + A(s, a) - mean_a A(s, a), each stream with its own hidden layer."""

        def __init__(self, in_dim: int, hidden: int, num_actions: int, dueling: bool):
            super().__init__()
            self.dueling = dueling
            self.q = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, num_actions))
            if dueling:
                self.v = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, 1))

        def forward(self, h):
            if not self.dueling:
                return self.q(h)
            adv = self.q(h)  # the advantage stream
            return self.v(h) + adv - adv.mean(-1, keepdim=True)

    class NatureQNetwork(model_base):
        """The Nature DQN network (Mnih et al. 2015): obs uint8/float32 [B, 4, 84, 84] in 0..255 ->
        Q float32 [B, num_actions]."""

        def __init__(self, num_actions: int, dueling: bool = False, in_channels: int = 4):
            super().__init__()
            self.torso = nn.Sequential(conv(in_channels, 32, 8, stride=4), nn.ReLU(), conv(32, 64, 4, stride=2),
                                       nn.ReLU(), conv(64, 64, 3, stride=1), nn.ReLU(), nn.Flatten())
            self.head = QHead(64 * 7 * 7, 512, num_actions, dueling)

        def forward(self, obs):
            return self.head(self.torso(obs.astype("float32") / 255.0 if backend == "paddle" else obs.float() / 255.0))

    class MinAtarQNetwork(model_base):
        """The MinAtar paper's network (Young & Tian 2019): obs float32 [B, C, 10, 10] in {0, 1} ->
        Q float32 [B, num_actions]."""

        def __init__(self, in_channels: int, num_actions: int, dueling: bool = False):
            super().__init__()
            self.torso = nn.Sequential(conv(in_channels, 16, 3, stride=1), nn.ReLU(), nn.Flatten())
            self.head = QHead(16 * 8 * 8, 128, num_actions, dueling)

        def forward(self, obs):
            return self.head(self.torso(obs.astype("float32") if backend == "paddle" else obs.float()))

    return NatureQNetwork, MinAtarQNetwork


def make_env(env_id: str, test: bool = False) -> gym.Env:
    """An Atari env (``wrap_deepmind``, 4 stacked frames uint8 [4, 84, 84]; ``test``: whole games, unclipped
    rewards, at most 27,000 steps) or a MinAtar env (uint8 [C, 10, 10]), each with a MonitorEnv inside that
    records whole-game returns.

    Raises:
        SystemExit: ale-py / opencv / minatar is missing (names the package to install).
    """
    if is_atari(env_id):
        try:
            import ale_py
        except ImportError:
            raise SystemExit(f"{env_id} needs ale-py and OpenCV: pip install 'parl-core[atari]'") from None
        gym.register_envs(ale_py)
        env = wrap_deepmind(gym.make(env_id), dim=84, obs_format="NCHW", test=test)
        return gym.wrappers.TimeLimit(env, ATARI_EVAL_MAX_STEPS) if test else env
    try:
        env = make_minatar(env_id, flatten=False)
    except ImportError as exc:
        raise SystemExit(str(exc)) from None
    channels = env.observation_space.shape[-1]
    space = gym.spaces.Box(0, 1, shape=(channels, 10, 10), dtype=np.uint8)
    env = gym.wrappers.TransformObservation(env, lambda o: np.moveaxis(o, -1, 0).astype(np.uint8), space)
    return MonitorEnv(env)


def set_lr(optimizer, lr: float) -> None:
    """Set the learning rate of a torch or paddle optimizer."""
    if hasattr(optimizer, "set_lr"):
        optimizer.set_lr(lr)
    else:
        for group in optimizer.param_groups:
            group["lr"] = lr


def evaluate(policy, env: gym.Env, episodes: int, epsilon: float, rng: np.random.Generator, seed: int) -> np.ndarray:
    """Returns of ``episodes`` whole games (unclipped), acting with ``policy(obs) -> action`` and a uniformly
    random action with probability ``epsilon``; float64 [episodes]."""
    returns = []
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        total, done = 0.0, False
        while not done:
            action = int(rng.integers(env.action_space.n)) if rng.random() < epsilon else policy(obs)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
        obs, _ = env.reset()
    return np.asarray(returns)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="PongNoFrameskip-v4",
                        help="an Atari id (PongNoFrameskip-v4, BreakoutNoFrameskip-v4) or a MinAtar id "
                             "(MinAtar/Breakout-v1)")
    parser.add_argument("--algo", choices=("dqn", "ddqn"), default="dqn", help="DQN or Double DQN")
    parser.add_argument("--dueling", action="store_true", help="the dueling architecture (Wang et al. 2016)")
    parser.add_argument("--backend", choices=("torch", "paddle"), default="torch", help="deep-learning framework")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None,
                        help="device of the learner: cpu, cuda, cuda:1  [default: cuda when available]")
    parser.add_argument("--logdir", default=None, help="default: runs/dqn_variants/<env>-<algo>-seed<seed>")
    parser.add_argument("--total-steps", type=int, default=None,
                        help="env steps (agent steps: 4 frames each on Atari); the epsilon and lr schedules are "
                             "tenths of it  [default: Atari 10M (PARL), MinAtar 1M]")
    parser.add_argument("--memory-size", type=int, default=None,
                        help="replay memory capacity in frames  [default: Atari 1M (7 GB of uint8), MinAtar 100k]")
    parser.add_argument("--warmup-size", type=int, default=None,
                        help="random-policy steps before learning  [default: Atari 50k (PARL), MinAtar 5k]")
    parser.add_argument("--eval-every", type=int, default=None, help="env steps between evaluations")
    parser.add_argument("--eval-episodes", type=int, default=None, help="games per evaluation")
    parser.add_argument("--max-wall-s", type=float, default=None,
                        help="stop training after this many seconds (then evaluate, save, write the summary)")
    parser.add_argument("--restore", default=None, help="a model.ckpt written by an earlier run to start from")
    parser.add_argument("--eval-random", action="store_true",
                        help="only evaluate the uniformly random policy (same evaluation as the agent's)")
    parser.add_argument("--no-progress", action="store_true")
    add_run_args(parser)
    args = parser.parse_args(argv)
    if not (is_atari(args.env) or is_minatar(args.env)):
        parser.error(f"--env {args.env!r}: pass an Atari id such as PongNoFrameskip-v4 or BreakoutNoFrameskip-v4, "
                     "or a MinAtar id such as MinAtar/Breakout-v1")
    cfg = dict(CONFIGS["atari" if is_atari(args.env) else "minatar"])
    for name in ("total_steps", "memory_size", "warmup_size", "eval_every", "eval_episodes"):
        value = getattr(args, name)
        if value is not None:
            low = 0 if name == "total_steps" else 1
            if value < low:
                parser.error(f"--{name.replace('_', '-')} must be >= {low}, got {value}")
            cfg[name] = value
    if cfg["memory_size"] <= cfg["stack"] + cfg["batch_size"]:
        need = cfg["stack"] + cfg["batch_size"] + 1
        parser.error(f"--memory-size {cfg['memory_size']} is too small: pass at least {need}")
    if cfg["warmup_size"] > cfg["memory_size"]:
        parser.error(f"--warmup-size {cfg['warmup_size']} exceeds --memory-size {cfg['memory_size']}: lower it")
    if args.restore and not os.path.isfile(args.restore):
        parser.error(f"--restore {args.restore}: no such file; pass the model.ckpt of an earlier run")
    if args.max_wall_s is not None and args.max_wall_s <= 0:
        parser.error(f"--max-wall-s must be > 0, got {args.max_wall_s}")
    args.cfg = cfg
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    cfg = args.cfg
    name = f"{args.algo}{'-dueling' if args.dueling else ''}"
    logdir = args.resume or args.logdir or os.path.join(
        "runs", "dqn_variants", f"{args.env.replace('/', '_')}-{name}-seed{args.seed}")
    os.makedirs(logdir, exist_ok=True)
    ops = importlib.import_module(f"parl_algorithms.{args.backend}.ops")  # numpy <-> tensors, no-grad, seeding
    ops.seed(args.seed)  # also one CPU thread for torch
    rng = np.random.default_rng(args.seed)
    eval_rng = np.random.default_rng(args.seed + 1)
    start, cpu_start = time.perf_counter(), time.process_time()  # (--eval-random; a training run times with RunLog)

    env, test_env = make_env(args.env), make_env(args.env, test=True)
    num_actions = int(env.action_space.n)
    if args.eval_random:
        returns = evaluate(lambda obs: int(eval_rng.integers(num_actions)), test_env, cfg["eval_episodes"], 0.0,
                           eval_rng, args.seed + 10_000)
        result = {"env": args.env, "policy": "random", "seed": args.seed, "eval_return_mean": float(returns.mean()),
                  "eval_return_std": float(returns.std()), "eval_episodes": len(returns),
                  "wall_s": round(time.perf_counter() - start, 3)}
        with open(os.path.join(logdir, "summary.json"), "w") as f:
            json.dump(result, f, indent=2)
        print(json.dumps(result))
        return result

    run = RunLog(logdir)
    parl.set_backend(args.backend)  # before the first use of parl.algorithms / parl.Agent
    nature_net, minatar_net = define_networks(args.backend)
    if is_atari(args.env):
        model = nature_net(num_actions, dueling=args.dueling)
    else:
        model = minatar_net(env.observation_space.shape[0], num_actions, dueling=args.dueling)
    algo_cls = parl.algorithms.DDQN if args.algo == "ddqn" else parl.algorithms.DQN
    alg = algo_cls(model, gamma=cfg["gamma"], lr=cfg["lr"], device=args.device)  # MSE loss, Adam: PARL's
    agent = parl.Agent(alg)
    if args.restore:
        agent.restore(args.restore)
        alg.sync_target()
    stack = cfg["stack"]
    frame_shape = env.observation_space.shape[1:] if stack > 1 else env.observation_space.shape
    memory = FrameReplayMemory(cfg["memory_size"], frame_shape, stack, seed=args.seed)

    def greedy(obs: np.ndarray) -> int:
        with ops.no_grad():
            q = ops.to_numpy(alg.predict(ops.tensor(obs[None])))[0]
        return int(rng.choice(np.flatnonzero(q == q.max())))  # ties broken at random, as PARL's AtariAgent

    total = cfg["total_steps"]
    epsilon_steps = max(1, total // 10)  # PARL: LinearDecayScheduler(1, total // 10), one step per action
    lr_steps = max(1, total // 10)  # PARL: LinearDecayScheduler(lr, total // 10), one step per learn call
    # the train env's MonitorEnv sees whole games (all lives) and unclipped rewards
    train_monitor = next(w for w in _wrappers(env) if isinstance(w, MonitorEnv))

    def evaluate_and_log(step: int, final: bool = False) -> dict:
        returns = evaluate(greedy, test_env, cfg["eval_episodes"], cfg["eval_epsilon"], eval_rng,
                           args.seed + 10_000 + step)
        wall, cpu = run.elapsed(), time.process_time() - cpu_start
        row = {"env_steps": step, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
               "eval_return_mean": float(returns.mean()), "eval_return_std": float(returns.std()),
               "train_return_mean": float(np.mean(c.recent)) if c.recent else float("nan"),
               "epsilon": round(c.epsilon, 4), "lr": c.lr}
        run.row({k: row[k] for k in CURVE_FIELDS})
        run.scalar("eval/return_mean", row["eval_return_mean"], step)
        agent.save(os.path.join(logdir, "model.ckpt"))
        out = run.write_summary({
            "env": args.env, "algorithm": algo_cls.__name__, "dueling": args.dueling, "backend": args.backend,
            "device": str(alg.device), "seed": args.seed, "env_steps": step, "learn_steps": c.learn_steps,
            "eval_return_mean": row["eval_return_mean"], "eval_return_std": row["eval_return_std"],
            "eval_episodes": cfg["eval_episodes"], "eval_epsilon": cfg["eval_epsilon"],
            "train_return_mean": row["train_return_mean"], "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "finished": final, "config": {k: v for k, v in cfg.items()}})
        run.flush()
        return out

    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args),
                        ignore=("cfg",))
    # (Atari's emulator state is not saved: a resumed Atari run starts a new game, see below)
    ckpt.register(alg=alg, memory=memory, rng=rng, eval_rng=eval_rng, **({} if is_atari(args.env) else {"env": env}))
    obs, _ = env.reset(seed=args.seed)
    env.action_space.seed(args.seed)
    memory.start_episode(obs[-1] if stack > 1 else obs)
    c = ckpt.track(obs=obs, step=0, learn_steps=0, epsilon=1.0, lr=cfg["lr"], loss=float("nan"), recent=[],
                   seen_games=0, result={})
    if ckpt.start() and is_atari(args.env):
        c.obs, _ = env.reset()
        memory.start_episode(c.obs[-1])
        c.seen_games = 0
    bar = tqdm(total=total, initial=c.step - c.step % 1000, disable=args.no_progress, unit="step")
    while c.step < total:
        c.step += 1
        step = c.step
        c.epsilon = max(cfg["epsilon_end"], 1.0 - (1.0 - cfg["epsilon_end"]) * step / epsilon_steps)
        if memory.count < cfg["warmup_size"] or rng.random() < c.epsilon:
            action = int(rng.integers(num_actions))
        else:
            action = greedy(c.obs)
        c.obs, reward, terminated, truncated, _ = env.step(action)
        memory.append(action, float(reward), terminated, c.obs[-1] if stack > 1 else c.obs)
        if terminated or truncated:
            c.obs, _ = env.reset()
            memory.start_episode(c.obs[-1] if stack > 1 else c.obs)
            games = train_monitor.get_episode_rewards()
            for game_return in games[c.seen_games:]:  # whole games (all lives), unclipped
                c.recent = (c.recent + [game_return])[-20:]
                run.scalar("train/episode_return", game_return, step)
            c.seen_games = len(games)

        if memory.count >= cfg["warmup_size"] and step % cfg["update_freq"] == 0:
            if c.learn_steps % cfg["target_update"] == 0:
                alg.sync_target()
            batch = memory.sample_batch(cfg["batch_size"])
            c.loss = alg.learn(*(ops.tensor(a) for a in batch))
            c.learn_steps += 1
            c.lr = max(cfg["lr_end"], cfg["lr"] - (cfg["lr"] - cfg["lr_end"]) * c.learn_steps / lr_steps)
            set_lr(alg.optimizer, c.lr)
            if c.learn_steps % 250 == 0:
                run.scalar("train/loss", c.loss, step)
                run.scalar("train/epsilon", c.epsilon, step)
                run.scalar("train/lr", c.lr, step)
        if step % 1000 == 0:
            bar.update(1000)
            bar.set_postfix(train=f"{np.mean(c.recent) if c.recent else 0:.1f}",
                            eval=f"{c.result.get('eval_return_mean', float('nan')):.1f}", eps=f"{c.epsilon:.2f}")
            if args.max_wall_s is not None and run.elapsed() > args.max_wall_s:
                break
        if step % cfg["eval_every"] == 0 and step < total:
            c.result = evaluate_and_log(step)
        ckpt.maybe_save(step)
    bar.close()
    result = evaluate_and_log(c.step, final=True)
    ckpt.finish(c.step)
    env.close()
    test_env.close()
    print(json.dumps({k: v for k, v in result.items() if k != "config"}))
    return result


def _wrappers(env: gym.Env):
    """``env`` and every env it wraps, outermost first."""
    while True:
        yield env
        if not hasattr(env, "env"):
            return
        env = env.env


if __name__ == "__main__":
    main()
