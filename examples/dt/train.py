"""Decision Transformer on gymnasium Pendulum-v1 with parl.algorithms.DecisionTransformer (Chen et al. 2021,
"Decision Transformer: Reinforcement Learning via Sequence Modeling"), from trajectories this script
collects itself.

Algorithm box:

    collect: train SAC online for `--collect-steps` env steps (uniform random for the first
             `--learning-starts`), keeping whole episodes: the trajectories of a partly trained policy
    learn offline, for each gradient step:
        sample B segments of K steps (left-padded at an episode's start), tokens (R_t, s_t, a_t) per step
        with R_t the return-to-go; a causal transformer predicts a_t from the tokens up to s_t
        DecisionTransformer.learn: MSE to the dataset's actions on real steps, AdamW, warm-up, clip 0.25
    every `--eval-every` steps: 10 episodes conditioned on R_0 = the best dataset return, R_t decreased
        by each reward received
    stop as soon as the evaluation mean reaches --target-return (default: the dataset's mean return)

Usage::

    python examples/dt/train.py --seed 0 --logdir runs/dt/seed0

    # killed, pre-empted or stopped with Ctrl-C: continue exactly where the last checkpoint left off
    python examples/dt/train.py --seed 0 --logdir runs/dt/seed0 --resume runs/dt/seed0

Writes ``<logdir>/summary.json``, tensorboard scalars and ``<logdir>/curve.csv`` (a row per evaluation:
``gradient_steps``, ``wall_s`` (collection included), ``eval_return_mean``, ``dataset_return_mean``, ``action_mse``)
and ``<logdir>/checkpoint.npz`` during training (every ``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and at
the end: docs/long_runs.md; a resumed run collects its dataset again, the same one, from the seed).
"""

from __future__ import annotations

import argparse
import json
import os

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from tqdm import tqdm

import parl
from parl.utils import Checkpointer, RunLog, add_run_args

# the networks below are torch.nn modules: pin the torch backend (with paddle also installed, PARL's
# default would be paddle)
parl.set_backend("torch")

CONTEXT, HIDDEN, LAYERS, HEADS, BATCH_SIZE = 20, 64, 2, 2, 64
RTG_SCALE, MAX_EP_LEN, EVAL_EPISODES = 1000.0, 1000, 10


class DTModel(parl.Model):
    """A causal transformer over (return-to-go, state, action) tokens; actions in [-1, 1].

    ``forward(states [B, K, obs_dim], actions [B, K, act_dim], rewards, returns_to_go [B, K, 1],
    timesteps [B, K], attention_mask [B, K])`` -> ``(None, action_preds [B, K, act_dim], None)``
    (``attention_mask`` is accepted for PARL's signature; padded steps are zeros);
    ``get_action`` acts from the last ``K`` steps of each trajectory.
    """

    def __init__(self, obs_dim: int, act_dim: int):
        super().__init__()
        self.obs_dim, self.act_dim = obs_dim, act_dim
        self.embed_timestep = nn.Embedding(MAX_EP_LEN, HIDDEN)
        self.embed_return, self.embed_state = nn.Linear(1, HIDDEN), nn.Linear(obs_dim, HIDDEN)
        self.embed_action, self.embed_ln = nn.Linear(act_dim, HIDDEN), nn.LayerNorm(HIDDEN)
        layer = nn.TransformerEncoderLayer(HIDDEN, HEADS, 4 * HIDDEN, dropout=0.1, batch_first=True, norm_first=True)
        self.transformer = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.predict_action = nn.Sequential(nn.Linear(HIDDEN, act_dim), nn.Tanh())

    def forward(self, states, actions, rewards, returns_to_go, timesteps, attention_mask=None):
        batch, length = states.shape[:2]
        time_emb = self.embed_timestep(timesteps)
        tokens = torch.stack([self.embed_return(returns_to_go) + time_emb, self.embed_state(states) + time_emb,
                              self.embed_action(actions) + time_emb], dim=2).reshape(batch, 3 * length, HIDDEN)
        # causal mask only: left padding enters as zero inputs (the same in training and acting), and
        # DecisionTransformer.learn leaves padded steps out of the loss
        causal = torch.triu(torch.full((3 * length, 3 * length), float("-inf")), diagonal=1)
        hidden = self.transformer(self.embed_ln(tokens), mask=causal, is_causal=True).reshape(batch, length, 3, HIDDEN)
        return None, self.predict_action(hidden[:, :, 1]), None  # actions from the state tokens

    def get_action(self, states, actions, rewards, returns_to_go, timesteps):
        """The next action of each of ``N`` trajectories: states [N, t, obs_dim], actions [N, t, act_dim]
        (the last one a placeholder), returns_to_go [N, t, 1], timesteps [N, t] -> [N, act_dim]."""
        length = min(states.shape[1], CONTEXT)
        pad = CONTEXT - length

        def window(x):
            x = x[:, -length:]
            return torch.cat([torch.zeros(x.shape[0], pad, *x.shape[2:], dtype=x.dtype), x], dim=1)

        _, action_preds, _ = self(window(states), window(actions), None, window(returns_to_go), window(timesteps))
        return action_preds[:, -1]


