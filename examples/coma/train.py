"""COMA on Level-Based Foraging and RWARE with parl.algorithms.COMA (PARL's benchmark/torch/coma, without SMAC).

Algorithm box (Foerster et al. 2018, "Counterfactual Multi-Agent Policy Gradients"):

    recurrent actor (shared by the agents): input obs, one-hot last action, one-hot agent id (PARL's)
    critic Q(s, (u^-a, .)): input global state, the other agents' one-hot actions, one-hot agent id
    for each update:
        play one episode in each of --num-envs envs (MultiAgentVectorEnv, batched inference), actions from
        (1 - epsilon) softmax(logits over the available actions) + epsilon uniform over them; epsilon annealed
        linearly from --epsilon-start to --epsilon-finish over --epsilon-anneal-steps env steps (PyMARL's COMA)
        build PARL's episode batch (padded to the longest episode): team reward r = sum over agents, isover on
        each episode's last step, terminated kept apart from a time-limit truncation (which is bootstrapped
        from the final observation and the action the policy takes there)
        COMA.learn(batch, epsilon): TD(lambda) critic against the TARGET network, then the actor on the
        counterfactual advantage A^a = Q(s, u) - sum_u' pi^a(u') Q(s, (u^-a, u'))
        every --target-update learn calls: COMA.sync_target()
        with --actors N: the N x --num-envs episodes are played by N remote actors (@parl.remote_class), each
        with the learner's current weights, and learnt in one batch
    every --eval-every env steps: --eval-episodes episodes without exploration (epsilon 0), actions sampled from
        the policy (--eval-mode sample, as EPyMARL's COMA, whose soft-policies selector samples in test mode
        too) or its argmax (--eval-mode greedy, PARL's test mode)

Usage::

    python examples/coma/train.py --seed 0                                    # LBF Foraging-8x8-2p-2f-coop-v3
    python examples/coma/train.py --env rware-tiny-2ag-v2 --total-steps 2000000
    python examples/coma/train.py --backend paddle --seed 0
    python examples/coma/train.py --actors 2 --seed 0                         # collection on 2 remote actors
    python examples/coma/train.py --env sc2:3m                                # needs smac and StarCraft II

    # killed, pre-empted or stopped with Ctrl-C: continue exactly where the last checkpoint left off
    python examples/coma/train.py --seed 0 --resume runs/coma/Foraging-8x8-2p-2f-coop-v3-seed0

Writes ``<logdir>/summary.json``, ``<logdir>/curve.csv``, ``<logdir>/coma.ckpt`` (the final weights, read back by
``--restore``), tensorboard scalars and ``<logdir>/checkpoint.npz`` every ``--checkpoint-every`` minutes, on
SIGTERM / Ctrl-C and at the end (see docs/long_runs.md): the networks, target network, RMSprop states, counters
and every random generator. Checkpoints are taken between two updates, where every episode has ended and the
next ``play`` resets every env from its generator (LBF's and RWARE's grids live in objects a checkpoint cannot
hold). With ``--actors`` the actors' envs and generators live in their processes: a resumed run continues the
learner, counters and epsilon schedule, but its actors start their env streams afresh (not bit-exact). Returns
are TEAM returns: the sum over agents of the episode's rewards (EPyMARL's common reward).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import json
import os

import numpy as np
from tqdm import tqdm

import parl
from parl.utils import Checkpointer, RunLog, add_run_args

HIDDEN = 64  # actor GRU (PARL: 64)
CRITIC_HIDDEN = 128  # critic MLP (PARL: 128)


# ---------------------------------------------------------------------------------------------------------
# model (PARL's ComaModel: actor_model with init_hidden, critic_model), on either backend


_MODELS: dict[str, type] = {}


def define_model(backend: str = "torch") -> type:
    """``ComaModel`` on ``backend`` (``"torch"`` or ``"paddle"``), which it selects (before parl.algorithms).

    (Cached in ``_MODELS``, not ``functools.cache``: the remote actors' class is pickled by value with this
    function, and a ``functools`` wrapper of ``__main__`` does not pickle.)
    """
    parl.set_backend(backend)
    if backend in _MODELS:
        return _MODELS[backend]
    if backend == "torch":
        import torch
        from torch import nn

        relu, zeros = torch.relu, lambda layer: layer.weight.new_zeros(1, HIDDEN)

        def gru(cell, x, h):
            return cell(x, h)
    else:
        import paddle
        from paddle import nn

        relu, zeros = paddle.nn.functional.relu, lambda layer: paddle.zeros([1, HIDDEN])

        def gru(cell, x, h):
            return cell(x, h)[1]

    class ActorModel(parl.Model):
        """Linear-ReLU-GRUCell-Linear: ``(logits float32 [B, n_actions], h float32 [B, HIDDEN])``."""

        def __init__(self, input_dim: int, n_actions: int):
            super().__init__()
            self.fc1 = nn.Linear(input_dim, HIDDEN)
            self.rnn = nn.GRUCell(HIDDEN, HIDDEN)
            self.fc2 = nn.Linear(HIDDEN, n_actions)

        def init_hidden(self):
            return zeros(self.fc1)

        def forward(self, obs, h):
            h = gru(self.rnn, relu(self.fc1(obs)), h.reshape([-1, HIDDEN]))
            return self.fc2(h), h

    class CriticModel(parl.Model):
        """Linear-ReLU-Linear-ReLU-Linear: Q of each of the agent's actions, float32 [B, n_actions]."""

        def __init__(self, input_dim: int, n_actions: int):
            super().__init__()
            self.fc1 = nn.Linear(input_dim, CRITIC_HIDDEN)
            self.fc2 = nn.Linear(CRITIC_HIDDEN, CRITIC_HIDDEN)
            self.fc3 = nn.Linear(CRITIC_HIDDEN, n_actions)

        def forward(self, inputs):
            return self.fc3(relu(self.fc2(relu(self.fc1(inputs)))))

    class ComaModel(parl.Model):
        """PARL's contract: ``policy(obs, h)``, ``value(inputs)``, ``get_actor_params``, ``get_critic_params``."""

        def __init__(self, n_agents: int, n_actions: int, obs_dim: int, state_dim: int):
            super().__init__()
            self.n_agents, self.n_actions = n_agents, n_actions
            self.actor_model = ActorModel(obs_dim + n_actions + n_agents, n_actions)
            self.critic_model = CriticModel(state_dim + n_agents * n_actions + n_agents, n_actions)

        def policy(self, obs, h):
            return self.actor_model(obs, h)

        def value(self, inputs):
            return self.critic_model(inputs)

        def get_actor_params(self):
            return self.actor_model.parameters()

        def get_critic_params(self):
            return self.critic_model.parameters()

    _MODELS[backend] = ComaModel
    return ComaModel


