"""PARL's winning NeurIPS 2018 AI-for-Prosthetics solution: multi-head (ensemble) DDPG, remote simulators, curriculum.

Algorithm (PaddlePaddle/PARL examples/NeurIPS2018-AI-for-Prosthetics-Challenge; DDPG: Lillicrap et al. 2016,
"Continuous control with deep reinforcement learning"; the solution is described in the competition report,
Kidziński et al. 2019, "Artificial Intelligence for Prosthetics: Challenge Solutions"):

    K heads (``--ensemble-num``): actor and critic MLPs whose bottom layers are shared by all heads (PARL's
    ``*_shared`` parameters) and top layers are each head's; head i has actor lr * (1 - 0.05 i) and critic
    lr * (1 + 0.1 i); each head learns with DDPG (gamma 0.96, tau 0.001, Adam 3e-5, batch 128)
    ``--actors`` simulators (``@parl.remote_class`` processes) each play whole episodes with one head (drawn
    per episode and again at each target change); with one head, actors 0 and 1 (of every 3) add Gaussian noise
    every 5th step (level 0.5 * 0.98**k, decayed per episode); with K > 1 the heads' diversity explores
    each finished episode: its transitions (rewards = shaped reward * (1 - gamma); transitions across a target
    change are dropped) go into one replay memory, then each head learns ``--train-times`` batches
    evaluation: the rules' round-2 episode (random targets, 1000 steps), actions by the ensemble (each critic
    scores every head's action, scores normalised per critic, the best mean wins)

Curriculum (PARL's README; one run per stage, each restoring the previous stage's checkpoint)::

    python examples/neurips2018_prosthetics/train.py --reward-type RunFastest --logdir runs/p/fastest
    python examples/neurips2018_prosthetics/train.py --reward-type FixedTargetSpeed --target-v 3.0 \\
        --act-penalty-lowerbound 1.5 --warm-start-batches 1000 --restore runs/p/fastest/agent.ckpt ...
    #   then --target-v 2.0 --act-penalty-lowerbound 0.75, then --target-v 1.25 --act-penalty-lowerbound 0.6
    python examples/neurips2018_prosthetics/train.py --reward-type Round2 --ensemble-num 12 \\
        --act-penalty-lowerbound 0.75 --act-penalty-coeff 7.0 --vel-penalty-coeff 20.0 --discrete-data --stage 3 \\
        --warm-start-batches 1000 --restore runs/p/v125/agent.ckpt --restore-from-one-head

``--address HOST:PORT`` uses an xparl cluster (``xparl start --cpu-num N`` on each machine) instead of the embedded
one. Needs OpenSim: ``pip install 'opensim>=4.6'``. Writes ``<logdir>/summary.json``, ``curve.csv`` (a row per
evaluation), ``episodes.csv`` (a row per training episode), ``agent.ckpt`` and tensorboard scalars.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
import signal
import sys
import tempfile
import time

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from env_wrapper import ACT_DIM, OBS_DIM, REWARD_TYPES, SCALER, VEL_DIM, TrainingEnv  # noqa: E402
from prosthetics_env import MODEL_PATH, OpenSimMissingError, import_opensim  # noqa: E402

import parl  # noqa: E402
from parl.utils import ReplayMemory, logger, summary  # noqa: E402

GAMMA = 0.96
TAU = 0.001
ACTOR_LR = 3e-5
CRITIC_LR = 3e-5
BATCH_SIZE = 128
NOISE_DECAY = 0.999998


class ActorNet(nn.Module):
    """PARL's ``ActorModel`` top (per head): [hid1 400 | vel 400] -> 200 tanh -> 19 tanh."""

    def __init__(self):
        super().__init__()
        self.fc2, self.fc3 = nn.Linear(800, 200), nn.Linear(200, ACT_DIM)