def collect(env_id: str, seed: int, steps: int, learning_starts: int) -> list[dict[str, np.ndarray]]:
    """The whole episodes of an online SAC run of ``steps`` env steps (actions in [-1, 1])."""
    from parl.utils import ReplayMemory

    env = gym.make(env_id)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    scale = float(env.action_space.high[0])

    class SACModel(parl.Model):
        def __init__(self):
            super().__init__()
            self.actor = nn.Sequential(nn.Linear(obs_dim, 64), nn.ReLU(), nn.Linear(64, 2 * act_dim))
            self.q = nn.ModuleList(nn.Sequential(nn.Linear(obs_dim + act_dim, 64), nn.ReLU(), nn.Linear(64, 1))
                                   for _ in range(2))

        def policy(self, obs):
            mean, log_std = self.actor(obs).chunk(2, dim=-1)
            return mean, log_std.clamp(-20.0, 2.0)

        def value(self, obs, action):
            return tuple(q(torch.cat([obs, action], dim=-1)) for q in self.q)

        def get_actor_params(self):
            return list(self.actor.parameters())

        def get_critic_params(self):
            return list(self.q.parameters())

    sac = parl.algorithms.SAC(SACModel(), gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3,
                              with_automatic_entropy_tuning=True)
    memory, rng = ReplayMemory(steps, obs_dim, act_dim, seed=seed), np.random.default_rng(seed)
    episodes, current = [], {"obs": [], "act": [], "rew": []}
    obs, _ = env.reset(seed=seed)
    for step in tqdm(range(1, steps + 1), desc="collect (SAC)", disable=None, leave=False):
        if step <= learning_starts:
            act = rng.uniform(-1.0, 1.0, act_dim).astype(np.float32)
        else:
            with torch.no_grad():
                act = sac.sample(torch.as_tensor(obs, dtype=torch.float32))[0].cpu().numpy()
        next_obs, rew, term, trunc, _ = env.step(act * scale)
        memory.append(obs, act, rew, next_obs, term)
        for key, value in (("obs", obs), ("act", act), ("rew", rew)):
            current[key].append(value)
        obs = next_obs
        if term or trunc:
            episodes.append({key: np.asarray(value, dtype=np.float32) for key, value in current.items()})
            current = {"obs": [], "act": [], "rew": []}
            obs, _ = env.reset()
        if step > learning_starts:
            sac.learn(*(torch.from_numpy(x) for x in memory.sample_batch(256)))
    return episodes


class Segments:
    """Random K-step segments of the episodes, normalised states, scaled returns-to-go, left padding."""

    def __init__(self, episodes: list[dict[str, np.ndarray]], seed: int):
        self.episodes, self.rng = episodes, np.random.default_rng(seed)
        states = np.concatenate([ep["obs"] for ep in episodes])
        self.state_mean, self.state_std = states.mean(0), states.std(0) + 1e-6
        for ep in episodes:  # return-to-go R_t = sum of rewards from t on (undiscounted, as the paper)
            ep["rtg"] = np.cumsum(ep["rew"][::-1])[::-1].copy() / RTG_SCALE
        lengths = np.array([len(ep["rew"]) for ep in episodes], dtype=np.float64)
        self.p = lengths / lengths.sum()

    def batch(self, size: int) -> tuple[torch.Tensor, ...]:
        out = {key: [] for key in ("s", "a", "r", "d", "rtg", "t", "mask")}
        for i in self.rng.choice(len(self.episodes), size=size, p=self.p):
            ep = self.episodes[i]
            start = int(self.rng.integers(len(ep["rew"])))
            s = (ep["obs"][start:start + CONTEXT] - self.state_mean) / self.state_std
            n, pad = len(s), CONTEXT - len(s)
            rows = {"s": s, "a": ep["act"][start:start + n], "r": ep["rew"][start:start + n, None],
                    "d": np.zeros(n), "rtg": ep["rtg"][start:start + n, None], "t": np.arange(start, start + n),
                    "mask": np.ones(n)}
            for key, value in rows.items():
                out[key].append(np.concatenate([np.zeros((pad, *value.shape[1:]), value.dtype), value]))
        s, a, r, d, rtg, t, mask = (np.stack(out[k]) for k in ("s", "a", "r", "d", "rtg", "t", "mask"))
        return (torch.as_tensor(s, dtype=torch.float32), torch.as_tensor(a), torch.as_tensor(r, dtype=torch.float32),
                torch.as_tensor(d), torch.as_tensor(rtg, dtype=torch.float32), torch.as_tensor(t, dtype=torch.long),
                torch.as_tensor(mask, dtype=torch.float32))


