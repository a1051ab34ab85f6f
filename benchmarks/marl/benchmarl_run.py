"""BenchMARL's MAPPO on mpe2 simple_spread (N=3, local_ratio=0, 25 steps, discrete actions), logged like our examples.

Run with BenchMARL's own venv (``pip install torch==2.13.0`` first, then ``pip install -c <torch==2.13.0>
benchmarl pettingzoo mpe2``). BenchMARL 1.5.2 builds its PettingZoo tasks through TorchRL's ``PettingZooEnv``,
which looks scenarios up in ``pettingzoo.utils.all_modules.all_environments``; current PettingZoo no longer
ships MPE there (it moved to ``mpe2``) and that module does not even import here (its Atari entries need
``multi_agent_ale_py``), so this script puts a stand-in module holding mpe2's scenarios in its place at run time
(nothing of BenchMARL or TorchRL is edited or copied). Everything else is BenchMARL's YAML defaults for MAPPO
(``conf/algorithm/mappo.yaml``, ``conf/experiment/base_experiment.yaml``: shared policy and critic, lr 5e-5,
6,000 frames per batch from 10 envs, 45 minibatch iterations of 400, ...), with these changes: discrete
actions (``prefer_continuous_actions=False``, as the task convention), CPU devices, no loggers or rendering,
``--eval-episodes`` greedy evaluation episodes every ``--eval-every`` frames (rounded to whole batches) and at
the first batch, ``torch.set_num_threads(1)``.

A frame is one joint env step (BenchMARL counts a vectorised batch's steps over all its envs), the budget's unit
in this benchmark. The return written is the per-agent episode return (the mean over the 3 agents; with
local_ratio=0 every agent gets the same global reward, so it equals the sum over agents / 3).

Writes ``<logdir>/curve.csv`` (``env_steps,wall_s,eval_return_mean,eval_return_sum_agents``) and
``<logdir>/summary.json`` as our examples do.
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import json
import os
import time

import torch
from benchmarl.experiment import Callback


def _add_mpe2_to_pettingzoo() -> None:
    """TorchRL imports ``pettingzoo.utils.all_modules``, which here fails (its Atari entries need
    ``multi_agent_ale_py``; its MPE ones are gone): a stand-in module holding mpe2's scenarios takes its place."""
    import sys
    import types

    from mpe2.all_modules import mpe_environments

    stand_in = types.ModuleType("pettingzoo.utils.all_modules")
    stand_in.all_environments = dict(mpe_environments)
    sys.modules["pettingzoo.utils.all_modules"] = stand_in


class EvalLog(Callback):
    """Records each evaluation: frames so far, wall seconds since ``start``, the per-agent return's mean."""

    def __init__(self, start: float):
        super().__init__()
        self.start = start
        self.rows: list[dict] = []

    def on_evaluation_end(self, rollouts):
        # rollouts: one TensorDict per episode; ("next", "agent", "reward"): float32 [T, n_agents, 1]
        returns = torch.stack([r.get(("next", "agent", "reward")).sum(0).squeeze(-1) for r in rollouts])
        self.rows.append({"env_steps": self.experiment.total_frames, "wall_s": time.time() - self.start,
                          "eval_return_mean": float(returns.mean()),
                          "eval_return_sum_agents": float(returns.sum(-1).mean()),
                          "eval_return_std": float(returns.mean(-1).std())})
        print(json.dumps(self.rows[-1]), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algorithm", default="mappo", choices=["mappo"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--total-steps", type=int, default=1_000_000, help="frames (joint env steps)")
    parser.add_argument("--eval-every", type=int, default=50_000)
    parser.add_argument("--eval-episodes", type=int, default=100)
    parser.add_argument("--logdir", required=True)
    args = parser.parse_args()

    from benchmarl.algorithms import MappoConfig
    from benchmarl.environments import PettingZooTask
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models.mlp import MlpConfig

    torch.set_num_threads(1)
    _add_mpe2_to_pettingzoo()
    os.makedirs(args.logdir, exist_ok=True)

    config = ExperimentConfig.get_from_yaml()
    batch = config.on_policy_collected_frames_per_batch
    budget = max(batch, args.total_steps // batch * batch)
    config.max_n_frames = budget
    config.evaluation_interval = max(batch, round(args.eval_every / batch) * batch)
    config.evaluation_episodes = args.eval_episodes
    config.prefer_continuous_actions = False
    config.sampling_device = config.train_device = config.buffer_device = "cpu"
    config.loggers = []
    config.create_json = True
    config.render = False
    config.save_folder = args.logdir
    config.checkpoint_at_end = False

    task = PettingZooTask.SIMPLE_SPREAD.get_from_yaml()
    task.config.update({"task": "simple_spread_v3", "N": 3, "local_ratio": 0.0, "max_cycles": 25})

    log = EvalLog(time.time())
    experiment = Experiment(task=task, algorithm_config=MappoConfig.get_from_yaml(),
                            model_config=MlpConfig.get_from_yaml(), critic_model_config=MlpConfig.get_from_yaml(),
                            seed=args.seed, config=config, callbacks=[log])
    experiment.run()
    wall = time.time() - log.start
    rows = log.rows
    with open(os.path.join(args.logdir, "curve.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    summary = {
        "eval_return_mean": rows[-1]["eval_return_mean"], "eval_return_std": rows[-1]["eval_return_std"],
        "eval_episodes": args.eval_episodes, "env_steps": experiment.total_frames, "wall_s": wall,
        "total_steps": args.total_steps, "seed": args.seed,
        "reward_unit": "per-agent episode return (mean over the 3 agents; local_ratio=0: the global reward)",
        "env_id": "mpe2:simple_spread_v3 N=3 local_ratio=0 max_cycles=25 discrete",
        "env_version": f"mpe2 {importlib.metadata.version('mpe2')}",
        "peer": f"benchmarl {importlib.metadata.version('benchmarl')} mappo, torchrl "
                f"{importlib.metadata.version('torchrl')}",
        "frames_per_batch": batch, "evaluation_interval": config.evaluation_interval,
    }
    with open(os.path.join(args.logdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
