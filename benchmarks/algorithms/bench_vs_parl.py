"""Time one update and one acting step of our algorithms on paddle against PARL 2.2.1's own classes on paddle.

Both sides run the same file: ``--worker`` imports ``parl`` (ours from this tree, or PARL 2.2.1 from the
benchmark venv of ``benchmarks/requirements-parl221.txt``), builds the same ``parl.Model`` networks with
the same hyperparameters (PARL's QuickStart and examples), feeds the same random fixed batches, and prints
one JSON line per algorithm: milliseconds per ``learn()`` and per acting step (numpy observation ->
``paddle.to_tensor`` -> ``predict`` / ``sample`` -> numpy action, as PARL's agents do), each the minimum over
``--passes`` passes (the minimum is the least disturbed by other jobs on a shared machine). The default
(driver) mode runs ours and PARL's workers alternately, pass by pass, and prints the table with ratios.
``--ours-nets mlp`` builds our side's networks from ``parl_algorithms.paddle.nets.MLP`` (what our examples use:
the same layers, sizes, activations and default initialisation as the ``nn.Linear`` stacks, one module call per
network) instead of the ``nn.Linear`` code both sides share by default.

PARL 2.2.1 runs on paddle only in this set-up: paddlepaddle 2.6.2, numpy < 2, ``PARL_BACKEND=paddle`` (its
framework detection fails otherwise; on paddle 3.x its ``Model`` has no parameters).

Usage::

    python -m venv /tmp/parl221 && /tmp/parl221/bin/pip install -r benchmarks/requirements-parl221.txt
    /tmp/parl221/bin/pip install --no-deps --no-build-isolation parl==2.2.1
    python benchmarks/algorithms/bench_vs_parl.py --parl-python /tmp/parl221/bin/python
    python benchmarks/algorithms/bench_vs_parl.py --parl-python /tmp/parl221/bin/python --algos pg dqn --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
ALGOS = ("pg", "dqn", "ddpg", "td3", "sac")
# hyperparameters of PARL's QuickStart (PG) and examples (DQN CartPole; DDPG / TD3 / SAC MuJoCo, Pendulum sizes)
SETTINGS = {
    "pg": {"obs_dim": 4, "act_dim": 2, "batch": 200},
    "dqn": {"obs_dim": 4, "act_dim": 2, "batch": 64},
    "ddpg": {"obs_dim": 3, "act_dim": 1, "batch": 256},
    "td3": {"obs_dim": 3, "act_dim": 1, "batch": 256},
    "sac": {"obs_dim": 3, "act_dim": 1, "batch": 256},
}


def _models(parl, paddle, nets="linear"):
    """The networks of PARL's QuickStart and examples, written once against the ``parl.Model`` API
    (``nets="mlp"``: their ``nn.Linear`` stacks as our ``parl_algorithms.paddle.nets.MLP``)."""
    nn, F = paddle.nn, paddle.nn.functional
    if nets == "mlp":
        from parl_algorithms.paddle.nets import MLP

        class CartpoleMLP(parl.Model):
            def __init__(self, obs_dim, act_dim):
                super().__init__()
                self.net = MLP([obs_dim, act_dim * 10, act_dim], activation="tanh")

            def forward(self, x):
                return F.softmax(self.net(x), axis=-1)

        class QMLP(parl.Model):
            def __init__(self, obs_dim, act_dim):
                super().__init__()
                self.net = MLP([obs_dim, 128, 128, act_dim])

            def forward(self, obs):
                return self.net(obs)

    class CartpoleModel(parl.Model):  # QuickStart: hidden = 10 * act_dim, tanh, softmax
        def __init__(self, obs_dim, act_dim):
            super().__init__()
            self.fc1 = nn.Linear(obs_dim, act_dim * 10)
            self.fc2 = nn.Linear(act_dim * 10, act_dim)

        def forward(self, x):
            return F.softmax(self.fc2(paddle.tanh(self.fc1(x))), axis=-1)

    class QModel(parl.Model):  # examples/DQN: 128-128 ReLU
        def __init__(self, obs_dim, act_dim):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = nn.Linear(obs_dim, 128), nn.Linear(128, 128), nn.Linear(128, act_dim)

        def forward(self, obs):
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(obs)))))

    def mlp(inp, out):
        if nets == "mlp":
            return MLP([inp, 256, 256, out])
        return nn.Sequential(nn.Linear(inp, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, out))

    class ActorCritic(parl.Model):  # examples/DDPG, TD3, SAC: 256-256 actor and critic(s)
        def __init__(self, obs_dim, act_dim, twin=False, gaussian=False):
            super().__init__()
            self.gaussian = gaussian
            self.actor = mlp(obs_dim, act_dim * (2 if gaussian else 1))
            self.q1 = mlp(obs_dim + act_dim, 1)
            self.q2 = mlp(obs_dim + act_dim, 1) if twin else None

        def policy(self, obs):
            out = self.actor(obs)
            if self.gaussian:
                mean, log_std = paddle.chunk(out, 2, axis=-1)
                return mean, paddle.clip(log_std, -20.0, 2.0)
            return paddle.tanh(out)

        def value(self, obs, act):
            x = paddle.concat([obs, act], axis=1)
            return (self.q1(x), self.q2(x)) if self.q2 is not None else self.q1(x)

        def Q1(self, obs, act):  # noqa: N802 (PARL's name)
            return self.q1(paddle.concat([obs, act], axis=1))

        def get_actor_params(self):
            return self.actor.parameters()

        def get_critic_params(self):
            return self.q1.parameters() + (self.q2.parameters() if self.q2 is not None else [])

    if nets == "mlp":
        return CartpoleMLP, QMLP, ActorCritic
    return CartpoleModel, QModel, ActorCritic


def _build(algo, parl, paddle, rng, nets="linear"):
    """``(algorithm, learn_args, act)``: PARL's constructor call, one batch, one acting step."""
    cartpole, qmodel, actor_critic = _models(parl, paddle, nets)
    s = SETTINGS[algo]
    obs_dim, act_dim, b = s["obs_dim"], s["act_dim"], s["batch"]
    obs = rng.normal(size=(b, obs_dim)).astype(np.float32)
    col = rng.normal(size=(b, 1)).astype(np.float32)
    done = np.zeros((b, 1), np.float32)
    one_obs = rng.normal(size=obs_dim).astype(np.float32)
    if algo == "pg":
        alg = parl.algorithms.PolicyGradient(cartpole(obs_dim, act_dim), lr=1e-3)
        args = (obs, rng.integers(0, act_dim, (b, 1)).astype(np.int64), col)

        def act():  # QuickStart's agent.sample: prob of one obs, numpy choice
            prob = alg.predict(paddle.to_tensor(one_obs[None])).numpy()[0]
            return int(rng.choice(act_dim, p=prob / prob.sum()))
    elif algo == "dqn":
        alg = parl.algorithms.DQN(qmodel(obs_dim, act_dim), gamma=0.99, lr=5e-4)
        args = (obs, rng.integers(0, act_dim, (b, 1)).astype(np.int64), col, obs[::-1].copy(), done)

        def act():  # the DQN example's agent.predict: greedy action of one obs
            return int(alg.predict(paddle.to_tensor(one_obs[None])).numpy()[0].argmax())
    else:
        act_batch = np.tanh(rng.normal(size=(b, act_dim))).astype(np.float32)
        args = (obs, act_batch, col, obs[::-1].copy(), done)
        if algo == "ddpg":
            alg = parl.algorithms.DDPG(
                actor_critic(obs_dim, act_dim), gamma=0.99, tau=0.005, actor_lr=3e-4, critic_lr=3e-4
            )
        elif algo == "td3":
            alg = parl.algorithms.TD3(
                actor_critic(obs_dim, act_dim, twin=True),
                gamma=0.99,
                tau=0.005,
                actor_lr=3e-4,
                critic_lr=3e-4,
                policy_noise=0.2,
                noise_clip=0.5,
                policy_freq=2,
            )
        else:
            alg = parl.algorithms.SAC(
                actor_critic(obs_dim, act_dim, twin=True, gaussian=True),
                gamma=0.99,
                tau=0.005,
                alpha=0.2,
                actor_lr=3e-4,
                critic_lr=3e-4,
            )

        def act():  # the examples' agent.sample for continuous control
            out = (
                alg.sample(paddle.to_tensor(one_obs[None]))
                if algo == "sac"
                else alg.predict(paddle.to_tensor(one_obs[None]))
            )
            out = out[0] if isinstance(out, (tuple, list)) else out
            return out.numpy()[0]

    return alg, args, act


