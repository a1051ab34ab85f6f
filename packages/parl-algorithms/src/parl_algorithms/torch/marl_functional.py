"""Pure, shape-checked loss and target functions of the multi-agent algorithms (torch).

Same contract as :mod:`parl_algorithms.torch.functional`: tensors in, tensors out, no side effects, a
``ValueError`` naming the expected shapes when inputs do not fit, and each function cites the equation of
its paper. The other backend's module has the same names and is tested against this one on the same inputs.
Sections, one per algorithm: MADDPG, QMIX, MAPPO (with PopArt), COMA.
"""

from __future__ import annotations

import torch  # noqa: F401

# ======================================================================================================
# MADDPG (Lowe et al. 2017, "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive Environments")
# ======================================================================================================


# (end of MADDPG)


# ======================================================================================================
# QMIX (Rashid et al. 2018, "QMIX: Monotonic Value Function Factorisation for Deep Multi-Agent RL")
# ======================================================================================================


# (end of QMIX)


# ======================================================================================================
# MAPPO (Yu et al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games") and PopArt
# (van Hasselt et al. 2016, "Learning values across many orders of magnitude")
# ======================================================================================================


# (end of MAPPO)


# ======================================================================================================
# COMA (Foerster et al. 2018, "Counterfactual Multi-Agent Policy Gradients")
# ======================================================================================================


def _coma_check(name: str, tensor: torch.Tensor, shape: tuple) -> None:
    if tuple(tensor.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {list(shape)}, got {list(tensor.shape)}")


def coma_policy_probs(logits: torch.Tensor, avail_actions: torch.Tensor, epsilon: float) -> torch.Tensor:
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
    avail = avail_actions.to(logits.dtype)
    pi = torch.softmax(logits.masked_fill(avail == 0, -1e10), dim=-1)
    n_avail = avail.sum(-1, keepdim=True).clamp_min(1.0)
    return ((1.0 - epsilon) * pi + epsilon / n_avail) * avail


def coma_counterfactual_advantage(q_values: torch.Tensor, pi: torch.Tensor, actions: torch.Tensor
                                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
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
    q_taken = q_values.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    baseline = (pi * q_values).sum(-1)
    return q_taken - baseline, q_taken, baseline


def coma_td_lambda_targets(r: torch.Tensor, q_next: torch.Tensor, terminated: torch.Tensor, isover: torch.Tensor,
                           padded: torch.Tensor, gamma: float, td_lambda: float) -> torch.Tensor:
    """TD(lambda) targets of COMA's critic (Foerster et al. 2018, sec. 4; Sutton & Barto 2018, eq. 12.18),
    by the backward recursion over the episode:
    ``G_t = r_t + gamma * (1 - terminated_t) * Q'_t`` on an episode's last step (``isover_t = 1``), else
    ``G_t = r_t + gamma * ((1 - lambda) * Q'_t + lambda * G_{t+1})``; 0 on padding. ``lambda = 0`` is one-step
    TD, ``lambda = 1`` the Monte Carlo return. (PARL's weighted sum of n-step returns, in O(T) instead of
    O(T^2); numpy reference: ``parl_algorithms._coma.td_lambda_targets``.)

    Args:
        r: float32 ``[E, T, 1]`` team reward.
        q_next: float32 ``[E, T, n_agents]``: ``Q'_t``, the TARGET network's value of step t + 1's joint action
            (``Q_target(s_{t+1}, u_{t+1})[u^a_{t+1}]``).
        terminated, isover, padded: float32 ``[E, T, 1]`` flags (see ``parl_algorithms._coma``).
        gamma: discount; td_lambda: lambda, both in ``[0, 1]``.

    Returns:
        float32 ``[E, T, n_agents]``, without gradient.

    Raises:
        ValueError: the shapes do not fit.
    """
    episodes, steps = q_next.shape[:2]
    for name, flag in (("r", r), ("terminated", terminated), ("isover", isover), ("padded", padded)):
        _coma_check(f"coma_td_lambda_targets: {name}", flag, (episodes, steps, 1))
    with torch.no_grad():
        cont = 1.0 - isover
        boot_scale = 1.0 - terminated
        live = 1.0 - padded
        targets = [None] * steps
        following = torch.zeros_like(q_next[:, 0])
        for t in range(steps - 1, -1, -1):
            boot = boot_scale[:, t] * ((1.0 - td_lambda * cont[:, t]) * q_next[:, t]
                                       + td_lambda * cont[:, t] * following)
            following = live[:, t] * (r[:, t] + gamma * boot)
            targets[t] = following
        return torch.stack(targets, dim=1)


def coma_critic_loss(q_taken: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Masked mean squared TD error of COMA's critic, ``sum(mask * (G - Q(s, u))^2) / sum(mask)``.

    Args:
        q_taken: float32 ``[E, T, n_agents]`` online ``Q(s_t, u_t)`` per agent.
        targets: float32 ``[E, T, n_agents]`` TD(lambda) targets (no gradient).
        mask: float32 ``[E, T, n_agents]``, 0 on padding.

    Returns:
        float32 scalar.
    """
    _coma_check("coma_critic_loss: targets", targets, tuple(q_taken.shape))
    _coma_check("coma_critic_loss: mask", mask, tuple(q_taken.shape))
    return ((targets.detach() - q_taken) ** 2 * mask).sum() / mask.sum().clamp_min(1.0)


def coma_actor_loss(pi: torch.Tensor, actions: torch.Tensor, advantage: torch.Tensor, mask: torch.Tensor,
                    entropy_coeff: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
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
    """
    _coma_check("coma_actor_loss: actions", actions, tuple(pi.shape[:-1]))
    _coma_check("coma_actor_loss: advantage", advantage, tuple(pi.shape[:-1]))
    _coma_check("coma_actor_loss: mask", mask, tuple(pi.shape[:-1]))
    pi_taken = pi.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    log_pi_taken = torch.log(torch.where(mask > 0, pi_taken, torch.ones_like(pi_taken)).clamp_min(1e-10))
    count = mask.sum().clamp_min(1.0)
    entropy = (-(pi * torch.log(pi.clamp_min(1e-10))).sum(-1) * mask).sum() / count
    loss = -(advantage.detach() * log_pi_taken * mask).sum() / count
    if entropy_coeff:
        loss = loss - entropy_coeff * entropy
    return loss, entropy.detach()


# (end of COMA)
