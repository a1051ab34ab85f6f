"""RLlib's IMPALA (new API stack) on Pong for a fixed wall-clock, on the machine our IMPALA Pong curve ran on.

Row R6 of the Atari learning-curve issue ("Atari on two CPU cores: PARL's published learning curves
reproduced"): where our ``examples/impala/train.py --env PongNoFrameskip-v4 --actors 2 --envpool`` run stood after
its wall-clock, where does RLlib 2.60's IMPALA stand after the same wall-clock on the same machine? Run it through
``benchmarks/atari/run_curve.py`` as ours is (the record of load and CPU seconds), in the venv of
``benchmarks/requirements-distributed.txt`` (RLlib pins its own gymnasium)::

    python benchmarks/atari/run_curve.py --out benchmarks/atari/results/rllib-impala-pong/seed0/run.json -- \\
        python benchmarks/atari/rllib_impala_pong.py --minutes 80 --seed 0 \\
        --logdir benchmarks/atari/results/rllib-impala-pong/seed0

with ``--minutes`` our run's wall-clock. benchmarks/README.md ("RLlib's IMPALA on Pong, same machine, same
wall-clock") describes the row; the results come from that long run.

What runs: RLlib's tuned Pong example (``rllib/tuned_examples/impala/pong_impala.py`` of Ray's repository, the
version with connector frame stacking, which is how RLlib trains Pong with IMPALA), unchanged except for its scale:

- env: ``ALE/Pong-v5`` made with the example's ``env_config`` (``frameskip=1``, ``repeat_action_probability=0``,
  ``full_action_space=False``, "analogous to old v4 + NoFrameskip", as it says). In ale-py 0.12 these are exactly
  ``PongNoFrameskip-v4``'s registration kwargs (the same ROM, no sticky actions, the 6 minimal actions, a 108,000
  frame cap), so this is the game ours plays; ``--env PongNoFrameskip-v4`` runs the same thing under the old name.
  v5 is the default because it is what RLlib's example passes.
- preprocessing: RLlib's ``wrap_atari_for_new_api_stack`` (108,000-frame time limit, grayscale, resize to ``dim``,
  scale to [-1, 1], max-and-skip 4, up to 30 no-op resets, episodic life, fire on reset), 64x64 frames,
  4 frames stacked by the ``FrameStackingEnvToModule`` / ``FrameStackingLearner`` connectors, rewards clipped
  (``clip_rewards=True``). ``--tiny-cnn`` is the example's ``--use-tiny-cnn``: 42x42 frames and
  ``TinyAtariCNN`` (the old API stack's 3-conv net, close to PARL's).
- model: the example's ``model_config`` (``conv_filters`` 16/32/64/128, 4x4 stride 2, relu, ``vf_share_layers``);
  its ``post_fcnet_hiddens: [256]`` key is passed as the example does, but the new API stack's catalog reads
  ``head_fcnet_hiddens`` instead, so in RLlib 2.60 the heads sit directly on the conv features (``summary.json``
  records the built module's parameter count).
- training: ``train_batch_size_per_learner=500``, ``lr=0.0009``, ``grad_clip=30`` (global norm),
  ``vf_loss_coeff=1.0``, ``entropy_coeff`` 0.02 -> 0 linearly over 3M env steps, 5 envs per env runner,
  RLlib's IMPALA defaults otherwise (rollout fragments of 50 steps, V-trace, ``broadcast_interval=1``).
- scale: ``--env-runners 2`` env runner processes (ours: 2 actor processes of 5 games each), ``num_learners=0``
  (the learner in the driver, on CPU, in IMPALA's learner thread), ``ray.init(num_cpus=env_runners + 1)``.
- one setting for two cores: ``timeout_s_sampler_manager=0.1`` (``--sampler-wait-s``; RLlib's default is 0). With
  0, a training step that finds no finished sample returns at once and ``Algorithm.train`` calls the next one: the
  driver polls the env runners ~1,500 times a second, a whole core of this machine, beside the learner thread.
  0.1 lets it block in ``ray.wait`` until a sample is there (or 0.1 s), which changes nothing in what is learned
  (the learner thread trains meanwhile). Measured in 5-minute smoke runs beside another training run (load ~5):
  with RLlib's default the driver took 165 CPU s and the two env runners 102 (start-up included), 4,000 env steps
  were sampled and no game finished; with 0.1 the driver took 86 CPU s, the env runners 189, 28,070 env steps
  were sampled (30 games; ~170 env steps/s once running). ``--sampler-wait-s 0`` runs RLlib's default.

Start-up is long: Ray's cluster, two env runner processes and the env runner state server (a third process)
import RLlib and torch; in two smoke runs (load 4-5) the algorithm was built at 81 / 111 s, the first game
ended at 140 / 170 s.
That time counts, as our run's start-up counts in its curve.

Stops after ``--minutes`` of wall-clock counted from this process's start (start-up included, as ours: Ray's
start, the env runners' start and the first batches count), or at SIGTERM / SIGINT (``run_curve.py`` passes them
on): the iteration in progress ends (RLlib's IMPALA iterations last >= 10 s), then the files are written.

Writes ``--logdir``:

- ``curve.csv``: ``env_steps,wall_s,episode_return``, one row per finished **whole game**, as ours. Each env
  runner's game record is taken on the raw ALE env under all of RLlib's wrappers: the return is the sum of the
  unclipped Pong rewards from a reset to the ALE's game over (a game cut by the time limit is counted in
  ``summary.json`` but not written). RLlib's episodic-life wrapper never ends a Pong episode early (Pong's ALE
  reports no lives), so RLlib's own episodes are these games too; ``summary.json`` has RLlib's
  ``episode_return_mean`` to compare. ``wall_s`` is from this process's start; ``env_steps`` counts agent steps
  (steps of the frameskip-4 env, as RLlib's ``num_env_steps_sampled_lifetime`` counts them; frames / 4) of all env
  runners, sampled by the driver after each training iteration and interpolated in time to the game's end.
- ``games/runner<k>.csv``: the raw records of env runner ``k`` the curve is made from (epoch time, game return,
  the game's agent steps, raw frames, whether the ALE cut it); ``last_result.json``: the numbers of RLlib's result
  dict of the last training iteration (its timers, throughputs and counters).
- ``summary.json``: ``env_steps``, ``env_steps_trained``, ``wall_s``, ``eval_return_mean`` (the mean of the last
  100 games, as ours reports it) and ``return_mean_at_deadline`` (the last 100 games finished by ``--minutes``),
  ``games``, the start-up times, RLlib / torch / gymnasium / ale-py versions, and every setting above.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np
import psutil

T0 = psutil.Process().create_time()  # this process's start (epoch s): every wall_s counts from here
LAST_GAMES = 100
GAMES_DIR = "games"
GAME_FIELDS = ("time", "episode_return", "agent_steps", "frames", "cut")

# RLlib's tuned example (rllib/tuned_examples/impala/pong_impala.py): env_config, training and model settings
ENV_CONFIG = {"frameskip": 1, "full_action_space": False, "repeat_action_probability": 0.0}
TRAINING = {"train_batch_size_per_learner": 500, "grad_clip": 30.0, "grad_clip_by": "global_norm", "lr": 0.0009,
            "vf_loss_coeff": 1.0, "entropy_coeff": [[0, 0.02], [3_000_000, 0.0]]}
MODEL_CONFIG = {"vf_share_layers": True, "conv_filters": [[16, 4, 2], [32, 4, 2], [64, 4, 2], [128, 4, 2]],
                "conv_activation": "relu", "post_fcnet_hiddens": [256]}
FRAME_STACK = 4


def make_env(env_config: dict, env_id: str, dim: int, games_dir: str):
    """One env runner's Pong: RLlib's Atari wrappers around a raw ALE env whose whole games are logged to
    ``games_dir/runner<k>.csv`` (``k``: the env runner's index, from RLlib's ``EnvContext``). Runs in the env
    runner's process; its envs append to one file, a line per ``os.write``."""
    path = os.path.join(games_dir, f"runner{getattr(env_config, 'worker_index', os.getpid())}.csv")
    import ale_py
    import gymnasium as gym
    from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

    class GameLog(gym.Wrapper):
        """Directly on the ALE env (raw frames, raw rewards): one line per whole game, appended with one write."""

        def __init__(self, env):
            super().__init__(env)
            self.ret, self.frames, self.agent_steps = 0.0, 0, 0
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)

        def reset(self, **kwargs):
            self.ret, self.frames, self.agent_steps = 0.0, 0, 0
            return self.env.reset(**kwargs)

        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            self.ret += float(reward)
            self.frames += 1
            if terminated or truncated:
                line = f"{time.time():.3f},{self.ret:g},{self.agent_steps},{self.frames},{int(not terminated)}\n"
                os.write(self.fd, line.encode())
            return obs, reward, terminated, truncated, info

    class AgentSteps(gym.Wrapper):
        """Outermost: counts the agent's steps (of the frameskip-4 env) into the game's log."""

        def __init__(self, env, log: GameLog):
            super().__init__(env)
            self.log = log

        def step(self, action):
            self.log.agent_steps += 1
            return self.env.step(action)

    gym.register_envs(ale_py)
    log = GameLog(gym.make(env_id, **env_config, render_mode="rgb_array"))
    return AgentSteps(wrap_atari_for_new_api_stack(log, dim=dim, framestack=None), log)