def _time_ms(fn, calls, passes):
    best = float("inf")
    for _ in range(passes):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls * 1e3)
    return best


def worker(algos, updates, steps, passes, nets="linear"):
    """Run inside either Python: time every algorithm, print one JSON line each."""
    import warnings

    warnings.filterwarnings("ignore")
    import paddle

    import parl

    paddle.set_device("cpu")
    for algo in algos:
        paddle.seed(0)
        rng = np.random.default_rng(0)
        alg, args, act = _build(algo, parl, paddle, rng, nets)
        tensors = [paddle.to_tensor(a) for a in args]
        for _ in range(20):
            alg.learn(*tensors)
            act()
        learn_ms = _time_ms(lambda: alg.learn(*tensors), updates, passes)  # noqa: B023
        act_ms = _time_ms(act, steps, passes)
        print(
            json.dumps(
                {
                    "algo": algo,
                    "learn_ms": learn_ms,
                    "act_ms": act_ms,
                    "paddle": paddle.__version__,
                    "parl": getattr(parl, "__version__", "?"),
                    "parl_file": parl.__file__,
                }
            ),
            flush=True,
        )


def _run(python, env, algos, args, nets="linear"):
    cmd = [
        python,
        __file__,
        "--worker",
        "--algos",
        *algos,
        "--updates",
        str(args.updates),
        "--steps",
        str(args.steps),
        "--passes",
        str(args.passes),
        "--ours-nets",
        nets,
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{python} worker failed:\n{out.stderr[-3000:]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parl-python", help="the Python of the PARL 2.2.1 + paddlepaddle 2.6.2 venv")
    parser.add_argument("--ours-python", default=sys.executable, help="the Python that runs ours (paddle 3.x)")
    parser.add_argument("--algos", nargs="+", choices=ALGOS, default=list(ALGOS))
    parser.add_argument("--updates", type=int, default=100, help="learn() calls per pass")
    parser.add_argument("--steps", type=int, default=200, help="acting steps per pass")
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2, help="ours / PARL worker pairs, alternating")
    parser.add_argument("--ours-nets", choices=("linear", "mlp"), default="linear",
                        help="our side's networks: the shared nn.Linear code, or parl_algorithms.paddle.nets.MLP")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.algos, args.updates, args.steps, args.passes, args.ours_nets)
        return
    if not args.parl_python:
        parser.error("--parl-python is required (the venv of benchmarks/requirements-parl221.txt)")
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    base["PARL_BACKEND"] = "paddle"
    ours_path = os.pathsep.join(
        str(ROOT / "packages" / p / "src") for p in ("parl-core", "parl-algorithms", "parl-remote", "parl")
    )
    sides = {
        "ours": (args.ours_python, {**base, "PYTHONPATH": ours_path}),
        "parl": (args.parl_python, {**base, "PYTHONPATH": ""}),
    }
    best: dict[tuple[str, str], dict] = {}
    for _ in range(args.rounds):
        for side, (python, env) in sides.items():
            for row in _run(python, env, args.algos, args, args.ours_nets if side == "ours" else "linear"):
                key = (side, row["algo"])
                if key not in best:
                    best[key] = row
                else:
                    for k in ("learn_ms", "act_ms"):
                        best[key][k] = min(best[key][k], row[k])
    print(
        f"ours: paddle {best['ours', args.algos[0]]['paddle']}; PARL {best['parl', args.algos[0]]['parl']} "
        f"(pip parl==2.2.1): paddle {best['parl', args.algos[0]]['paddle']}; ours' networks: {args.ours_nets}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print("| algo | ms per update, ours / PARL | ratio PARL / ours | ms per acting step, ours / PARL | ratio |")
    print("|---|---|---|---|---|")
    for algo in args.algos:
        o, p = best["ours", algo], best["parl", algo]
        print(
            f"| {algo} | {o['learn_ms']:.3f} / {p['learn_ms']:.3f} | {p['learn_ms'] / o['learn_ms']:.2f}x | "
            f"{o['act_ms']:.3f} / {p['act_ms']:.3f} | {p['act_ms'] / o['act_ms']:.2f}x |"
        )


if __name__ == "__main__":
    main()