class CriticNet(nn.Module):
    """PARL's ``CriticModel`` top (per head): [hid1 400 | act 400 | vel 400] -> 400 selu -> 1 selu."""

    def __init__(self):
        super().__init__()
        self.fc2, self.fc3 = nn.Linear(1200, 400), nn.Linear(400, 1)


def shared_bottoms() -> tuple[nn.ModuleDict, nn.ModuleDict]:
    """The bottom layers all heads share (PARL's ``policy_shared`` / ``critic_shared``)."""
    body = OBS_DIM - VEL_DIM
    actor = nn.ModuleDict(dict(fc0=nn.Linear(body, 800), fc1=nn.Linear(800, 400), vel_fc0=nn.Linear(VEL_DIM, 200),
                               vel_fc1=nn.Linear(200, 400)))
    critic = nn.ModuleDict(dict(fc0=nn.Linear(body, 800), fc1=nn.Linear(800, 400), vel_fc0=nn.Linear(VEL_DIM, 200),
                                vel_fc1=nn.Linear(200, 400), act_fc0=nn.Linear(ACT_DIM, 400)))
    return actor, critic


class OpenSimModel(parl.Model):
    """One head: ``policy(obs [B, 189]) -> action [B, 19]`` in [-1, 1]; ``value(obs, action) -> Q [B]``.
    The last VEL_DIM = 4 observation floats (target-driven features) go through their own branch."""

    def __init__(self, actor_bottom: nn.ModuleDict, critic_bottom: nn.ModuleDict):
        super().__init__()
        self.actor_bottom, self.critic_bottom = actor_bottom, critic_bottom
        self.actor_top, self.critic_top = ActorNet(), CriticNet()

    def policy(self, obs):
        a = self.actor_bottom
        real, vel = obs[:, :-VEL_DIM], obs[:, -VEL_DIM:]
        h = torch.tanh(a.fc1(torch.tanh(a.fc0(real))))
        v = torch.tanh(a.vel_fc1(torch.tanh(a.vel_fc0(vel))))
        return torch.tanh(self.actor_top.fc3(torch.tanh(self.actor_top.fc2(torch.cat([h, v], 1)))))

    def value(self, obs, action):
        c, selu = self.critic_bottom, nn.functional.selu
        real, vel = obs[:, :-VEL_DIM], obs[:, -VEL_DIM:]
        h = selu(c.fc1(selu(c.fc0(real))))
        v = selu(c.vel_fc1(selu(c.vel_fc0(vel))))
        a = selu(c.act_fc0(action))
        return selu(self.critic_top.fc3(selu(self.critic_top.fc2(torch.cat([h, a, v], 1))))).squeeze(1)

    def get_actor_params(self):
        return list(self.actor_bottom.parameters()) + list(self.actor_top.parameters())

    def get_critic_params(self):
        return list(self.critic_bottom.parameters()) + list(self.critic_top.parameters())


class EnsembleModel(parl.Model):
    """The K heads (sharing their bottom layers); ``get_weights()`` is what the simulators receive."""

    def __init__(self, ensemble_num: int):
        super().__init__()
        actor_bottom, critic_bottom = shared_bottoms()
        self.heads = nn.ModuleList([OpenSimModel(actor_bottom, critic_bottom) for _ in range(ensemble_num)])

    def policy(self, obs, head: int = 0):
        return self.heads[head].policy(obs)