# ---------------------------------------------------------------------------------------------------------
# environments


def make_env(env_id: str):
    """A ``MultiAgentEnv``; ``sc2:<map>`` needs smac and the StarCraft II game (an error says how to get them)."""
    if env_id.startswith("sc2:"):
        if importlib.util.find_spec("smac") is None or importlib.util.find_spec("smac.env") is None:
            raise SystemExit(
                f"{env_id} needs SMAC and StarCraft II, which are not installed here: `pip install "
                "git+https://github.com/oxwhirl/smac.git` (PyPI's `smac` is SMAC3, a hyperparameter optimiser, not "
                "this), then the game: https://github.com/oxwhirl/smac#installing-starcraft-ii (Linux: the "
                "SC2.4.10 package unzipped into ~/StarCraftII with the SMAC_Maps, or SC2PATH set to it). LBF "
                "(Foraging-8x8-2p-2f-coop-v3) and RWARE (rware-tiny-2ag-v2) run without them.")
        raise SystemExit(f"{env_id}: this example has no SMAC adapter for parl.env's MultiAgentEnv yet; use PARL's "
                         "benchmark/torch/coma/train.py (StarCraft2Env) with parl.algorithms.COMA")
    from parl.env import make_multiagent_env

    return make_multiagent_env(env_id)


def vector_env(env_id: str, num_envs: int):
    from parl.env import MultiAgentVectorEnv

    return MultiAgentVectorEnv([functools.partial(make_env, env_id) for _ in range(num_envs)])