def read_games(logdir: Path) -> list[dict]:
    """Every finished game the env runners logged so far, in time order (a line still being written is skipped)."""
    games = []
    for path in sorted((logdir / GAMES_DIR).glob("*.csv")):
        text = path.read_text()
        for line in text.splitlines(keepends=True):
            parts = line.strip().split(",")
            if not line.endswith("\n") or len(parts) != len(GAME_FIELDS):
                continue
            t, ret, steps, frames, cut = parts
            games.append({"time": float(t), "episode_return": float(ret), "agent_steps": int(steps),
                          "frames": int(frames), "cut": cut == "1", "runner": path.stem})
    return sorted(games, key=lambda g: g["time"])


def write_curve(logdir: Path, games: list[dict], timeline: list[tuple[float, int]]) -> list[list]:
    """``curve.csv`` (written whole, then renamed): whole games only, env steps interpolated in time from the
    driver's ``(epoch time, env steps sampled)`` readings."""
    times = np.array([t for t, _ in timeline] or [T0])
    steps = np.array([s for _, s in timeline] or [0])
    rows = [[int(round(float(np.interp(g["time"], times, steps)))), round(g["time"] - T0, 3), g["episode_return"]]
            for g in games if not g["cut"]]
    tmp = logdir / "curve.csv.tmp"
    with open(tmp, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["env_steps", "wall_s", "episode_return"])
        writer.writerows(rows)
    os.replace(tmp, logdir / "curve.csv")
    return rows