def evaluate(alg: parl.Algorithm, data: Segments, env_id: str, seed: int, target_return: float) -> float:
    """Mean return of EVAL_EPISODES episodes played in parallel, conditioned on ``target_return``."""
    envs = gym.make_vec(env_id, num_envs=EVAL_EPISODES, vectorization_mode="sync")
    scale = float(envs.single_action_space.high[0])
    obs, _ = envs.reset(seed=seed + 10_000)
    n, act_dim = EVAL_EPISODES, envs.single_action_space.shape[0]
    states = [(obs - data.state_mean) / data.state_std]
    actions, rtg = [np.zeros((n, act_dim), np.float32)], [np.full(n, target_return / RTG_SCALE)]
    total, finished, t = np.zeros(n), np.zeros(n, dtype=bool), 0
    alg.model.eval()
    while not finished.all():
        with torch.no_grad():
            act = alg.predict(torch.as_tensor(np.stack(states, 1), dtype=torch.float32),
                              torch.as_tensor(np.stack(actions, 1)), None,
                              torch.as_tensor(np.stack(rtg, 1)[..., None], dtype=torch.float32),
                              torch.arange(t + 1).repeat(n, 1).clamp(max=MAX_EP_LEN - 1)).cpu().numpy()
        actions[-1] = act
        obs, rew, term, trunc, _ = envs.step(act * scale)
        total += rew * ~finished
        finished |= term | trunc
        states.append((obs - data.state_mean) / data.state_std)
        actions.append(np.zeros((n, act_dim), np.float32))
        rtg.append(rtg[-1] - rew / RTG_SCALE)
        t += 1
    alg.model.train()
    envs.close()
    return float(total.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="Pendulum-v1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None,
                        help="torch device of the learner: cpu, cuda, cuda:1  [default: cuda when available]")
    parser.add_argument("--logdir", default=None, help="default: runs/dt/<env>-seed<seed>")
    parser.add_argument("--collect-steps", type=int, default=8_000, help="env steps of the SAC data collector")
    parser.add_argument("--learning-starts", type=int, default=1_000)
    parser.add_argument("--gradient-steps", type=int, default=5_000)
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--target-return", type=float, default=None, help="default: the dataset's mean return")
    parser.add_argument("--no-progress", action="store_true")
    add_run_args(parser)
    args = parser.parse_args()
    logdir = args.resume or args.logdir or os.path.join("runs", "dt", f"{args.env}-seed{args.seed}")
    run = RunLog(logdir)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    episodes = collect(args.env, args.seed, args.collect_steps, args.learning_starts)
    returns = [float(ep["rew"].sum()) for ep in episodes]
    dataset_return, best_return = float(np.mean(returns)), float(np.max(returns))
    collect_s = run.elapsed()
    target = dataset_return if args.target_return is None else args.target_return
    run.scalar("dataset/return_mean", dataset_return, 0)
    data = Segments(episodes, args.seed)

    obs_dim, act_dim = episodes[0]["obs"].shape[1], episodes[0]["act"].shape[1]
    alg = parl.algorithms.DecisionTransformer(DTModel(obs_dim, act_dim), learning_rate=1e-3, warmup_steps=500,
                                              weight_decay=1e-4, device=args.device)
    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args))
    ckpt.register(alg=alg, data_rng=data.rng)
    c = ckpt.track(step=0, eval_mean=float("-inf"), reached=False, evals=[], collect_s=collect_s)
    ckpt.start()  # (a resumed run continues from its checkpoint: counters, network, optimizer, sampling, RNGs)
    progress = tqdm(total=args.gradient_steps, initial=c.step, disable=args.no_progress, unit="grad")
    while c.step < args.gradient_steps and not c.reached:
        c.step += 1
        loss = alg.learn(*data.batch(BATCH_SIZE))
        progress.update(1)
        if c.step % args.eval_every == 0 or c.step == args.gradient_steps:
            run.scalar("train/action_mse", loss.item(), c.step)
            c.eval_mean = evaluate(alg, data, args.env, args.seed, best_return)
            run.scalar("eval/return_mean", c.eval_mean, c.step)
            run.row({"gradient_steps": c.step, "wall_s": round(run.elapsed(), 3),
                     "eval_return_mean": round(c.eval_mean, 3), "dataset_return_mean": round(dataset_return, 3),
                     "action_mse": round(loss.item(), 6)})
            c.evals.append([c.step, c.eval_mean])
            progress.set_postfix(eval=f"{c.eval_mean:.1f}", dataset=f"{dataset_return:.1f}")
            c.reached = c.eval_mean >= target
        ckpt.maybe_save(c.step)
    progress.close()
    run.close()
    result = run.write_summary({
        "device": str(alg.device), "env": args.env, "seed": args.seed, "eval_return_mean": c.eval_mean,
        "eval_episodes": EVAL_EPISODES, "env_steps": args.collect_steps, "gradient_steps": c.step,
        "episodes": len(episodes), "dataset_return_mean": dataset_return, "condition_return": best_return,
        "target_return": target, "collect_s": round(c.collect_s, 3), "wall_s": round(run.elapsed(), 3),
        "reached": c.reached, "evals": c.evals})
    ckpt.finish(c.step)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
