"""Update-rule check against Stable-Baselines3: our TD3 / SAC and SB3's, started from the same weights and fed
the same replay batches and the same random draws, must end with the same weights.

This isolates the algorithm from everything else a learning-curve comparison mixes in (the random streams of
exploration, sampling and initialisation, which make two libraries' curves differ seed by seed). For each
algorithm it builds SB3's model with the HalfCheetah-v5 settings of ``bench_halfcheetah.py``, copies its
actor, critics and target critics into the example's ``parl.Model`` (``examples/<algo>/train.py``), then
runs ``--steps`` gradient steps on random batches ``(obs [256, 17], action [256, 6] in [-1, 1], reward,
next_obs, done=0)`` in both, with ``torch.manual_seed`` set before each step (SAC: our two reparameterised
draws are given SB3's noise in SB3's order). It prints the largest absolute weight difference per network
and fails when one exceeds ``--tolerance`` times the learning rate (an Adam step moves a weight by about
the learning rate, so float rounding shows up orders of magnitude below it).

Needs ``pip install -c constraints.txt -r benchmarks/requirements.txt``.

Usage::

    python benchmarks/algorithms/equivalence_sb3.py            # td3 and sac, 20 steps each
    python benchmarks/algorithms/equivalence_sb3.py sac --steps 50
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
OBS_DIM, ACT_DIM, BATCH = 17, 6, 256  # HalfCheetah-v5


def load_example(algo: str):
    """The module ``examples/<algo>/train.py`` (for its Model class)."""
    spec = importlib.util.spec_from_file_location(f"example_{algo}", ROOT / "examples" / algo / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def linears(seq: torch.nn.Module) -> list[torch.nn.Linear]:
    return [m for m in seq.modules() if isinstance(m, torch.nn.Linear)]


class Stacked:
    """Two linear layers as one (our actor's last layer is SAC's ``[mu; log_std]`` heads stacked)."""

    def __init__(self, a: torch.nn.Linear, b: torch.nn.Linear) -> None:
        self.weight = torch.cat([a.weight.detach(), b.weight.detach()])
        self.bias = torch.cat([a.bias.detach(), b.bias.detach()])


class Member:
    """Member ``i`` of a ``nets.BatchedMLP`` (our SAC's twin critics) as an MLP: ``layers`` with ``weight`` /
    ``bias`` in ``nn.Linear``'s layout, views of the stacked parameters (copying into them writes the member)."""

    def __init__(self, net: torch.nn.Module, i: int) -> None:
        self.layers = [SimpleNamespace(weight=layer.weight.detach()[i].T, bias=layer.bias.detach()[i, 0])
                       for layer in net.layers]


def copy_into(mlp: torch.nn.Module, layers: list) -> None:
    with torch.no_grad():
        for ours, theirs in zip(mlp.layers, layers, strict=True):
            ours.weight.copy_(theirs.weight)
            ours.bias.copy_(theirs.bias)


def max_diff(mlp: torch.nn.Module, layers: list) -> float:
    return max(float((o.weight.detach() - t.weight.detach()).abs().max()) for o, t in zip(mlp.layers, layers,
                                                                                             strict=True))


def batches(steps: int, seed: int = 0) -> list[tuple[torch.Tensor, ...]]:
    rng = np.random.default_rng(seed)
    normal = lambda *shape: torch.as_tensor(rng.normal(size=shape), dtype=torch.float32)  # noqa: E731
    return [(normal(BATCH, OBS_DIM), torch.as_tensor(rng.uniform(-0.99, 0.99, (BATCH, ACT_DIM)), dtype=torch.float32),
             normal(BATCH, OBS_DIM), torch.zeros(BATCH, 1), normal(BATCH, 1)) for _ in range(steps)]


def feed(model, data: list) -> None:
    """Makes SB3's replay buffer return ``data`` in order."""
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.type_aliases import ReplayBufferSamples

    it = iter(data)
    model.replay_buffer.sample = lambda *a, **k: ReplayBufferSamples(*next(it))
    model.set_logger(configure(None, []))


def check_td3(steps: int) -> tuple[dict, float]:
    from stable_baselines3 import TD3

    import parl

    sb3 = TD3("MlpPolicy", gym.make("HalfCheetah-v5"), learning_rate=1e-3, buffer_size=1000, learning_starts=0,
              batch_size=BATCH, tau=0.005, gamma=0.99, policy_delay=2, target_policy_noise=0.2, target_noise_clip=0.5,
              policy_kwargs=dict(net_arch=[400, 300]), seed=0, device="cpu")
    model = load_example("td3").define_model("torch")(OBS_DIM, ACT_DIM, (400, 300))  # TD3Model
    pairs = {"actor": (model.actor, sb3.actor.mu), "q1": (Member(model.q, 0), sb3.critic.qf0),
             "q2": (Member(model.q, 1), sb3.critic.qf1)}  # views: they follow the training
    for ours, theirs in pairs.values():
        copy_into(ours, linears(theirs))
    alg = parl.algorithms.TD3(model, gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3, policy_noise=0.2,
                              noise_clip=0.5, policy_freq=2)  # its target model is a copy of the copied weights
    data = batches(steps)
    feed(sb3, data)
    for i, (obs, act, nxt, done, rew) in enumerate(data):
        torch.manual_seed(100 + i)
        sb3.train(gradient_steps=1, batch_size=BATCH)
        torch.manual_seed(100 + i)  # the same target-smoothing noise
        alg.learn(obs, act, rew[:, 0], nxt, done[:, 0])
    diffs = {name: max_diff(ours, linears(theirs)) for name, (ours, theirs) in pairs.items()}
    diffs["target actor"] = max_diff(alg.target_model.actor, linears(sb3.actor_target.mu))
    diffs["target q1"] = max_diff(Member(alg.target_model.q, 0), linears(sb3.critic_target.qf0))
    return diffs, 1e-3


def check_sac(steps: int) -> tuple[dict, float]:
    from stable_baselines3 import SAC

    import parl

    sb3 = SAC("MlpPolicy", gym.make("HalfCheetah-v5"), learning_rate=3e-4, buffer_size=1000, learning_starts=0,
              batch_size=BATCH, tau=0.005, gamma=0.99, ent_coef="auto", policy_kwargs=dict(net_arch=[256, 256]),
              seed=0, device="cpu")
    model = load_example("sac").define_model("torch")(OBS_DIM, ACT_DIM, (256, 256))  # SACModel

    def actor_layers() -> list:
        return linears(sb3.actor.latent_pi) + [Stacked(sb3.actor.mu, sb3.actor.log_std)]

    copy_into(model.actor, actor_layers())
    copy_into(Member(model.q, 0), linears(sb3.critic.qf0))
    copy_into(Member(model.q, 1), linears(sb3.critic.qf1))
    alg = parl.algorithms.SAC(model, gamma=0.99, tau=0.005, actor_lr=3e-4, critic_lr=3e-4,
                              with_automatic_entropy_tuning=True)  # alpha starts at 1.0, target entropy -6
    data = batches(steps)
    feed(sb3, data)
    real_randn_like = torch.randn_like
    for i, (obs, act, nxt, done, rew) in enumerate(data):
        torch.manual_seed(100 + i)
        sb3.train(gradient_steps=1, batch_size=BATCH)
        torch.manual_seed(100 + i)
        eps_obs, eps_next = torch.empty(BATCH, ACT_DIM).normal_(), torch.empty(BATCH, ACT_DIM).normal_()  # SB3's order
        queue = [eps_next, eps_obs]  # ours samples for the critic target first, then for the actor step
        torch.randn_like = lambda _, queue=queue: queue.pop(0)
        try:
            alg.learn(obs, act, rew[:, 0], nxt, done[:, 0])
        finally:
            torch.randn_like = real_randn_like
        if queue:
            raise RuntimeError("SAC.learn drew fewer Gaussian samples than SB3's step: the check is misaligned")
    diffs = {"actor": max_diff(model.actor, actor_layers()),
             "q1": max_diff(Member(model.q, 0), linears(sb3.critic.qf0)),
             "q2": max_diff(Member(model.q, 1), linears(sb3.critic.qf1)),
             "target q1": max_diff(Member(alg.target_model.q, 0), linears(sb3.critic_target.qf0)),
             "alpha": abs(alg.alpha - float(torch.exp(sb3.log_ent_coef.detach())))}
    return diffs, 3e-4


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("algos", nargs="*", help="td3 and / or sac (default: both)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--tolerance", type=float, default=0.2, help="allowed difference, in learning rates")
    args = parser.parse_args()
    unknown = [a for a in args.algos if a not in ("td3", "sac")]
    if unknown:
        parser.error(f"unknown algorithm(s) {unknown}; choose td3 and / or sac")
    torch.set_num_threads(1)
    failed = False
    for algo in args.algos or ["td3", "sac"]:
        diffs, lr = {"td3": check_td3, "sac": check_sac}[algo](args.steps)
        worst = max(diffs.values())
        ok = worst <= args.tolerance * lr
        failed |= not ok
        shown = ", ".join(f"{k} {v:.1e}" for k, v in diffs.items())
        print(f"{algo}: {args.steps} steps, max |weight difference| per network: {shown}; learning rate {lr:g} -> "
              f"{'same update' if ok else 'DIFFERENT'} (largest = {worst / lr:.3f} learning rates)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