def find(result: dict, key: str, section: str):
    """The value of ``key`` in RLlib's nested result dict, searched breadth-first from ``result[section]``, then
    from the top; None if absent."""
    stack = [result.get(section, {}), result]
    while stack:
        node = stack.pop(0)
        if isinstance(node, dict):
            if node.get(key) is not None and not isinstance(node[key], dict):
                return node[key]
            stack.extend(v for v in node.values() if isinstance(v, dict))
    return None


def build_config(args: argparse.Namespace, games_dir: str):
    """RLlib's tuned Pong IMPALA config at this machine's scale, and the frame size."""
    from ray.rllib.algorithms.impala import IMPALAConfig
    from ray.rllib.connectors.env_to_module.frame_stacking import FrameStackingEnvToModule
    from ray.rllib.connectors.learner.frame_stacking import FrameStackingLearner
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.tune.registry import register_env

    dim = 42 if args.tiny_cnn else 64
    env_id = args.env
    register_env("rllib_pong", lambda cfg: make_env(cfg, env_id, dim, games_dir))
    if args.tiny_cnn:
        from ray.rllib.examples.rl_modules.classes.tiny_atari_cnn_rlm import TinyAtariCNN
        module = {"rl_module_spec": RLModuleSpec(module_class=TinyAtariCNN), "model_config": {}}
    else:
        module = {"model_config": dict(MODEL_CONFIG)}
    config = (IMPALAConfig()
              .environment("rllib_pong", env_config=dict(ENV_CONFIG), clip_rewards=True)
              .env_runners(num_env_runners=args.env_runners, num_envs_per_env_runner=args.envs_per_env_runner,
                           env_to_module_connector=lambda env, spaces, device: FrameStackingEnvToModule(
                               num_frames=FRAME_STACK))
              .learners(num_learners=0,
                        learner_connector=lambda obs_space, act_space: FrameStackingLearner(num_frames=FRAME_STACK))
              .training(**TRAINING, timeout_s_sampler_manager=args.sampler_wait_s)
              .rl_module(**module)
              .debugging(seed=args.seed))
    return config, dim


