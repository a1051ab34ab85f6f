"""COMA (Foerster et al. 2018, "Counterfactual Multi-Agent Policy Gradients", AAAI) with PARL's torch ``COMA``
API: a centralised critic with a counterfactual baseline, recurrent decentralised actors, a TD(lambda) critic;
written once for torch and paddle (PARL 2.2.1 had no paddle COMA).

The module holds, in the order of the paper: the hyperparameters with PARL's defaults, the episode batch's layout
and checks (one error text per mistake, whatever the backend), the numpy TD(lambda) recursion (the reference of
:func:`coma_td_lambda_targets`), the behaviour policy, the counterfactual advantage, the critic's targets and
loss, the actor's loss (the backends' ``marl_functional`` functions of these names, with their ``ops`` bound),
and :class:`COMA`.

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

import copy
import math
from typing import Any, ClassVar

import numpy as np

from parl_algorithms._validation import check_model_method, positive, unit_interval

__all__ = ["CONTINUOUS_HINT", "REQUIRED_KEYS", "DEFAULTS", "coma_hyperparameters", "coma_epsilon", "check_coma_batch",
           "check_model_sizes", "td_lambda_targets", "coma_policy_probs", "coma_counterfactual_advantage",
           "coma_td_lambda_targets", "coma_critic_loss", "coma_actor_loss", "COMA"]

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
    Barto eq. 12.18), numpy reference of :func:`coma_td_lambda_targets`.

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


# -- the losses and targets (``ops``: the backend's layer) -------------------------------------------------------


def _coma_check(name: str, tensor: Any, shape: tuple) -> None:
    if tuple(tensor.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {list(shape)}, got {list(tensor.shape)}")


def coma_policy_probs(ops: Any, logits: Any, avail_actions: Any, epsilon: float) -> Any:
    """COMA's behaviour policy: the softmax over the available actions mixed with epsilon of the uniform
    distribution over them (Foerster et al. 2018, sec. 6: "epsilon-bounded" exploration; PARL's and PyMARL's
    ``(1 - epsilon) * pi + epsilon / |available|``).

    Args:
        logits: float32 ``[..., A]`` actor outputs.
        avail_actions: float32 / bool ``[..., A]``, 1 where the action is available; a row of zeros (padding)
            gives a row of zeros.
        epsilon: in ``[0, 1]``.

    Returns:
        float32 ``[..., A]`` probabilities, 0 on unavailable actions, summing to 1 where any action is available.

    Raises:
        ValueError: the shapes differ.
    """
    _coma_check("coma_policy_probs: avail_actions", avail_actions, tuple(logits.shape))
    avail = ops.as_float(avail_actions, "avail_actions")
    pi = ops.F.softmax(ops.where(avail == 0, -1e10, logits), -1)
    n_avail = avail.sum(-1, keepdim=True).clip(min=1.0)
    return ((1.0 - epsilon) * pi + epsilon / n_avail) * avail


def coma_counterfactual_advantage(ops: Any, q_values: Any, pi: Any, actions: Any) -> tuple[Any, Any, Any]:
    """Counterfactual advantage (Foerster et al. 2018, eq. 4):
    ``A^a(s, u) = Q(s, u) - sum_u' pi^a(u' | tau^a) Q(s, (u^-a, u'))``.

    Args:
        q_values: float32 ``[..., n_agents, A]``: ``Q(s, (u^-a, u'))`` for every action ``u'`` of agent ``a``
            (the COMA critic's output, other agents' actions fixed).
        pi: float32 ``[..., n_agents, A]`` agent ``a``'s policy.
        actions: int64 ``[..., n_agents]`` the actions taken.

    Returns:
        ``(advantage, q_taken, baseline)``, each float32 ``[..., n_agents]``; no gradient flows through any of
        them (the advantage weights the score function only).

    Raises:
        ValueError: the shapes do not fit.
    """
    _coma_check("coma_counterfactual_advantage: pi", pi, tuple(q_values.shape))
    _coma_check("coma_counterfactual_advantage: actions", actions, tuple(q_values.shape[:-1]))
    q_values, pi = q_values.detach(), pi.detach()
    q_taken = ops.take_along_axis(q_values, ops.as_int64(actions, None).unsqueeze(-1), -1).squeeze(-1)
    baseline = (pi * q_values).sum(-1)
    return q_taken - baseline, q_taken, baseline


def coma_td_lambda_targets(ops: Any, r: Any, q_next: Any, terminated: Any, isover: Any, padded: Any, gamma: float,
                           td_lambda: float) -> Any:
    """TD(lambda) targets of COMA's critic (Foerster et al. 2018, sec. 4; Sutton & Barto 2018, eq. 12.18),
    by the backward recursion over the episode:
    ``G_t = r_t + gamma * (1 - terminated_t) * Q'_t`` on an episode's last step (``isover_t = 1``), else
    ``G_t = r_t + gamma * ((1 - lambda) * Q'_t + lambda * G_{t+1})``; 0 on padding. ``lambda = 0`` is one-step
    TD, ``lambda = 1`` the Monte Carlo return. (PARL's weighted sum of n-step returns, in O(T) instead of
    O(T^2); numpy reference: :func:`td_lambda_targets`.)

    Args:
        r: float32 ``[E, T, 1]`` team reward.
        q_next: float32 ``[E, T, n_agents]``: ``Q'_t``, the TARGET network's value of step t + 1's joint action
            (``Q_target(s_{t+1}, u_{t+1})[u^a_{t+1}]``).
        terminated, isover, padded: float32 ``[E, T, 1]`` flags (see the module's batch layout).
        gamma: discount; td_lambda: lambda, both in ``[0, 1]``.

    Returns:
        float32 ``[E, T, n_agents]``, without gradient.

    Raises:
        ValueError: the shapes do not fit.
    """
    episodes, steps = q_next.shape[:2]
    for name, flag in (("r", r), ("terminated", terminated), ("isover", isover), ("padded", padded)):
        _coma_check(f"coma_td_lambda_targets: {name}", flag, (episodes, steps, 1))
    with ops.no_grad():
        q_next = q_next.detach()
        cont = 1.0 - isover
        boot_scale = 1.0 - terminated
        live = 1.0 - padded
        targets = [None] * steps
        following = 0.0  # G_T: nothing follows the last step
        for t in range(steps - 1, -1, -1):
            boot = boot_scale[:, t] * ((1.0 - td_lambda * cont[:, t]) * q_next[:, t]
                                       + td_lambda * cont[:, t] * following)
            following = live[:, t] * (r[:, t] + gamma * boot)
            targets[t] = following.unsqueeze(1)
        return ops.concat(targets, 1)


def coma_critic_loss(ops: Any, q_taken: Any, targets: Any, mask: Any) -> Any:
    """Masked mean squared TD error of COMA's critic, ``sum(mask * (G - Q(s, u))^2) / sum(mask)``.

    Args:
        q_taken: float32 ``[E, T, n_agents]`` online ``Q(s_t, u_t)`` per agent.
        targets: float32 ``[E, T, n_agents]`` TD(lambda) targets (no gradient).
        mask: float32 ``[E, T, n_agents]``, 0 on padding.

    Returns:
        float32 scalar.

    Raises:
        ValueError: the shapes differ.
    """
    del ops  # (tensor operators only)
    _coma_check("coma_critic_loss: targets", targets, tuple(q_taken.shape))
    _coma_check("coma_critic_loss: mask", mask, tuple(q_taken.shape))
    return ((targets.detach() - q_taken) ** 2 * mask).sum() / mask.sum().clip(min=1.0)


def coma_actor_loss(ops: Any, pi: Any, actions: Any, advantage: Any, mask: Any,
                    entropy_coeff: float = 0.0) -> tuple[Any, Any]:
    """COMA's policy-gradient loss (Foerster et al. 2018, eq. 4 in the gradient
    ``g = E[sum_a grad log pi^a(u^a | tau^a) A^a(s, u)]``), masked mean over real steps and agents, minus
    ``entropy_coeff`` times the mean entropy (EPyMARL's regulariser; 0 in PARL).

    Args:
        pi: float32 ``[E, T, n_agents, A]`` behaviour policy (with gradient).
        actions: int64 ``[E, T, n_agents]``.
        advantage: float32 ``[E, T, n_agents]`` (no gradient).
        mask: float32 ``[E, T, n_agents]``, 0 on padding (its log-probabilities are not taken).
        entropy_coeff: weight of the entropy bonus, >= 0.

    Returns:
        ``(loss, entropy)`` float32 scalars (entropy: masked mean, without gradient).

    Raises:
        ValueError: the shapes do not fit.
    """
    _coma_check("coma_actor_loss: actions", actions, tuple(pi.shape[:-1]))
    _coma_check("coma_actor_loss: advantage", advantage, tuple(pi.shape[:-1]))
    _coma_check("coma_actor_loss: mask", mask, tuple(pi.shape[:-1]))
    pi_taken = ops.take_along_axis(pi, ops.as_int64(actions, None).unsqueeze(-1), -1).squeeze(-1)
    log_pi_taken = ops.where(mask > 0, pi_taken, 1.0).clip(min=1e-10).log()
    count = mask.sum().clip(min=1.0)
    entropy = (-(pi * pi.clip(min=1e-10).log()).sum(-1) * mask).sum() / count
    loss = -(advantage.detach() * log_pi_taken * mask).sum() / count
    if entropy_coeff:
        loss = loss - entropy_coeff * entropy
    return loss, entropy.detach()


# -- the algorithm ------------------------------------------------------------------------------------------

_HINT = "See PARL's benchmark/torch/coma/sc2_model.py (ComaModel: actor_model, critic_model) for the contract."


class COMA:
    """COMA for cooperative agents with Discrete actions and a common (team) reward.

    Per ``learn`` call, on a batch of whole episodes:

    1. Critic: ``Q(s_t, (u^-a_t, .))`` for every action of every agent from ``model.value(critic_inputs)``;
       TD(lambda) targets ``G_t`` from the TARGET network on the NEXT step's inputs,
       ``Q'_t = target_model.value(critic_inputs_next)[u^a_{t+1}]`` (:func:`coma_td_lambda_targets`); one
       RMSprop step on the masked squared error.
    2. Actor: the recurrent policy unrolled over the episodes, mixed with epsilon of the uniform distribution over
       the available actions; advantage ``A^a = Q(s, u) - sum_u' pi^a(u'|tau^a) Q(s, (u^-a, u'))`` (eq. 4) from the
       critic's values before its step; one RMSprop step on ``-mean(A^a log pi^a(u^a))``.

    Fixes to PARL 2.2.1's ``parl/algorithms/torch/coma.py`` (same names and signature otherwise):

    * PARL's ``_get_critic_output`` overwrites ``critic_inputs_next`` with ``critic_inputs`` and evaluates the
      TD target with ``self.model``, so its target is the online network on the CURRENT step and its
      ``target_model`` is never read. Here the target is ``target_model.value(critic_inputs_next)``, so
      ``sync_target`` matters (the tests perturb each network and check which one the target follows).
    * PARL divides epsilon by the number of available actions in the whole batch; here by each agent's own.
    * PARL asserts the hyperparameters' types, so ``None`` fails; here ``None`` takes the value of PARL's
      ``coma_config.py`` and a bad value raises ``ValueError`` naming the fix.
    * ``learn`` returns ``(critic_loss, actor_loss)`` (PARL: ``None``); the batch may carry ``terminated`` and
      ``u_next`` to bootstrap time-limit truncations (PARL treats every episode end as terminal).

    Optimizers: RMSprop (alpha 0.99, no momentum) per network, each clipping its gradients' global L2 norm to
    ``grad_norm_clip``: torch's arithmetic (``sqrt(r) + 1e-8``) on torch, paddle's ``RMSProp`` (``sqrt(r +
    1e-16)``) on paddle; the two agree to 1e-8.

    The model must define ``policy(obs, h) -> (logits float32 [B, n_actions], h)``, ``value(inputs) -> Q float32
    [B, n_actions]`` (one row per agent), ``get_actor_params()``, ``get_critic_params()``, and
    ``model.actor_model.init_hidden() -> float32 [1, hidden]`` (PARL's ``benchmark/torch/coma/sc2_model.py``).

    Args:
        model: the actor-critic model (a ``parl.Model`` of the class's framework); the target is
            ``copy.deepcopy(model)``.
        n_actions: actions per agent (an int or a gymnasium ``Discrete``).
        n_agents: number of agents.
        grad_norm_clip: global L2 norm the actor's and the critic's gradients are each clipped to (PARL: 10).
        actor_lr: actor RMSprop learning rate (PARL: 1e-4).
        critic_lr: critic RMSprop learning rate (PARL: 1e-3).
        gamma: discount in ``[0, 1]`` (PARL: 0.99).
        td_lambda: lambda of the critic's TD(lambda) targets in ``[0, 1]`` (PARL: 0.8).
        entropy_coeff: weight of a policy-entropy bonus (EPyMARL: 0.001; PARL: none, the default 0).
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks a method, declares other ``n_agents`` / ``n_actions`` than given, or a
            hyperparameter is out of range; ``n_actions`` is a continuous (Box) space (use MADDPG or MAPPO).
    """

    ops: ClassVar[Any]  # the backend's layer: parl_algorithms.torch.ops or parl_algorithms.paddle.ops

    def __init__(self, model: Any, n_actions: int, n_agents: int, grad_norm_clip: float | None = None,
                 actor_lr: float | None = None, critic_lr: float | None = None, gamma: float | None = None,
                 td_lambda: float | None = None, *, entropy_coeff: float = 0.0, device: Any = None) -> None:
        super().__init__(model, device=device)
        for method in ("value", "policy", "get_actor_params", "get_critic_params"):
            check_model_method(model, method, "COMA")
        hp = coma_hyperparameters(n_actions, n_agents, grad_norm_clip, actor_lr, critic_lr, gamma, td_lambda,
                                  entropy_coeff)
        self.n_actions, self.n_agents = hp["n_actions"], hp["n_agents"]
        self.grad_norm_clip, self.actor_lr, self.critic_lr = hp["grad_norm_clip"], hp["actor_lr"], hp["critic_lr"]
        self.gamma, self.td_lambda, self.entropy_coeff = hp["gamma"], hp["td_lambda"], hp["entropy_coeff"]
        check_model_sizes(model, self.n_agents, self.n_actions)
        self.target_model = copy.deepcopy(self.model)
        self.ops.freeze(self.target_model.parameters())
        self.actor_parameters = list(self.model.get_actor_params())
        self.critic_parameters = list(self.model.get_critic_params())
        self.critic_optimizer = self._rmsprop(self.critic_parameters, self.critic_lr)
        self.actor_optimizer = self._rmsprop(self.actor_parameters, self.actor_lr)
        self.last_info: dict[str, float] = {}

    def _rmsprop(self, params: list[Any], lr: float) -> Any:
        """The backend's RMSprop over ``params`` (alpha 0.99), clipping to ``grad_norm_clip`` (see the class)."""
        raise NotImplementedError

    def init_hidden(self, ep_num: int) -> Any:
        """The actor's initial hidden state for ``ep_num`` episodes, float32 ``[ep_num, n_agents, hidden]`` (a new
        tensor per call).

        Raises:
            ValueError: the model has no ``actor_model.init_hidden()`` (COMA's actor is recurrent).
        """
        actor = getattr(self.model, "actor_model", None)
        if not callable(getattr(actor, "init_hidden", None)):
            raise ValueError("COMA needs a recurrent actor: give the model an `actor_model` attribute with "
                             "`init_hidden()` returning float32 [1, hidden] (PARL's sc2_model.ActorModel)")
        # a fresh tensor, not PARL's ``expand`` view: there every agent's slot was one memory, so PARL's
        # sc2_agent (``self.rnn_h[agent_id] = h``) wrote each agent's hidden state over the others'
        (hidden,) = self.ops.to_device(self.device, actor.init_hidden().unsqueeze(0).tile([int(ep_num),
                                                                                           self.n_agents, 1]))
        return hidden

    def predict(self, obs: Any, rnn_h_in: Any) -> tuple[Any, Any]:
        """The actor's action probabilities (no gradient; no masking or epsilon: the agent adds them).

        Args:
            obs: float32 ``[B, D_actor]`` actor inputs (obs, one-hot last action, one-hot agent id: PARL).
            rnn_h_in: the hidden state, float32 ``[B, hidden]`` (or what ``init_hidden`` gave).

        Returns:
            ``(prob float32 [B, n_actions], rnn_h_out float32 [B, hidden])``.

        Raises:
            ValueError: ``obs`` is not ``[B, D_actor]``, or the model's outputs do not fit (the message names the
                contract).
        """
        ops = self.ops
        args = obs, rnn_h_in = ops.to_device(self.device, obs, rnn_h_in)
        try:
            obs = ops.as_float(obs, "obs")
            if obs.ndim != 2:
                raise ValueError(f"COMA.predict needs obs float32 [B, D_actor] (one row per agent), got shape "
                                 f"{list(obs.shape)}; add a batch axis with obs[None]")
            with ops.no_grad():
                logits, rnn_h_out = self.model.policy(obs, ops.as_float(rnn_h_in, "rnn_h_in"))
                return ops.F.softmax(self._logits(logits, obs.shape[0]), -1), rnn_h_out
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "predict", err, args)
            raise

    def _logits(self, logits: Any, rows: int) -> Any:
        if isinstance(logits, (tuple, list)) or logits.shape[-1] != self.n_actions or \
                math.prod(logits.shape) != rows * self.n_actions:
            got = type(logits).__name__ if isinstance(logits, (tuple, list)) else list(logits.shape)
            raise ValueError(f"COMA needs model.policy(obs, h) to return (logits float32 "
                             f"[B, n_actions={self.n_actions}]"
                             f", h) for B={rows} input rows, got {got}. {_HINT}")
        return logits.reshape([rows, self.n_actions])

    def _q(self, net: Any, inputs: Any) -> Any:
        episodes, steps, agents = inputs.shape[:3]
        q = net.value(inputs.reshape([episodes * steps * agents, -1]))
        if tuple(q.shape) != (episodes * steps * agents, self.n_actions):
            raise ValueError(f"COMA needs model.value(inputs) to return Q of every action of the agent, float32 "
                             f"[B, n_actions={self.n_actions}], got {list(q.shape)} for B={episodes * steps * agents}"
                             f". {_HINT}")
        return q.reshape([episodes, steps, agents, self.n_actions])

    def _batch(self, batch: dict) -> dict[str, Any]:
        """The batch's tensors on the algorithm's device: actions int64 ``[E, T, n_agents]``, the rest float32."""
        ops, out = self.ops, {}
        for key, value in batch.items():
            if key in ("o", "s", "u_onehot"):
                continue
            (value,) = ops.to_device(self.device, value)
            if key in ("u", "u_next"):
                tensor = ops.as_int64(value, self.device)
                out[key] = tensor.squeeze(-1) if tensor.ndim == 4 else tensor
            else:
                out[key] = ops.as_float(value, key)
        return out

    def learn(self, batch: dict, epsilon: float) -> tuple[Any, Any]:
        """One critic step then one actor step on a batch of whole episodes.

        Args:
            batch: PARL's dict of tensors or numpy arrays (``E`` episodes of ``T`` steps): ``r`` float32 ``[E, T,
                1]``, ``u`` int64 ``[E, T, n_agents, 1]``, ``avail_u`` ``[E, T, n_agents, n_actions]``, ``padded`` /
                ``isover`` float32 ``[E, T, 1]``, ``actor_inputs`` ``[E, T, n_agents, D_actor]``,
                ``critic_inputs`` / ``critic_inputs_next`` ``[E, T, n_agents, D_critic]``; optional
                ``terminated`` ``[E, T, 1]`` and ``u_next`` ``[E, T, n_agents, 1]`` (see the module's batch
                layout); ``o``, ``s``, ``u_onehot`` are accepted and unused.
            epsilon: the exploration rate the episodes were collected with, in ``[0, 1]``.

        Returns:
            ``(critic_loss, actor_loss)`` float32 scalar tensors.

        Raises:
            TypeError: ``batch`` is not a dict.
            ValueError: a key is missing, a shape or ``n_agents`` does not fit, the padding is inconsistent,
                actions are fractional (continuous: use MADDPG / MAPPO), or ``epsilon`` is out of range.
        """
        try:
            return self._learn(batch, epsilon)
        except (ValueError, RuntimeError) as err:
            self.ops.shape_error(self, "learn", err, (batch, epsilon))
            raise

    def _learn(self, batch: dict, epsilon: float) -> tuple[Any, Any]:
        ops = self.ops
        epsilon = coma_epsilon(epsilon)
        episodes, steps = check_coma_batch(batch, self.n_agents, self.n_actions)
        b = self._batch(batch)
        u = b["u"]
        u_next = b["u_next"] if "u_next" in b else ops.concat([u[:, 1:], u[:, :1] * 0], 1)  # (PARL: u shifted)
        mask = (1.0 - b["padded"]).expand([episodes, steps, self.n_agents])

        # critic: TD(lambda) targets from the target network on the next step's inputs
        q_evals = self._q(self.model, b["critic_inputs"])
        with ops.no_grad():
            q_next = ops.take_along_axis(self._q(self.target_model, b["critic_inputs_next"]), u_next.unsqueeze(-1),
                                         -1).squeeze(-1)
        targets = coma_td_lambda_targets(ops, b["r"], q_next, b.get("terminated", b["isover"]), b["isover"],
                                         b["padded"], self.gamma, self.td_lambda)
        q_taken = ops.take_along_axis(q_evals, u.unsqueeze(-1), -1).squeeze(-1)
        critic_loss = coma_critic_loss(ops, q_taken, targets, mask)
        critic_grad_norm = ops.step(self.critic_optimizer, critic_loss, self.grad_norm_clip, return_norm=True)

        # actor: the recurrent policy over the episodes, the counterfactual advantage of the critic before its step
        h = self.init_hidden(episodes)
        logits = []
        inputs = b["actor_inputs"]
        for t in range(steps):
            out, h = self.model.policy(inputs[:, t].reshape([episodes * self.n_agents, -1]), h)
            logits.append(self._logits(out, episodes * self.n_agents).reshape([episodes, self.n_agents, -1])
                          .unsqueeze(1))
        pi = coma_policy_probs(ops, ops.concat(logits, 1), b["avail_u"], epsilon)
        advantage, _, _ = coma_counterfactual_advantage(ops, q_evals, pi, u)
        actor_loss, entropy = coma_actor_loss(ops, pi, u, advantage, mask, self.entropy_coeff)
        actor_grad_norm = ops.step(self.actor_optimizer, actor_loss, self.grad_norm_clip, return_norm=True)

        count = ops.info_scalar(mask.sum().clip(min=1.0))
        self.last_info = {
            "train/critic_loss": ops.info_scalar(critic_loss), "train/actor_loss": ops.info_scalar(actor_loss),
            "train/entropy": ops.info_scalar(entropy),
            "train/q_taken_mean": ops.info_scalar((q_taken.detach() * mask).sum()) / count,
            "train/target_mean": ops.info_scalar((targets * mask).sum()) / count,
            "train/advantage_mean": ops.info_scalar((advantage * mask).sum()) / count,
            "train/critic_grad_norm": ops.info_scalar(critic_grad_norm),
            "train/actor_grad_norm": ops.info_scalar(actor_grad_norm),
        }
        return critic_loss.detach(), actor_loss.detach()

    def sync_target(self, decay: float = 0) -> None:
        """``target = decay * target + (1 - decay) * model`` (PARL: a hard copy every ``target_update_cycle``
        learn calls, ``decay=0``)."""
        self.model.sync_weights_to(self.target_model, decay=decay)

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)
