"""``parl.env.multiagent_simple_env``: PARL 2.x's older path of ``MAenv`` (the MPE wrapper, lists in, lists out).

PARL's module wrapped the retired ``multiagent-particle-envs`` package; here the name is
``parl_core.env.multiagent_env.MAenv`` (the same scenarios on mpe2; ``pip install 'parl-core[marl]'``).
"""

from parl_core.env.multiagent_env import MAenv

__all__ = ["MAenv"]