def scalars(result: dict, prefix: str = "") -> dict:
    """RLlib's nested result dict flattened to ``{"a/b/c": number}`` (its numbers only)."""
    out = {}
    for key, value in result.items():
        if isinstance(value, dict):
            out.update(scalars(value, f"{prefix}{key}/"))
        elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            out[f"{prefix}{key}"] = float(value)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, required=True, help="wall-clock from this process's start")
    parser.add_argument("--logdir", default=None, help="default: runs/rllib_impala/<env>-seed<seed>")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--env", default="ALE/Pong-v5", help="ALE/Pong-v5 (RLlib's example) or PongNoFrameskip-v4")
    parser.add_argument("--env-runners", type=int, default=2, help="env runner processes (ours: --actors 2)")
    parser.add_argument("--envs-per-env-runner", type=int, default=5, help="RLlib's example: 5 (ours: 5 per actor)")
    parser.add_argument("--tiny-cnn", action="store_true",
                        help="the example's --use-tiny-cnn: 42x42 frames and TinyAtariCNN (default: 64x64, conv net)")
    parser.add_argument("--sampler-wait-s", type=float, default=0.1,
                        help="IMPALA's timeout_s_sampler_manager: how long a training step waits for env runner "
                             "results (RLlib's default: 0, the driver polls in a loop that takes a core; see above)")
    parser.add_argument("--report-s", type=float, default=60.0, help="seconds between progress lines / curve writes")
    parser.add_argument("--ray-logs", action="store_true", help="show the env runners' logs")
    args = parser.parse_args()
    if args.minutes <= 0:
        parser.error(f"--minutes must be > 0, got {args.minutes}")
    deadline = T0 + 60.0 * args.minutes
    logdir = Path(args.logdir or os.path.join("runs", "rllib_impala", f"{args.env.replace('/', '_')}-seed{args.seed}"))
    (logdir / GAMES_DIR).mkdir(parents=True, exist_ok=True)
    for old in (logdir / GAMES_DIR).glob("*.csv"):  # a new run: a former run's games are not this one's
        old.unlink()

    stop = {"signal": None}

    def on_signal(signum, _frame):  # the iteration in progress ends, then the files are written
        stop["signal"] = signal.Signals(signum).name

    def install_handlers():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, on_signal)

    install_handlers()
    import gymnasium as gym
    import ray
    import torch

    config, dim = build_config(args, str((logdir / GAMES_DIR).resolve()))

    timeline: list[tuple[float, int]] = []  # (epoch time, env steps sampled) after each training iteration
    status = {"env_steps": 0, "env_steps_trained": 0, "iterations": 0, "rllib_episode_return_mean": None,
              "rllib_episodes": None, "build_s": None, "first_iteration_s": None, "error": None}
    algo = None
    try:
        ray.init(num_cpus=args.env_runners + 1, include_dashboard=False, log_to_driver=args.ray_logs)
        install_handlers()  # ray.init installs a SIGTERM handler of its own (exit at once): ours stops cleanly
        algo = config.build_algo()
        install_handlers()
        status["build_s"] = round(time.time() - T0, 1)
        try:
            status["model_params"] = sum(p.numel() for p in algo.get_module().parameters())
        except Exception:  # noqa: BLE001 - informative only
            status["model_params"] = None
        print(f"rllib_impala_pong: built in {status['build_s']} s, {status['model_params']} parameters",
              flush=True)
        timeline.append((time.time(), 0))
        last_report = time.time()
        while stop["signal"] is None and time.time() < deadline:
            result = algo.train()
            now = time.time()
            status["iterations"] += 1
            if status["first_iteration_s"] is None:
                status["first_iteration_s"] = round(now - T0, 1)
            status["env_steps"] = int(find(result, "num_env_steps_sampled_lifetime", "env_runners") or 0)
            status["env_steps_trained"] = int(find(result, "num_env_steps_trained_lifetime", "learners") or 0)
            env_results = result.get("env_runners", {})
            if env_results.get("episode_return_mean") is not None:
                status["rllib_episode_return_mean"] = float(env_results["episode_return_mean"])
            if env_results.get("num_episodes_lifetime") is not None:
                status["rllib_episodes"] = int(env_results["num_episodes_lifetime"])
            timeline.append((now, status["env_steps"]))
            with open(logdir / "last_result.json", "w") as f:  # RLlib's own numbers of the latest iteration
                json.dump(scalars(result), f, indent=1)
            if now - last_report >= args.report_s:
                last_report = now
                rows = write_curve(logdir, read_games(logdir), timeline)
                recent = [r[2] for r in rows[-LAST_GAMES:]]
                print(json.dumps({"wall_s": round(now - T0, 1), "env_steps": status["env_steps"],
                                  "env_steps_trained": status["env_steps_trained"], "games": len(rows),
                                  "return_mean_last100": round(float(np.mean(recent)), 2) if recent else None,
                                  "rllib_episode_return_mean": status["rllib_episode_return_mean"]}), flush=True)
    except (Exception, SystemExit, KeyboardInterrupt) as err:  # still write what the run did
        status["error"] = f"{type(err).__name__}: {err}"
        print(f"rllib_impala_pong: stopped by {status['error']}", file=sys.stderr, flush=True)
    wall_s = time.time() - T0
    games = read_games(logdir)
    rows = write_curve(logdir, games, timeline)
    returns = [r[2] for r in rows]
    by_deadline = [r[2] for r in rows if r[1] <= 60.0 * args.minutes]
    summary = {
        "framework": "rllib", "algorithm": "IMPALA", "env": args.env, "seed": args.seed, "minutes": args.minutes,
        "env_steps": status["env_steps"], "env_steps_trained": status["env_steps_trained"],
        "wall_s": round(wall_s, 3), "env_steps_per_s": round(status["env_steps"] / wall_s, 1),
        "eval_return_mean": float(np.mean(returns[-LAST_GAMES:])) if returns else float("nan"),
        "eval_episodes": len(returns[-LAST_GAMES:]), "eval_source": "train_episodes (whole games)",
        "return_mean_at_deadline": float(np.mean(by_deadline[-LAST_GAMES:])) if by_deadline else float("nan"),
        "games": len(returns), "games_cut": sum(g["cut"] for g in games),
        "game_agent_steps_mean": round(float(np.mean([g["agent_steps"] for g in games])), 1) if games else None,
        "first_game_wall_s": rows[0][1] if rows else None,
        "rllib_episode_return_mean": status["rllib_episode_return_mean"], "rllib_episodes": status["rllib_episodes"],
        "build_s": status["build_s"], "first_iteration_s": status["first_iteration_s"],
        "iterations": status["iterations"], "model_params": status.get("model_params"),
        "stopped_by": stop["signal"] or ("error" if status["error"] else "minutes"), "error": status["error"],
        "versions": {"ray": ray.__version__, "torch": torch.__version__, "gymnasium": gym.__version__,
                     "ale_py": __import__("ale_py").__version__, "python": sys.version.split()[0]},
        "settings": {"env_config": ENV_CONFIG, "dim": dim, "frame_stack": FRAME_STACK, "clip_rewards": True,
                     "model": "TinyAtariCNN" if args.tiny_cnn else MODEL_CONFIG, **TRAINING,
                     "num_env_runners": args.env_runners, "num_envs_per_env_runner": args.envs_per_env_runner,
                     "num_learners": 0, "timeout_s_sampler_manager": args.sampler_wait_s,
                     "ray_num_cpus": args.env_runners + 1,
                     "driver_torch_threads": torch.get_num_threads(),
                     "source": "rllib/tuned_examples/impala/pong_impala.py (connector frame stacking version)"},
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }
    with open(logdir / "summary.json", "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps({k: summary[k] for k in ("env_steps", "wall_s", "env_steps_per_s", "games", "eval_return_mean",
                                              "rllib_episode_return_mean", "build_s", "stopped_by")}), flush=True)
    for sig in (signal.SIGTERM, signal.SIGINT):  # a second signal now ends the process at once
        signal.signal(sig, signal.SIG_DFL)
    if algo is not None:
        algo.stop()
    ray.shutdown()
    return 1 if status["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