class MultiHeadDDPG(parl.Algorithm):
    """PARL's ``MultiHeadDDPG``: one :class:`parl.algorithms.DDPG` per head of an :class:`EnsembleModel`.

    Args:
        model: the ensemble (K heads).
        gamma / tau / actor_lr / critic_lr: DDPG's; head i uses ``actor_lr * (1 - 0.05 i)`` and
            ``critic_lr * (1 + 0.1 i)`` (PARL's).
        device: where the models live (default CUDA when available).
    """

    def __init__(self, model: EnsembleModel, gamma: float = GAMMA, tau: float = TAU, actor_lr: float = ACTOR_LR,
                 critic_lr: float = CRITIC_LR, device=None):
        super().__init__(model, device=device)
        self.heads = [parl.algorithms.DDPG(head, gamma=gamma, tau=tau, actor_lr=actor_lr * (1.0 - 0.05 * i),
                                           critic_lr=critic_lr * (1.0 + 0.1 * i), device=self.device)
                      for i, head in enumerate(model.heads)]
        # PARL deep-copies each model for its target: the targets' shared layers start equal but are not shared
        self.ensemble_num = len(self.heads)

    def predict(self, obs: torch.Tensor, head: int = 0) -> torch.Tensor:
        """Head ``head``'s action, float32 ``[B, 19]`` in [-1, 1]."""
        return self.model.heads[head].policy(obs)

    def ensemble_predict(self, obs: torch.Tensor) -> torch.Tensor:
        """For one observation ``[1, 189]``: every critic scores every head's action, each critic's scores are
        normalised by their sum, and the action with the best mean score is returned, ``[1, 19]``."""
        actions = torch.cat([h.policy(obs) for h in self.model.heads], 0)  # [K, 19]
        batch_obs = obs.expand(self.ensemble_num, -1)
        scores = torch.stack([h.value(batch_obs, actions) for h in self.model.heads], 1)  # [K actions, K critics]
        scores = scores / scores.sum(0, keepdim=True)
        return actions[scores.mean(1).argmax()][None]

    def learn(self, obs, action, reward, next_obs, terminal, head: int = 0):
        """One DDPG step of head ``head``; returns its critic loss (scalar tensor)."""
        critic_loss, _ = self.heads[head].learn(obs, action, reward, next_obs, terminal)
        return critic_loss

    def state_dict(self) -> dict:
        """Every head's models, targets and optimizers."""
        return {f"head{i}": h.state_dict() for i, h in enumerate(self.heads)}

    def load_state_dict(self, state: dict, from_one_head: bool = False) -> None:
        """Restore :meth:`state_dict`; ``from_one_head``: a one-head checkpoint's head is copied into every head
        (PARL's ``--restore_from_one_head``).

        Raises:
            ValueError: the checkpoint's heads do not match (use ``from_one_head`` for a one-head checkpoint).
        """
        if from_one_head:
            state = {f"head{i}": state["head0"] for i in range(self.ensemble_num)}
        if set(state) != {f"head{i}" for i in range(self.ensemble_num)}:
            raise ValueError(f"the checkpoint has heads {sorted(state)}, this run {self.ensemble_num}; "
                             "pass --restore-from-one-head to start K heads from a one-head checkpoint")
        for i, h in enumerate(self.heads):
            h.load_state_dict(state[f"head{i}"])


def env_kwargs(args: argparse.Namespace) -> dict:
    return dict(reward_type=args.reward_type, target_v=args.target_v,
                act_penalty_lowerbound=args.act_penalty_lowerbound, act_penalty_coeff=args.act_penalty_coeff,
                vel_penalty_coeff=args.vel_penalty_coeff, stage=args.stage, discrete_data=args.discrete_data,
                discrete_bin=args.discrete_bin, time_limit=args.time_limit)


