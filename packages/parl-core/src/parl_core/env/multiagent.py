"""Multi-agent environments behind one interface: per-agent arrays, the global state, available-action masks,
and ``terminated`` / ``truncated`` kept apart.

Three families, each from its own package (the extra ``pip install 'parl-core[marl]'``):

- MPE (Lowe et al. 2017, "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive Environments") from
  ``mpe2``, the PettingZoo parallel API: ids ``"mpe2:<module>"``, e.g. ``"mpe2:simple_spread_v3"``.
- Level-Based Foraging (Albrecht & Ramamoorthy 2013; Papoudakis et al. 2021) from ``lbforaging``: ids
  ``"Foraging-8x8-2p-2f-coop-v3"`` (or ``"lbforaging:Foraging-..."``).
- The multi-robot warehouse RWARE (Papoudakis et al. 2021) from ``rware``: ids ``"rware-tiny-2ag-v2"``
  (or ``"rware:rware-..."``).

:func:`make_multiagent_env` builds a :class:`MultiAgentEnv`; :class:`MultiAgentVectorEnv` steps several in
this process and resets each the step its episode ends. None of the env packages is imported until an env
is made.
"""

from __future__ import annotations

import re
from typing import Any

from parl_core.env import _multiagent_families as families
from parl_core.env._multiagent_core import MultiAgentEnv
from parl_core.env._multiagent_families import MPE2_MODULES
from parl_core.env._multiagent_vector import MultiAgentVectorEnv

__all__ = ["MultiAgentEnv", "MultiAgentVectorEnv", "make_multiagent_env"]

_VERSIONED = re.compile(r"^(?P<base>[a-z_]+?)_v\d+$")
_ID_FORMS = (
    "'mpe2:<module>' (e.g. 'mpe2:simple_spread_v3'), 'Foraging-8x8-2p-2f-coop-v3' (LBF, optionally "
    "'lbforaging:'-prefixed) or 'rware-tiny-2ag-v2' (RWARE, optionally 'rware:'-prefixed)"
)


def _old_mpe_name(env_id: str) -> str | None:
    """The mpe2 id for an MPE name in another form (PettingZoo's, PARL's, an old version), else None."""
    name = env_id
    for prefix in ("pettingzoo.mpe.", "pettingzoo.mpe:", "mpe.", "mpe:", "mpe/", "mpe2:", "mpe2."):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    match = _VERSIONED.match(name)
    base = match.group("base") if match else name
    if base not in MPE2_MODULES:
        return None
    fixed = f"mpe2:{MPE2_MODULES[base]}"
    return None if fixed == env_id else fixed


def make_multiagent_env(env_id: str, **kwargs: Any) -> MultiAgentEnv:
    """Makes a multi-agent env with the interface of :class:`MultiAgentEnv`.

    Args:
        env_id: ``"mpe2:<module>"`` (``"mpe2:simple_spread_v3"``, ``"mpe2:simple_speaker_listener_v4"``, ...),
            an LBF id ``"Foraging{-2s}-{S}x{S}-{P}p-{F}f{-coop}-v3"`` or an RWARE id
            ``"rware-{tiny,small,medium,large}-{N}ag{-easy,-hard}-v2"``; the last two may carry the
            ``"lbforaging:"`` / ``"rware:"`` prefix.
        **kwargs: mpe2: passed to the module's ``parallel_env`` (``N=3, local_ratio=0.0, max_cycles=25,
            continuous_actions=False``, ...); LBF / RWARE: passed to ``gymnasium.make`` (the env's constructor
            arguments, e.g. RWARE's ``max_steps``); LBF's ``max_episode_steps`` sets its step limit.

    Returns:
        The env, not yet reset.

    Raises:
        ValueError: an old PettingZoo / PARL MPE name (``"simple_spread_v2"``, ``"pettingzoo.mpe.simple_spread_v2"``;
            the message names the mpe2 id) or an id of no supported family.
        ImportError: the env's package is missing (names ``pip install 'parl-core[marl]'``).
    """
    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a str such as 'mpe2:simple_spread_v3', got {type(env_id).__name__}")
    fixed = _old_mpe_name(env_id)
    if fixed is not None:
        raise ValueError(
            f"{env_id!r} is an old PettingZoo / PARL MPE name (pettingzoo.mpe is gone; MPE lives in mpe2): "
            f"use make_multiagent_env({fixed!r})"
        )
    if env_id.startswith("mpe2:"):
        return families.MPE2Env(env_id, **kwargs)
    bare = env_id.split(":", 1)[1] if env_id.startswith(("lbforaging:", "rware:")) else env_id
    if bare.startswith("Foraging") and not env_id.startswith("rware:"):
        return families.ForagingEnv(env_id, bare, **kwargs)
    if bare.startswith("rware") and not env_id.startswith("lbforaging:"):
        return families.WarehouseEnv(env_id, bare, **kwargs)
    raise ValueError(f"unknown multi-agent env id {env_id!r}; use {_ID_FORMS}")
