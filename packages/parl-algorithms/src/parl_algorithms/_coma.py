"""Framework-free pieces of COMA (Foerster et al. 2018, "Counterfactual Multi-Agent Policy Gradients"),
shared by the torch and paddle ``COMA``: hyperparameter checks with PARL's defaults, the episode-batch layout
and its checks (one error text per mistake, whatever the backend), and the numpy TD(lambda) recursion (the
reference the backends' ``coma_td_lambda_targets`` are tested against).

Batch layout (PARL's ``benchmark/torch/coma``; ``E`` episodes, ``T`` steps, ``n`` agents, ``A`` actions), a dict:

- ``r``: float32 ``[E, T, 1]``, the team reward of step t (the sum over agents).
- ``u``: int64 ``[E, T, n, 1]``, the action each agent took at step t.
- ``avail_u``: float32 / bool ``[E, T, n, A]``, 1 where the action was available.
- ``padded``: float32 ``[E, T, 1]``, 1 on the padding after an episode's end.
- ``isover``: float32 ``[E, T, 1]``, 1 on an episode's last step (and on its padding).
- ``actor_inputs``: float32 ``[E, T, n, D_actor]``, the actor's input at step t (obs, last action, id).
- ``critic_inputs``: float32 ``[E, T, n, D_critic]``, the critic's input at step t (state, u^-a, id, ...).
- ``critic_inputs_next``: float32 ``[E, T, n, D_critic]``, the critic's input at step t + 1.
- ``terminated`` (optional): float32 ``[E, T, 1]``, 1 where the episode terminated (no bootstrap); default
  ``isover`` (PARL: a time limit ends the return too).
- ``u_next`` (optional): int64 ``[E, T, n, 1]``, the action at t + 1 the TD target evaluates; default ``u``
  shifted by one step (PARL); give it to bootstrap a truncated episode from its final observation.
- ``o``, ``s``, ``u_onehot``: PARL's agent sends them; unused, checked for ``n`` when present.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from parl_algorithms._validation import positive, unit_interval

__all__ = ["CONTINUOUS_HINT", "REQUIRED_KEYS", "coma_hyperparameters", "coma_epsilon", "check_coma_batch",
           "check_model_sizes", "td_lambda_targets"]

CONTINUOUS_HINT = ("COMA here is for Discrete action spaces (its counterfactual baseline sums Q over every "
                   "action of an agent); for a continuous (Box) action space use MADDPG or MAPPO")

REQUIRED_KEYS = ("r", "u", "avail_u", "padded", "isover", "actor_inputs", "critic_inputs", "critic_inputs_next")

# PARL's benchmark/torch/coma/coma_config.py
DEFAULTS = {"grad_norm_clip": 10.0, "actor_lr": 1e-4, "critic_lr": 1e-3, "gamma": 0.99, "td_lambda": 0.8}


def _count(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"COMA needs {name} an int >= {minimum}, got {name}={value!r}; e.g. "
                         f"COMA(model, n_actions=env.n_actions, n_agents=env.n_agents)")
    return int(value)


def n_actions_of(n_actions: Any) -> int:
    """``n_actions`` as an int; a gymnasium ``Discrete`` space gives its ``n``.

    Raises:
        ValueError: a Box (continuous) space or an array of action bounds (names MADDPG / MAPPO), or not an
            int >= 2.
    """
    if hasattr(n_actions, "low") and hasattr(n_actions, "high"):
        raise ValueError(f"COMA got a continuous action space {n_actions!r}; {CONTINUOUS_HINT}")
    if hasattr(n_actions, "n") and not isinstance(n_actions, (int, np.integer)):
        n_actions = n_actions.n
    return _count(n_actions, "n_actions", 2)


def coma_hyperparameters(n_actions: Any, n_agents: Any, grad_norm_clip: Any, actor_lr: Any, critic_lr: Any,
                         gamma: Any, td_lambda: Any, entropy_coeff: Any) -> dict[str, Any]:
    """COMA's checked constructor arguments; ``None`` takes PARL's ``coma_config.py`` value.

    Returns:
        ``{"n_actions": int, "n_agents": int, "grad_norm_clip", "actor_lr", "critic_lr", "gamma",
        "td_lambda", "entropy_coeff": float}``.

    Raises:
        ValueError: a value is out of range or of the wrong kind (the message gives an example), or
            ``n_actions`` is a continuous action space (the message names MADDPG / MAPPO).
    """
    def pick(value: Any, name: str) -> Any:
        return DEFAULTS[name] if value is None else value

    entropy = 0.0 if entropy_coeff is None else entropy_coeff
    if isinstance(entropy, bool) or not isinstance(entropy, (int, float)) or entropy < 0:
        raise ValueError(f"COMA needs entropy_coeff >= 0, got {entropy!r}; e.g. COMA(..., entropy_coeff=0.001)")
    return {
        "n_actions": n_actions_of(n_actions),
        "n_agents": _count(n_agents, "n_agents", 1),
        "grad_norm_clip": positive(pick(grad_norm_clip, "grad_norm_clip"), "grad_norm_clip", "COMA", "10"),
        "actor_lr": positive(pick(actor_lr, "actor_lr"), "actor_lr", "COMA", "1e-4"),
        "critic_lr": positive(pick(critic_lr, "critic_lr"), "critic_lr", "COMA", "1e-3"),
        "gamma": unit_interval(pick(gamma, "gamma"), "gamma", "COMA", "0.99"),
        "td_lambda": unit_interval(pick(td_lambda, "td_lambda"), "td_lambda", "COMA", "0.8"),
        "entropy_coeff": float(entropy),
    }


def check_model_sizes(model: Any, n_agents: int, n_actions: int) -> None:
    """Raise when the model declares ``n_agents`` / ``n_actions`` attributes (PARL's ``ComaModel`` does) that
    differ from the constructor's.

    Raises:
        ValueError: a mismatch; the message names both numbers and the fix.
    """
    for name, expected in (("n_agents", n_agents), ("n_actions", n_actions)):
        declared = getattr(model, name, None)
        if isinstance(declared, (int, np.integer)) and not isinstance(declared, bool) and declared != expected:
            raise ValueError(f"COMA: the model was built for {name}={int(declared)} but COMA got {name}={expected}; "
                             f"build the model and COMA from the same env (COMA(model, n_actions=..., n_agents=...) "
                             "with the env's numbers)")


def coma_epsilon(epsilon: Any) -> float:
    """``learn``'s exploration rate as a float in ``[0, 1]`` (a one-element tensor is accepted).

    Raises:
        ValueError: missing or outside ``[0, 1]``.
    """
    if hasattr(epsilon, "item") and getattr(epsilon, "ndim", 0) <= 1:
        epsilon = epsilon.item()
    if epsilon is None or isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) \
            or not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"COMA.learn needs epsilon, the exploration rate the batch was collected with, in [0, 1]; "
                         f"got {epsilon!r}; e.g. alg.learn(batch, epsilon=0.05)")
    return float(epsilon)


def _shape(value: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in value.shape)


def _numpy(value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach"):  # torch
        return value.detach().cpu().numpy()
    if hasattr(value, "numpy"):  # paddle
        return value.numpy()
    return np.asarray(value)


def check_coma_batch(batch: Any, n_agents: int, n_actions: int) -> tuple[int, int]:
    """Check ``COMA.learn``'s episode batch (tensors of either framework or numpy arrays); return ``(E, T)``.

    Shapes are those of the module's table. Values: ``padded`` and ``isover`` hold 0 / 1; once a row is
    padded it stays padded; each episode's last unpadded step has ``isover = 1`` (so every return ends where
    its episode does) and the step after an ``isover`` is padding; ``terminated`` (if given) is 1 only where
    ``isover`` is; every unpadded step has an available action per agent and its action ``u`` is in
    ``[0, n_actions)``.

    Raises:
        TypeError: ``batch`` is not a dict.
        ValueError: a key is missing (``padded`` included: COMA masks the padding of short episodes), a shape
            does not fit (``n_agents`` / ``n_actions`` included) or the padding is inconsistent; the message
            names the key and the fix. Fractional actions name MADDPG / MAPPO.
    """
    if not isinstance(batch, dict):
        raise TypeError(f"COMA.learn needs batch as a dict of {', '.join(REQUIRED_KEYS)} (PARL's layout), got "
                        f"{type(batch).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in batch]
    if missing:
        hint = (" (padded: float32 [E, T, 1], 1 on the padding after each episode's end, 0 on real steps; "
                "all zeros when every episode fills the T steps)") if "padded" in missing else ""
        raise ValueError(f"COMA.learn: the batch lacks {missing}{hint}; it needs {list(REQUIRED_KEYS)} as PARL's "
                         "benchmark/torch/coma/sc2_agent.py builds them")
    r = _shape(batch["r"])
    if len(r) != 3 or r[2] != 1:
        raise ValueError(f"COMA.learn: batch['r'] must be the team reward float32 [E, T, 1], got {r}; sum the "
                         "agents' rewards (COMA learns one centralised critic of the common reward)")
    episodes, steps = r[:2]
    expected = {
        "u": (episodes, steps, n_agents, 1), "avail_u": (episodes, steps, n_agents, n_actions),
        "padded": (episodes, steps, 1), "isover": (episodes, steps, 1),
        "terminated": (episodes, steps, 1), "u_next": (episodes, steps, n_agents, 1),
        "u_onehot": (episodes, steps, n_agents, n_actions),
    }
    for key, shape in expected.items():
        if key not in batch:
            continue
        got = _shape(batch[key])
        if key in ("u", "u_next") and got == shape[:3]:
            continue  # [E, T, n] is accepted for [E, T, n, 1]
        if got != shape:
            agents = "" if len(got) < 3 or got[2] == n_agents or len(shape) < 4 else \
                f" (the batch has {got[2]} agents, COMA was built for n_agents={n_agents}: build COMA with the " \
                "env's n_agents)"
            raise ValueError(f"COMA.learn: batch['{key}'] must be {list(shape)} ([E, T, ...] as batch['r'] "
                             f"{list(r)}, n_agents={n_agents}, n_actions={n_actions}), got {list(got)}{agents}")
    for key in ("o", "actor_inputs", "critic_inputs", "critic_inputs_next"):
        if key not in batch:
            continue
        got = _shape(batch[key])
        if len(got) != 4 or got[:3] != (episodes, steps, n_agents):
            raise ValueError(f"COMA.learn: batch['{key}'] must be float32 [E={episodes}, T={steps}, "
                             f"n_agents={n_agents}, dim], got {list(got)}; one row per agent (COMA was built for "
                             f"n_agents={n_agents})")
    if _shape(batch["critic_inputs_next"]) != _shape(batch["critic_inputs"]):
        raise ValueError(f"COMA.learn: batch['critic_inputs_next'] {list(_shape(batch['critic_inputs_next']))} must "
                         f"have the shape of batch['critic_inputs'] {list(_shape(batch['critic_inputs']))} (the "
                         "critic's input one step later)")
    _check_values(batch, n_actions)
    return episodes, steps


def _check_values(batch: Any, n_actions: int) -> None:
    padded = _numpy(batch["padded"])[..., 0].astype(np.float64)
    isover = _numpy(batch["isover"])[..., 0].astype(np.float64)
    for key, value in (("padded", padded), ("isover", isover)):
        if not np.isin(value, (0.0, 1.0)).all():
            raise ValueError(f"COMA.learn: batch['{key}'] must hold 0 / 1 flags, got values "
                             f"{sorted(set(np.unique(value).tolist()))[:5]}")
    if (np.diff(padded, axis=1) < 0).any():
        raise ValueError("COMA.learn: wrong padding: an unpadded step follows a padded one in batch['padded']; "
                         "one row per episode, its real steps first, then padding (padded = 1) to T")
    real = padded == 0
    if not real[:, 0].all():
        raise ValueError("COMA.learn: wrong padding: an episode row starts with padding (padded[:, 0] = 1); drop "
                         "empty episodes from the batch")
    last = real & ~np.concatenate([real[:, 1:], np.zeros_like(real[:, :1])], axis=1)
    if (isover[last] != 1).any():
        raise ValueError("COMA.learn: wrong padding: an episode's last unpadded step must have isover = 1 (its "
                         "return ends there); set isover = 1 on the last step and on the padding, and pass "
                         "terminated (0 on a time limit) with u_next to bootstrap a truncated episode")
    if (isover[:, :-1].astype(bool) & real[:, 1:]).any():
        raise ValueError("COMA.learn: wrong padding: a step after isover = 1 is not padded; one episode per row, "
                         "padded = 1 after its end")
    if "terminated" in batch:
        terminated = _numpy(batch["terminated"])[..., 0].astype(np.float64)
        if not np.isin(terminated, (0.0, 1.0)).all() or (terminated[real] > isover[real]).any():
            raise ValueError("COMA.learn: batch['terminated'] must hold 0 / 1 and be 1 only on an episode's last "
                             "step (where isover = 1)")
    avail = _numpy(batch["avail_u"])
    if not (avail[real].sum(-1) > 0).all():
        raise ValueError("COMA.learn: an unpadded step has an agent with no available action in batch['avail_u']; "
                         "avail_u must have a 1 for every action the env allowed")
    for key in ("u", "u_next"):
        if key not in batch:
            continue
        u = _numpy(batch[key])
        u = u[..., 0] if u.ndim == 4 else u
        if np.issubdtype(u.dtype, np.floating) and not np.array_equal(u, np.round(u)):
            raise ValueError(f"COMA.learn: batch['{key}'] must hold action indices; got fractional values. "
                             f"{CONTINUOUS_HINT}")
        taken = u[real] if key == "u" else u[real & (isover == 0)]
        if taken.size and (taken.min() < 0 or taken.max() >= n_actions):
            raise ValueError(f"COMA.learn: batch['{key}'] holds actions in [{int(taken.min())}, {int(taken.max())}]"
                             f", outside [0, n_actions={n_actions})")


def td_lambda_targets(r: np.ndarray, q_next: np.ndarray, terminated: np.ndarray, isover: np.ndarray,
                      padded: np.ndarray, gamma: float, td_lambda: float) -> np.ndarray:
    """TD(lambda) targets of COMA's critic by the backward recursion (Foerster et al. 2018, sec. 4; Sutton &
    Barto eq. 12.18), numpy reference of the backends' ``coma_td_lambda_targets``.

    ``G_t = r_t + gamma * (1 - terminated_t) * Q'_t`` on an episode's last step (``isover_t = 1``), else
    ``G_t = r_t + gamma * ((1 - lambda) * Q'_t + lambda * G_{t+1})``; 0 on padding. ``Q'_t`` is the target
    network's value of the next step's joint action, ``Q_target(s_{t+1}, u_{t+1})[u^a_{t+1}]``. ``lambda = 0`` is
    one-step TD, ``lambda = 1`` the Monte Carlo return (bootstrapped only at a truncation). Equal to PARL's
    weighted sum of n-step returns when ``terminated = isover``.

    Args:
        r: float ``[E, T, 1]`` team reward (broadcast over agents) or ``[E, T, n]``.
        q_next: float ``[E, T, n]`` ``Q'_t``.
        terminated, isover, padded: float ``[E, T, 1]`` flags.
        gamma: discount; td_lambda: lambda.

    Returns:
        float ``[E, T, n]`` targets (float64).
    """
    q_next = np.asarray(q_next, dtype=np.float64)
    r, terminated, isover, padded = (np.broadcast_to(np.asarray(x, dtype=np.float64), q_next.shape)
                                     for x in (r, terminated, isover, padded))
    targets = np.zeros_like(q_next)
    following = np.zeros_like(q_next[:, 0])
    for t in range(q_next.shape[1] - 1, -1, -1):
        cont = 1.0 - isover[:, t]
        boot = (1.0 - terminated[:, t]) * ((1.0 - td_lambda * cont) * q_next[:, t] + td_lambda * cont * following)
        following = (1.0 - padded[:, t]) * (r[:, t] + gamma * boot)
        targets[:, t] = following
    return targets
