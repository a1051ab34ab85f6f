"""Run EPyMARL's ``src/main.py`` from a checkout given on the command line, on today's env packages.

EPyMARL (uoe-agents/epymarl, HEAD cbc38c0) needs three things that this launcher supplies at run time, so that
an unmodified checkout runs here (none of EPyMARL's code is copied into this repository):

1. ``src/envs/__init__.py`` imports ``smaclite`` unconditionally, and smaclite does not install here: a stub
   module named ``smaclite`` is put in ``sys.modules`` when the real one is missing (it is only used by the
   SMAClite maps, which these benchmarks do not run).
2. Its ``pz-mpe-*`` keys import ``pettingzoo.mpe.*``, which PettingZoo >= 1.25 no longer ships (MPE moved to the
   ``mpe2`` package): the keys are registered again here for every ``mpe2`` scenario (``pz-mpe-simple-spread-v3``
   ...), with the scenario's keyword arguments taken from ``env_args`` (``env_args.N=3
   env_args.local_ratio=0.0 env_args.max_cycles=25``).
3. With current PettingZoo a parallel env's ``agents`` list is empty after the last step of an episode, and
   EPyMARL's ``PettingZooWrapper.step`` then replaced that step's rewards by zeros (the episode return missed
   its last step's reward). The mpe2 wrapper here keys every step by the fixed ``possible_agents`` list.

Sacred's file observer writes to ``--results DIR`` (``DIR/sacred/<alg>/<env key>/<run id>/``: ``config.json``,
``metrics.json`` with ``test_return_mean`` and its ``steps`` / ``timestamps``, ``run.json``, ``cout.txt``) instead
of ``<epymarl>/results``.

Usage (with EPyMARL's own venv; see benchmarks/README.md "Multi-agent")::

    python benchmarks/marl/epymarl_run.py --epymarl /path/to/epymarl --results /tmp/res -- \\
        --config=qmix --env-config=gymma with env_args.time_limit=50 \\
        env_args.key=lbforaging:Foraging-8x8-2p-2f-coop-v3 t_max=500000 seed=0
"""

from __future__ import annotations

import argparse
import importlib
import os
import runpy
import sys
import types


def _stub_smaclite() -> None:
    try:
        importlib.import_module("smaclite")
    except ImportError:
        sys.modules["smaclite"] = types.ModuleType("smaclite")


def _register_mpe2() -> None:
    """Registers ``pz-mpe-<scenario>`` for every mpe2 scenario, overriding EPyMARL's ``pettingzoo.mpe`` ones."""
    from pathlib import Path

    import gymnasium as gym
    import mpe2
    from envs.pz_wrapper import PettingZooWrapper  # EPyMARL's, for its attributes and render / close

    class MPE2Wrapper(PettingZooWrapper):
        """EPyMARL's PettingZooWrapper on an ``mpe2`` scenario, each step keyed by ``possible_agents``."""

        def __init__(self, env_name: str, **kwargs):  # noqa: D107 - no super().__init__: it imports pettingzoo.mpe
            gym.Env.__init__(self)
            self._env = importlib.import_module(f"mpe2.{env_name}").parallel_env(**kwargs)
            self._env.reset()
            self._agents = list(self._env.possible_agents)
            self.n_agents = len(self._agents)
            self.last_obs = None
            self.action_space = gym.spaces.Tuple(tuple(self._env.action_space(k) for k in self._agents))
            self.observation_space = gym.spaces.Tuple(tuple(self._env.observation_space(k) for k in self._agents))

        def reset(self, *args, **kwargs):
            obs, info = self._env.reset(*args, **kwargs)
            self.last_obs = tuple(obs[k] for k in self._agents)
            return self.last_obs, info

        def step(self, actions):
            obs, rewards, terms, truncs, infos = self._env.step(dict(zip(self._agents, actions, strict=True)))
            self.last_obs = tuple(obs[k] for k in self._agents)
            info = {f"{k}_{key}": value for k in self._agents for key, value in infos[k].items()}
            return (self.last_obs, [rewards[k] for k in self._agents], all(terms[k] for k in self._agents),
                    all(truncs[k] for k in self._agents), info)

    for path in sorted(Path(mpe2.__path__[0]).glob("*_v?.py")):
        key = f"pz-mpe-{path.stem.replace('_', '-')}"
        gym.registry.pop(key, None)
        gym.register(key, entry_point=lambda env_name=path.stem, **kw: MPE2Wrapper(env_name, **kw))


def _redirect_results(results: str) -> None:
    from sacred.observers import FileStorageObserver

    original = FileStorageObserver.create.__func__

    def create(cls, basedir, *args, **kwargs):
        marker = os.sep + "results" + os.sep
        tail = basedir.split(marker, 1)[1] if marker in basedir else os.path.basename(basedir)
        return original(cls, os.path.join(results, tail), *args, **kwargs)

    FileStorageObserver.create = classmethod(create)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epymarl", required=True, help="EPyMARL checkout (the folder holding src/main.py)")
    parser.add_argument("--results", required=True, help="sacred results go to RESULTS/sacred/...")
    parser.add_argument("epymarl_args", nargs=argparse.REMAINDER, help="after --: EPyMARL's own arguments")
    args = parser.parse_args()
    main_py = os.path.join(os.path.abspath(args.epymarl), "src", "main.py")
    if not os.path.isfile(main_py):
        raise SystemExit(f"--epymarl {args.epymarl!r}: no src/main.py there; pass the EPyMARL checkout's root")
    rest = args.epymarl_args[1:] if args.epymarl_args[:1] == ["--"] else args.epymarl_args
    sys.path.insert(0, os.path.dirname(main_py))
    _stub_smaclite()
    importlib.import_module("envs")  # registers EPyMARL's keys first, then ours override the pz-mpe ones
    _register_mpe2()
    _redirect_results(os.path.abspath(args.results))
    sys.argv = [main_py, *rest]
    runpy.run_path(main_py, run_name="__main__")


if __name__ == "__main__":
    main()