def env_generators(envs) -> list[np.random.Generator]:
    """The random generator each env of a ``MultiAgentVectorEnv`` draws its episodes from (``MultiAgentEnv.np_random``:
    LBF, RWARE: gymnasium's; mpe2: its own)."""
    return [env.np_random for env in envs.envs]


# ---------------------------------------------------------------------------------------------------------
# acting and the episode batch (numpy; also run inside the remote actors)


def behaviour_probs(probs: np.ndarray, avail: np.ndarray, epsilon: float) -> np.ndarray:
    """``(1 - epsilon) softmax over the available actions + epsilon uniform over them`` (COMA.learn's policy)."""
    masked = probs * avail
    masked /= np.maximum(masked.sum(-1, keepdims=True), 1e-12)
    return ((1.0 - epsilon) * masked + epsilon / np.maximum(avail.sum(-1, keepdims=True), 1)) * avail


def choose(probs: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
    """One action per row: sampled (``rng``) or the argmax (``rng`` None, PARL's test mode)."""
    if rng is None:
        return probs.argmax(-1)
    cdf = np.cumsum(probs, -1)
    return np.minimum((cdf < rng.random((len(probs), 1)) * cdf[:, -1:]).sum(-1), probs.shape[-1] - 1)


class Player:
    """Plays whole episodes of a ``MultiAgentVectorEnv`` with a COMA policy, batched over envs and agents."""

    def __init__(self, env_id: str, num_envs: int, seed: int, backend: str):
        self.envs = vector_env(env_id, num_envs)
        self.n, self.A = self.envs.n_agents, self.envs.n_actions
        self.ops = importlib.import_module(f"parl_algorithms.{backend}.ops")
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.agent_ids = np.eye(self.n, dtype=np.float32)

    def _actor_input(self, obs: np.ndarray, last_u: np.ndarray) -> np.ndarray:
        E = len(obs)
        last = np.eye(self.A, dtype=np.float32)[last_u] * (last_u >= 0)[..., None]
        ids = np.broadcast_to(self.agent_ids, (E, self.n, self.n))
        return np.concatenate([obs, last, ids], -1).reshape(E * self.n, -1)

    def _probs(self, alg, obs, last_u, h):
        with self.ops.no_grad():
            probs, h = alg.predict(self.ops.tensor(self._actor_input(obs, last_u)), h)
        return self.ops.to_numpy(probs).reshape(len(obs), self.n, self.A), h

    def play(self, alg, epsilon: float, greedy: bool = False, record: bool = True
             ) -> tuple[dict | None, np.ndarray, np.ndarray]:
        """One episode per env (argmax actions if ``greedy``). Returns ``(batch, or None when not ``record``,
        team returns [E], lengths [E])``."""
        E, n, A, T = self.envs.num_envs, self.n, self.A, self.envs.episode_limit
        obs, info = self.envs.reset(seed=self.seed if self.seed is not None else None)
        self.seed = None  # seeded once, then each env continues its own stream
        rng = None if greedy else self.rng
        h = alg.init_hidden(E).reshape([E * n, -1])
        last_u = np.full((E, n), -1)
        active = np.ones(E, bool)
        returns, lengths = np.zeros(E), np.zeros(E, np.int64)
        if record:
            o_buf = np.zeros((E, T, n, self.envs.obs_dim), np.float32)
            s_buf = np.zeros((E, T + 1, self.envs.state_dim), np.float32)
            u_buf = np.zeros((E, T + 1, n), np.int64)
            avail_buf = np.zeros((E, T, n, A), np.float32)
            r_buf = np.zeros((E, T), np.float32)
            terminated = np.zeros(E, bool)
        for t in range(T):
            avail = info["avail_actions"].astype(np.float32)
            probs, h = self._probs(alg, obs, last_u, h)
            u = choose(behaviour_probs(probs, avail, 0.0 if greedy else epsilon).reshape(E * n, A),
                       rng).reshape(E, n)
            next_obs, reward, term, trunc, next_info = self.envs.step(u)
            team = reward.sum(1)
            returns += team * active
            lengths += active
            if record:
                live = np.flatnonzero(active)
                o_buf[live, t], s_buf[live, t], u_buf[live, t] = obs[live], info["state"][live], u[live]
                avail_buf[live, t], r_buf[live, t] = avail[live], team[live]
                ended = active & (term | trunc)
                terminated[ended] = term[ended]
                cut = np.flatnonzero(active & trunc & ~term)  # bootstrap: the final state and the next action
                if len(cut):
                    s_buf[cut, t + 1] = next_info["final_state"][cut]
                    final_probs, _ = self._probs(alg, next_info["final_obs"], u, h)
                    final_avail = next_info["final_avail_actions"].astype(np.float32)
                    u_next = choose(behaviour_probs(final_probs, final_avail, epsilon).reshape(E * n, A),
                                    rng).reshape(E, n)
                    u_buf[cut, t + 1] = u_next[cut]
            active &= ~(term | trunc)
            if not active.any():
                break
            obs, info, last_u = next_obs, next_info, u
        if not record:
            return None, returns, lengths
        steps = int(lengths.max())
        return self._batch(o_buf, s_buf, u_buf, avail_buf, r_buf, lengths, terminated, steps), returns, lengths

    def state_dict(self) -> dict:
        """What the next ``play`` depends on, between two ``play`` calls (every episode has ended, and ``play``
        resets every env): the action generator, the seed of the first reset (None once used) and each env's
        generator, from which the reset rebuilds the rest of the env."""
        return {"rng": self.rng.bit_generator.state, "seed": self.seed,
                "envs": [gen.bit_generator.state for gen in env_generators(self.envs)]}

    def load_state_dict(self, state: dict) -> None:
        """Put back what :meth:`state_dict` returned (ValueError: another number of envs)."""
        self.rng.bit_generator.state = state["rng"]
        self.seed = state["seed"]
        for gen, saved in zip(env_generators(self.envs), state["envs"], strict=True):
            gen.bit_generator.state = saved

    def _batch(self, o, s, u, avail, r, lengths, terminated, steps) -> dict:
        """PARL's COMA batch over the first ``steps`` steps (numpy): see parl_algorithms.algorithms.coma."""
        E, n, A = len(o), self.n, self.A
        t_idx = np.arange(steps)[None, :]
        padded = (t_idx >= lengths[:, None]).astype(np.float32)
        isover = (t_idx >= lengths[:, None] - 1).astype(np.float32)
        term = ((t_idx == lengths[:, None] - 1) & terminated[:, None]).astype(np.float32)
        onehot = np.eye(A, dtype=np.float32)[u[:, :steps + 1]]  # (padding: action 0, masked by COMA.learn)
        last = np.concatenate([np.zeros_like(onehot[:, :1]), onehot[:, :steps - 1]], 1)
        ids = np.broadcast_to(self.agent_ids, (E, steps, n, n))
        actor_inputs = np.concatenate([o[:, :steps], last, ids], -1)
        # the next step's state and joint action: the recorded ones, or at a truncation the final state and the
        # action drawn there (already in s[:, L] / u[:, L]); zeros after a termination (never bootstrapped)
        others = 1.0 - np.repeat(np.eye(n, dtype=np.float32), A, axis=1)  # [n, n * A]: agent a's own block 0

        def critic_inputs(state, joint):
            joint = joint.reshape(E, steps, 1, n * A) * others
            return np.concatenate([np.broadcast_to(state[:, :, None], (E, steps, n, state.shape[-1])), joint,
                                   ids], -1).astype(np.float32)

        return dict(
            r=r[:, :steps, None] * (1 - padded[..., None]), u=u[:, :steps, :, None], u_next=u[:, 1:steps + 1, :, None],
            avail_u=avail[:, :steps], padded=padded[..., None], isover=isover[..., None], terminated=term[..., None],
            actor_inputs=actor_inputs, critic_inputs=critic_inputs(s[:, :steps], onehot[:, :steps]),
            critic_inputs_next=critic_inputs(s[:, 1:steps + 1], onehot[:, 1:steps + 1]))


@parl.remote_class(wait=False)
class RemotePlayer:
    """A ``Player`` in its own process (``--actors``): loads the learner's weights, returns whole episodes."""

    def __init__(self, env_id: str, num_envs: int, seed: int, backend: str):
        if backend == "torch":
            import torch

            torch.set_num_threads(1)
        self.player = Player(env_id, num_envs, seed, backend)
        env = self.player.envs
        model = define_model(backend)(env.n_agents, env.n_actions, env.obs_dim, env.state_dim)
        self.alg = parl.algorithms.COMA(model, env.n_actions, env.n_agents, **_device(backend, "cpu"))

    def play(self, weights: dict, epsilon: float) -> tuple[dict, np.ndarray, np.ndarray]:
        self.alg.model.set_weights(weights)
        return self.player.play(self.alg, epsilon)


def _device(backend: str, device: str | None) -> dict:
    if device is None:
        return {}
    return {"device": device if backend == "torch" or device != "cuda" else "gpu"}


def merge(batches: list[dict]) -> dict:
    """Episode batches of several players in one, padded to the longest."""
    steps = max(b["r"].shape[1] for b in batches)
    out = {}
    for key in batches[0]:
        parts = []
        for b in batches:
            pad = steps - b[key].shape[1]
            value = b[key]
            if pad:
                fill = 1.0 if key in ("padded", "isover") else 0
                value = np.concatenate([value, np.full((len(value), pad, *value.shape[2:]), fill, value.dtype)], 1)
            parts.append(value)
        out[key] = np.concatenate(parts, 0)
    return out


# ---------------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--env", default="Foraging-8x8-2p-2f-coop-v3",
                        help="Foraging-*-v3 (LBF), rware-*-v2 (RWARE) or sc2:<map> (needs smac + StarCraft II)")
    parser.add_argument("--backend", choices=("torch", "paddle"), default="torch")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None, help="cpu, cuda  [default: the backend's]")
    parser.add_argument("--logdir", default=None, help="default: runs/coma/<env>-seed<seed>")
    parser.add_argument("--total-steps", type=int, default=500_000, help="joint env steps (all agents act once)")
    parser.add_argument("--num-envs", type=int, default=10, help="episodes per update (EPyMARL: batch_size_run 10)")
    parser.add_argument("--actors", type=int, default=0, help="remote actors playing --num-envs envs each")
    parser.add_argument("--address", default=None, help="xparl cluster address [default: an embedded cluster]")
    parser.add_argument("--actor-lr", type=float, default=5e-4)
    parser.add_argument("--critic-lr", type=float, default=5e-4)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--td-lambda", type=float, default=0.8)
    parser.add_argument("--grad-norm-clip", type=float, default=10.0)
    parser.add_argument("--entropy-coeff", type=float, default=0.0)
    parser.add_argument("--target-update", type=int, default=20, help="learn calls between target syncs")
    parser.add_argument("--epsilon-start", type=float, default=0.5)
    parser.add_argument("--epsilon-finish", type=float, default=0.01)
    parser.add_argument("--epsilon-anneal-steps", type=int, default=100_000)
    parser.add_argument("--eval-every", type=int, default=25_000)
    parser.add_argument("--eval-episodes", type=int, default=100)
    parser.add_argument("--eval-mode", choices=("sample", "greedy"), default="sample",
                        help="sample from the policy (EPyMARL's COMA) or take its argmax (PARL's test mode)")
    parser.add_argument("--restore", default=None, help="weights (coma.ckpt) to start from")
    parser.add_argument("--no-progress", action="store_true")
    add_run_args(parser)
    args = parser.parse_args()
    logdir = args.resume or args.logdir or os.path.join("runs", "coma", f"{args.env.replace(':', '-')}-seed{args.seed}")
    make_env(args.env).close()  # an sc2: id without SMAC stops here, with the install steps
    run = RunLog(logdir)
    ops = importlib.import_module(f"parl_algorithms.{args.backend}.ops")
    ops.seed(args.seed)  # also one CPU thread
    if args.backend == "torch":
        import torch

        torch.set_num_threads(1)

    player = Player(args.env, args.num_envs, args.seed, args.backend)
    evaluator = Player(args.env, args.eval_episodes, args.seed + 10_000, args.backend)
    env = player.envs
    model = define_model(args.backend)(env.n_agents, env.n_actions, env.obs_dim, env.state_dim)
    alg = parl.algorithms.COMA(model, env.n_actions, env.n_agents, grad_norm_clip=args.grad_norm_clip,
                               actor_lr=args.actor_lr, critic_lr=args.critic_lr, gamma=args.gamma,
                               td_lambda=args.td_lambda, entropy_coeff=args.entropy_coeff,
                               **_device(args.backend, args.device))
    agent = parl.Agent(alg)
    if args.restore:
        agent.restore(args.restore)
    actors = []
    if args.actors:
        parl.connect(args.address) if args.address else parl.connect()
        actors = [RemotePlayer(args.env, args.num_envs, args.seed + 1 + i, args.backend) for i in range(args.actors)]

    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args))
    ckpt.register(alg=alg, player=player, evaluator=evaluator)
    c = ckpt.track(env_steps=0, learn_calls=0, next_eval=0, train_returns=[], last_eval=None)
    ckpt.start()  # (a resumed run continues from its checkpoint: counters, networks, RMSprop, generators)

    def epsilon_at(step: int) -> float:
        frac = min(step / max(args.epsilon_anneal_steps, 1), 1.0)
        return args.epsilon_start + frac * (args.epsilon_finish - args.epsilon_start)

    def evaluate() -> np.ndarray:
        return evaluator.play(alg, 0.0, greedy=args.eval_mode == "greedy", record=False)[1]

    bar = tqdm(total=args.total_steps, initial=c.env_steps, disable=args.no_progress, unit="step")
    while True:
        if c.env_steps >= c.next_eval or c.env_steps >= args.total_steps:
            c.last_eval = evaluate()
            train_mean = float(np.mean(c.train_returns)) if c.train_returns else float("nan")
            run.row({"env_steps": c.env_steps, "wall_s": round(run.elapsed(), 2),
                     "eval_return_mean": float(c.last_eval.mean()), "eval_return_std": float(c.last_eval.std()),
                     "train_return_mean": train_mean, "epsilon": round(epsilon_at(c.env_steps), 4)})
            run.scalar("eval/return_mean", float(c.last_eval.mean()), c.env_steps)
            bar.set_postfix(eval=f"{c.last_eval.mean():.3f}", train=f"{train_mean:.3f}")
            c.train_returns = []
            c.next_eval += args.eval_every
            if c.env_steps >= args.total_steps:
                break
        ckpt.maybe_save(c.env_steps)  # between two updates: every episode has ended
        epsilon = epsilon_at(c.env_steps)
        if actors:
            weights = alg.model.get_weights()
            futures = [actor.play(weights, epsilon) for actor in actors]
            results = [future.get() for future in futures]
            batch = merge([b for b, _, _ in results])
            returns = np.concatenate([r for _, r, _ in results])
            lengths = np.concatenate([n for _, _, n in results])
        else:
            batch, returns, lengths = player.play(alg, epsilon)
        alg.learn(batch, epsilon)
        c.learn_calls += 1
        if c.learn_calls % args.target_update == 0:
            alg.sync_target()
        c.env_steps += int(lengths.sum())
        bar.update(int(lengths.sum()))
        c.train_returns.extend(returns.tolist())
        run.scalar("train/episode_return", float(returns.mean()), c.env_steps)
        if c.learn_calls % 20 == 0:
            for key, value in alg.get_info().items():
                run.scalar(key, value, c.env_steps)
            run.scalar("train/epsilon", epsilon, c.env_steps)
            run.scalar("time/env_steps_per_s", c.env_steps / run.elapsed(), c.env_steps)
    bar.close()
    agent.save(os.path.join(logdir, "coma.ckpt"))
    run.close()
    wall = run.elapsed()
    final = c.last_eval  # the evaluation at env_steps >= total_steps
    result = run.write_summary({
        "algorithm": "COMA", "env_id": env.env_id, "env_version": env.env_version, "reward_unit": (
            "team return: the sum over agents of the episode's rewards (" + env.reward_unit + ")"),
        "backend": args.backend, "seed": args.seed, "actors": args.actors, "num_envs": args.num_envs,
        "eval_return_mean": float(final.mean()), "eval_return_std": float(final.std()),
        "eval_episodes": int(len(final)), "env_steps": c.env_steps, "learn_calls": c.learn_calls,
        "wall_s": round(wall, 2), "env_steps_per_s": round(c.env_steps / wall, 1),
        "epsilon_final": epsilon_at(c.env_steps), "eval_mode": args.eval_mode,
    })
    ckpt.finish(c.env_steps)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