@parl.remote_class(wait=False)
class Simulator:
    """One OpenSim simulator and a copy of the heads' actors, in a process of its own (PARL's gRPC client)."""

    def __init__(self, kwargs: dict, ensemble_num: int, ident: int, seed: int, assets: dict):
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        # the model file and the scaler travel as bytes (a cluster machine has no copy of this folder)
        self.assets = assets
        self.env = self._make_env(seed=seed, **kwargs)
        self.model = EnsembleModel(ensemble_num)
        self.ident, self.ensemble_num = ident, ensemble_num
        self.rng = np.random.default_rng(seed)

    def _make_env(self, **kwargs) -> TrainingEnv:
        """A ``TrainingEnv`` on the shipped assets, written to a temporary folder for as long as the env reads them
        (OpenSim and the scaler load them once; the job process ends with ``os._exit``, so no finalizer would
        remove a folder kept open)."""
        with tempfile.TemporaryDirectory(prefix="prosthetics-") as folder:
            for name, data in self.assets.items():
                with open(os.path.join(folder, name), "wb") as f:
                    f.write(data)
            return TrainingEnv(**kwargs, model_path=os.path.join(folder, "model.osim"),
                               scaler_path=os.path.join(folder, "scaler.npz"))

    def run_episode(self, weights: dict, noise_level: float) -> dict:
        """Play one episode with ``weights``. Returns ``obs`` float32 ``[n + 1, 189]``, ``actions`` float32
        ``[n, 19]``, ``rewards`` float32 ``[n]`` (shaped), ``target_changed`` bool ``[n]``, ``terminal`` (the
        last step fell), ``r2_return`` (the rules' reward summed), ``shaping_return``, ``frames`` (sim steps)."""
        self.model.set_weights(weights)
        obs = [self.env.reset()]
        actions, rewards, changed = [], [], []
        head = int(self.rng.integers(self.ensemble_num))
        r2_return = shaping_return = 0.0
        frames, step, done, info = 0, 0, False, {"timeout": False}
        while not done:
            step += 1
            with torch.no_grad():
                action = self.model.heads[head].policy(torch.as_tensor(obs[-1][None]))[0].numpy()
            if self.ensemble_num == 1 and self.ident % 3 != 2 and step % 5 == 0:
                action = action + self.rng.standard_normal(ACT_DIM) * noise_level * 0.98 ** (step - 1) * (
                    1 + self.ident % 3)
            action = np.clip(action, -1.0, 1.0).astype(np.float32)
            next_obs, shaping, r2, done, info = self.env.step(action)
            obs.append(next_obs)
            actions.append(action)
            rewards.append(shaping)
            changed.append(info["target_changed"])
            r2_return += r2
            shaping_return += shaping
            frames += info["frames"]
            if info["target_changed"]:
                head, step = int(self.rng.integers(self.ensemble_num)), 0
        return dict(obs=np.asarray(obs, np.float32), actions=np.asarray(actions, np.float32),
                    rewards=np.asarray(rewards, np.float32), target_changed=np.asarray(changed, bool),
                    terminal=bool(done and not info["timeout"]), r2_return=r2_return,
                    shaping_return=shaping_return, frames=frames)

    def evaluate(self, weights: dict, seed: int) -> dict:
        """One episode of the rules' round 2 (random targets, 1000 steps) with the ensemble's greedy actions."""
        self.model.set_weights(weights)
        if getattr(self, "eval_env", None) is None:
            self.eval_env = self._make_env(reward_type="RunFastest", stage=None, seed=seed,
                                           time_limit=self.env.time_limit)
            self.eval_alg = MultiHeadDDPG(self.model, device="cpu")
        env, alg = self.eval_env, self.eval_alg
        env.env.reset(seed=seed)  # the targets of episode `seed`
        obs, done, total, frames = env.reset(), False, 0.0, 0
        while not done:
            with torch.no_grad():
                action = alg.ensemble_predict(torch.as_tensor(obs[None]))[0].numpy()
            obs, _, r2, done, info = env.step(action)
            total += r2
            frames += info["frames"]
        return dict(r2_return=total, frames=frames)


