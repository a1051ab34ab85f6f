"""Write a D4RL-format trajectory pickle (the file PARL's DecisionTransformer example reads) from an
online SAC run, with no dataset download.

PARL 2.2.1's ``benchmark/torch/DT/train.py`` loads ``data/<env>-<dataset>-v2.pkl``: a ``list`` of
trajectories, each a ``dict`` of ``numpy`` arrays over its ``T`` steps (D4RL's keys, as its
``data/download_d4rl_datasets.py`` writes them):

- ``observations``: float32 ``[T, obs_dim]``; ``next_observations``: float32 ``[T, obs_dim]``
- ``actions``: float32 ``[T, act_dim]`` in ``[-1, 1]``; ``rewards``: float32 ``[T]``
- ``terminals``: bool ``[T]``, ``True`` only on a step that ended the episode by termination (a
  time-limit end is not a terminal, as in D4RL).

The data are the whole episodes of ``examples/dt/train.py``'s collector (an online SAC run of
``--steps`` env steps, the first ``--learning-starts`` uniform-random), so they mix random and partly
trained behaviour, like D4RL's ``medium-replay``. Test-only tooling; not shipped::

    python tests/parl2/make_d4rl_trajectories.py --env Hopper-v4 --steps 15000 --out data/hopper-medium-v2.pkl
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import pickle

import gymnasium as gym
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _collector():
    spec = importlib.util.spec_from_file_location("examples_dt_train", ROOT / "examples" / "dt" / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.collect


def to_d4rl(episodes: list[dict[str, np.ndarray]], max_episode_steps: int | None) -> list[dict[str, np.ndarray]]:
    """D4RL trajectories from ``{"obs", "act", "rew"}`` episodes.

    Args:
        episodes: each ``obs`` float32 ``[T, obs_dim]``, ``act`` float32 ``[T, act_dim]``, ``rew`` float32 ``[T]``.
        max_episode_steps: the env's time limit: an episode shorter than it ended by termination.

    Returns:
        The trajectories under D4RL's keys (see the module docstring). The collector does not keep the
        observation after an episode's last step, so the last ``next_observations`` row repeats the last
        observation (PARL's DecisionTransformer reads no ``next_observations``).

    Raises:
        ValueError: an episode is empty or its arrays disagree on ``T``.
    """
    paths = []
    for i, ep in enumerate(episodes):
        length = len(ep["rew"])
        if length == 0 or len(ep["obs"]) != length or len(ep["act"]) != length:
            raise ValueError(f"episode {i}: obs/act/rew must have one equal, non-zero length, got "
                             f"{len(ep['obs'])}/{len(ep['act'])}/{length}")
        terminals = np.zeros(length, dtype=bool)
        terminals[-1] = max_episode_steps is None or length < max_episode_steps
        paths.append({"observations": ep["obs"].astype(np.float32),
                      "next_observations": np.concatenate([ep["obs"][1:], ep["obs"][-1:]]).astype(np.float32),
                      "actions": ep["act"].astype(np.float32), "rewards": ep["rew"].astype(np.float32),
                      "terminals": terminals})
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="Hopper-v4")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=15_000, help="env steps of the SAC run")
    parser.add_argument("--learning-starts", type=int, default=2_000)
    parser.add_argument("--out", required=True, help="the .pkl to write, e.g. data/hopper-medium-v2.pkl")
    args = parser.parse_args()
    episodes = _collector()(args.env, args.seed, args.steps, args.learning_starts)
    paths = to_d4rl(episodes, gym.spec(args.env).max_episode_steps)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as f:
        pickle.dump(paths, f)
    returns = np.array([p["rewards"].sum() for p in paths])
    print(f"{len(paths)} trajectories, {sum(len(p['rewards']) for p in paths)} steps, return mean "
          f"{returns.mean():.1f}, max {returns.max():.1f}, last 10 mean {returns[-10:].mean():.1f} -> {out}")


if __name__ == "__main__":
    main()