def add_episode(memory: ReplayMemory, ep: dict, reward_scale: float) -> int:
    """PARL's ``_parse_memory``: transitions whose step changed the target are dropped; the last one is terminal
    when the model fell (not at the time limit). Returns the number added."""
    n = len(ep["actions"])
    added = 0
    for i in range(n):
        if ep["target_changed"][i]:
            continue
        memory.append(ep["obs"][i], ep["actions"][i], ep["rewards"][i] * reward_scale, ep["obs"][i + 1],
                      float(ep["terminal"] and i == n - 1))
        added += 1
    return added


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--actors", type=int, default=2, help="remote simulators (processes)")
    p.add_argument("--address", default=None, help="HOST:PORT of an xparl cluster (default: an embedded one)")
    p.add_argument("--ensemble-num", type=int, default=1, help="heads K (PARL: 1 in the curriculum, 12 in round 2)")
    p.add_argument("--reward-type", choices=REWARD_TYPES, default="RunFastest")
    p.add_argument("--target-v", type=float, default=None, help="FixedTargetSpeed's target speed (m/s)")
    p.add_argument("--act-penalty-lowerbound", type=float, default=None)
    p.add_argument("--act-penalty-coeff", type=float, default=5.0)
    p.add_argument("--vel-penalty-coeff", type=float, default=1.0)
    p.add_argument("--stage", type=int, default=0, help="target changes per episode (0-3; PARL's --stage)")
    p.add_argument("--discrete-data", action="store_true")
    p.add_argument("--discrete-bin", type=int, default=10)
    p.add_argument("--time-limit", type=int, default=1000, help="sim steps per episode (the rules: 1000)")
    p.add_argument("--total-steps", type=int, default=1_000_000, help="budget of simulator steps (frames)")
    p.add_argument("--train-times", type=int, default=100, help="batches each head learns per finished episode")
    p.add_argument("--warm-start-batches", type=int, default=100,
                   help="learn once the memory holds this many batches (PARL: 100, 1000 when restoring)")
    p.add_argument("--memory-size", type=int, default=2_000_000)
    p.add_argument("--eval-every", type=int, default=20_000, help="sim steps between evaluations")
    p.add_argument("--eval-episodes", type=int, default=1)
    p.add_argument("--restore", default=None, help="a checkpoint (agent.ckpt) to start from")
    p.add_argument("--restore-from-one-head", action="store_true", help="copy a one-head checkpoint to all heads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="learner device: cpu, cuda, cuda:1 [default: cuda when available]")
    p.add_argument("--logdir", default=None, help="default: runs/neurips2018_prosthetics/<reward-type>-seed<seed>")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    for name in ("actors", "ensemble_num", "total_steps", "train_times", "eval_episodes", "time_limit"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.reward_type == "FixedTargetSpeed" and args.target_v is None:
        p.error("--reward-type FixedTargetSpeed needs --target-v (PARL: 3.0, then 2.0, then 1.25)")
    if args.reward_type != "RunFastest" and args.act_penalty_lowerbound is None:
        p.error(f"--reward-type {args.reward_type} needs --act-penalty-lowerbound (PARL: 1.5, 0.75, 0.6; 0.75)")
    if args.stage not in (0, 1, 2, 3):
        p.error("--stage must be 0, 1, 2 or 3")
    return args


def _stop_like_ctrl_c(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None) -> None:
    args = parse_args(argv)
    # a scheduler's stop (SIGTERM: kill, timeout, SLURM) ends the run as Ctrl-C does: it still evaluates, saves
    # agent.ckpt and writes summary.json
    signal.signal(signal.SIGTERM, _stop_like_ctrl_c)
    try:
        import_opensim()
    except OpenSimMissingError as err:
        sys.exit(f"error: {err}")
    logdir = args.logdir or os.path.join("runs", "neurips2018_prosthetics", f"{args.reward_type}-seed{args.seed}")
    os.makedirs(logdir, exist_ok=True)
    summary.set_logdir(logdir)
    logger.set_dir(logdir)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    start, cpu0 = time.perf_counter(), time.process_time()

    alg = MultiHeadDDPG(EnsembleModel(args.ensemble_num), device=args.device)
    agent = parl.Agent(alg)
    if args.restore:
        # agent.save(path) keeps the whole state (every head, the optimizers) in path + ".state"; an agent.ckpt of
        # earlier versions holds it in the one file
        full = args.restore + ".state" if os.path.isfile(args.restore + ".state") else args.restore
        state = torch.load(full, map_location=alg.device, weights_only=True)
        if not (isinstance(state, dict) and "state" in state):
            sys.exit(f"error: --restore {args.restore}: no {args.restore}.state beside it (the file agent.save writes "
                     "with every head and optimizer); pass an agent.ckpt written by this example")
        alg.load_state_dict(state["state"], from_one_head=args.restore_from_one_head)
        logger.info("restored %s (%s)", args.restore, "from one head" if args.restore_from_one_head else "all heads")
    memory = ReplayMemory(args.memory_size, OBS_DIM, ACT_DIM, seed=args.seed)

    if args.address is None:
        os.environ.setdefault("XPARL_PRELOAD", "torch,gymnasium,opensim,parl_core.torch,parl_algorithms.torch")
        parl.connect(cpu_num=args.actors)
    else:
        parl.connect(args.address)
    kwargs = env_kwargs(args)
    assets = {}
    for name, path in (("model.osim", MODEL_PATH), ("scaler.npz", SCALER)):
        with open(path, "rb") as f:
            assets[name] = f.read()
    with concurrent.futures.ThreadPoolExecutor(args.actors) as pool:
        actors = list(pool.map(lambda i: Simulator(kwargs, args.ensemble_num, i, args.seed * 1000 + i, assets),
                               range(args.actors)))
    logger.info("%d simulators ready after %.1f s", args.actors, time.perf_counter() - start)

    curve_path = os.path.join(logdir, "curve.csv")
    fields = ["env_steps", "wall_s", "cpu_s", "eval_return_mean", "eval_frames_mean", "train_r2_return_mean",
              "episodes", "updates"]
    with open(curve_path, "w", newline="") as f:
        csv.DictWriter(f, fields).writeheader()
    episodes_path = os.path.join(logdir, "episodes.csv")  # every training episode (the rules' return, shaped)
    episode_fields = ["env_steps", "wall_s", "r2_return", "shaping_return", "frames"]
    with open(episodes_path, "w", newline="") as f:
        csv.DictWriter(f, episode_fields).writeheader()

    def cpu_s() -> float:  # the learner's and its finished children's CPU time is not all: ask the actors' pids
        return time.process_time() - cpu0

    env_steps = episodes = updates = 0
    noise_level, next_eval, eval_mean, eval_frames = 0.5, args.eval_every, float("nan"), float("nan")
    recent: list[float] = []
    critic_losses: list[float] = []
    reward_scale = 1.0 - GAMMA
    bar = tqdm(total=args.total_steps, disable=args.no_progress, unit="frame", smoothing=0.05)

    def evaluate() -> tuple[float, float]:
        weights = alg.model.get_weights()
        futures = [actors[i % len(actors)].evaluate(weights, 10_000 + args.seed * 100 + i)
                   for i in range(args.eval_episodes)]
        results = [fut.result() for fut in futures]
        return (float(np.mean([r["r2_return"] for r in results])), float(np.mean([r["frames"] for r in results])))

    def record_eval() -> None:
        row = dict(env_steps=env_steps, wall_s=round(time.perf_counter() - start, 1), cpu_s=round(cpu_s(), 1),
                   eval_return_mean=round(eval_mean, 3), eval_frames_mean=eval_frames,
                   train_r2_return_mean=round(float(np.mean(recent[-20:])), 3) if recent else float("nan"),
                   episodes=episodes, updates=updates)
        with open(curve_path, "a", newline="") as f:
            csv.DictWriter(f, fields).writerow(row)
        nonlocal last_eval_at
        last_eval_at = env_steps
        summary.add_scalar("eval/return_mean", eval_mean, env_steps)
        summary.add_scalar("eval/frames_mean", eval_frames, env_steps)
        logger.info("env steps %d: eval round-2 return %.1f over %.0f frames", env_steps, eval_mean, eval_frames)

    interrupted, last_eval_at = False, -1
    try:
        weights = alg.model.get_weights()
        pending = {actor.run_episode(weights, noise_level): i for i, actor in enumerate(actors)}
        while pending:
            done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in done:
                slot = pending.pop(fut)
                ep = fut.result()
                add_episode(memory, ep, reward_scale)
                episodes += 1
                env_steps += ep["frames"]
                recent.append(ep["r2_return"])
                bar.update(ep["frames"])
                summary.add_scalar("train/r2_return", ep["r2_return"], env_steps)
                with open(episodes_path, "a", newline="") as f:
                    csv.DictWriter(f, episode_fields).writerow(dict(
                        env_steps=env_steps, wall_s=round(time.perf_counter() - start, 1),
                        r2_return=round(ep["r2_return"], 3), shaping_return=round(ep["shaping_return"], 4),
                        frames=ep["frames"]))
                summary.add_scalar("train/shaping_return", ep["shaping_return"], env_steps)
                summary.add_scalar("train/episode_frames", ep["frames"], env_steps)
                if memory.size() > BATCH_SIZE * args.warm_start_batches:
                    for head in range(args.ensemble_num):
                        for _ in range(args.train_times):
                            b = [torch.as_tensor(x, dtype=torch.float32, device=alg.device)
                                 for x in memory.sample_batch(BATCH_SIZE)]
                            critic_losses.append(float(alg.learn(*b, head=head).detach()))
                            updates += 1
                    summary.add_scalar("train/critic_loss", float(np.mean(critic_losses[-100:])), env_steps)
                if episodes >= 50:
                    noise_level *= NOISE_DECAY
                bar.set_postfix(r2=f"{np.mean(recent[-20:]):.1f}", eval=f"{eval_mean:.1f}", refresh=False)
                if env_steps >= next_eval:
                    next_eval += args.eval_every
                    eval_mean, eval_frames = evaluate()
                    record_eval()
                    agent.save(os.path.join(logdir, "agent.ckpt"))
                if env_steps < args.total_steps:
                    pending[actors[slot].run_episode(alg.model.get_weights(), noise_level)] = slot
    except KeyboardInterrupt:  # Ctrl-C / SIGINT / SIGTERM: stop, still evaluate and write the summary
        interrupted = True
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    bar.close()
    if last_eval_at != env_steps:  # the budget ended between evaluations
        eval_mean, eval_frames = evaluate()
        record_eval()
    agent.save(os.path.join(logdir, "agent.ckpt"))
    # save / restore: a fresh agent restored from the checkpoint acts as the trained one
    restored = MultiHeadDDPG(EnsembleModel(args.ensemble_num), device=args.device)
    parl.Agent(restored).restore(os.path.join(logdir, "agent.ckpt"))
    probe = torch.as_tensor(np.random.default_rng(0).standard_normal((4, OBS_DIM)), dtype=torch.float32,
                            device=alg.device)
    with torch.no_grad():
        restored_matches = bool(torch.allclose(restored.predict(probe), alg.predict(probe)))
    wall = time.perf_counter() - start
    result = {"device": str(alg.device), "reward_type": args.reward_type, "ensemble_num": args.ensemble_num,
              "stage": args.stage, "seed": args.seed, "actors": args.actors, "env_steps": env_steps,
              "episodes": episodes, "updates": updates, "eval_return_mean": eval_mean,
              "eval_frames_mean": eval_frames, "eval_episodes": args.eval_episodes,
              "train_r2_return_mean_last20": float(np.mean(recent[-20:])) if recent else None,
              "wall_s": round(wall, 1), "learner_cpu_s": round(cpu_s(), 1),
              "env_steps_per_s": round(env_steps / wall, 2), "restored_matches": restored_matches,
              "interrupted": interrupted,
              "loadavg": [float(x) for x in open("/proc/loadavg").read().split()[:3]]}
    summary.flush()
    with open(os.path.join(logdir, "summary.json"), "w") as f:
        json.dump(result, f, indent=2)
    parl.disconnect()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
