"""Pure, shape-checked loss and target functions of the multi-agent algorithms (paddle).

Same contract as :mod:`parl_algorithms.paddle.functional`: tensors in, tensors out, no side effects, a
``ValueError`` naming the expected shapes when inputs do not fit, and each function cites the equation of
its paper. The other backend's module has the same names and is tested against this one on the same inputs.
Sections, one per algorithm: MADDPG, QMIX, MAPPO (with PopArt), COMA.
"""

from __future__ import annotations

import paddle

from parl_algorithms import _maddpg

# ======================================================================================================
# MADDPG (Lowe et al. 2017, "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive Environments")
# ======================================================================================================


def _check_2d(name: str, value: paddle.Tensor) -> None:
    if value.ndim != 2:
        raise ValueError(f"{name} must be float32 [B, act_dim], got shape {tuple(value.shape)}")


def gumbel_softmax_sample(logits: paddle.Tensor, uniform: paddle.Tensor) -> paddle.Tensor:
    """A relaxed one-hot sample ``softmax(logits + g)`` with Gumbel noise ``g = -log(-log u)`` and temperature 1
    (Jang et al. 2017 eq. 1; MADDPG's discrete actions, Lowe et al. 2017 appendix: PARL's ``sample``).

    Args:
        logits: float32 ``[B, n]``.
        uniform: float32 ``[B, n]`` in ``(0, 1)`` (MADDPG draws it in ``[1e-4, 1 - 1e-4]``).

    Returns:
        float32 ``[B, n]``, rows summing to 1.

    Raises:
        ValueError: the shapes differ or are not ``[B, n]``.
    """
    _check_2d("logits", logits)
    if uniform.shape != logits.shape:
        raise ValueError(f"uniform {tuple(uniform.shape)} must have the shape of logits {tuple(logits.shape)}")
    return paddle.nn.functional.softmax(logits - paddle.log(-paddle.log(uniform)), axis=-1)


def squashed_gaussian_sample(mean: paddle.Tensor, log_std: paddle.Tensor, normal: paddle.Tensor) -> paddle.Tensor:
    """``tanh(mean + exp(log_std) * normal)``: MADDPG's continuous exploration sample in ``[-1, 1]`` (PARL's
    ``sample``; the reparameterised Gaussian of Haarnoja et al. 2018 eq. 11, squashed as their appendix C).

    Args:
        mean, log_std: float32 ``[B, act_dim]``, the policy's outputs.
        normal: float32 ``[B, act_dim]`` standard normal noise.

    Returns:
        float32 ``[B, act_dim]`` in ``[-1, 1]``.

    Raises:
        ValueError: the shapes differ or are not ``[B, act_dim]``.
    """
    _check_2d("mean", mean)
    if log_std.shape != mean.shape or normal.shape != mean.shape:
        raise ValueError(f"mean {tuple(mean.shape)}, log_std {tuple(log_std.shape)} and normal "
                         f"{tuple(normal.shape)} must have the same shape [B, act_dim]")
    return paddle.tanh(mean + paddle.exp(log_std) * normal)


def maddpg_target_q(reward: paddle.Tensor, next_q: paddle.Tensor, terminated: paddle.Tensor,
                    gamma: float) -> paddle.Tensor:
    """MADDPG's critic target ``y = r_i + gamma * (1 - terminated) * Q'_i(o'_1..o'_N, mu'_1(o'_1)..mu'_N(o'_N))``
    (Lowe et al. 2017, eq. 6 / Algorithm 1); the agent computes it and hands it to ``MADDPG.learn``.

    Args:
        reward: float32 ``[B]``, agent ``i``'s reward.
        next_q: float32 ``[B]``, ``MADDPG.Q(next_obs_n, next_act_n, use_target_model=True)`` with
            ``next_act_n[j] = MADDPG_j.sample(next_obs_n[j], use_target_model=True)``.
        terminated: float32 / bool ``[B]``, 1 where the episode terminated (0 on a truncation).
        gamma: discount in ``[0, 1]``.

    Returns:
        float32 ``[B]`` (no gradient flows into ``next_q``).

    Raises:
        ValueError: the shapes differ or ``gamma`` is outside ``[0, 1]``.
    """
    return _maddpg.critic_target(reward, next_q.detach(), terminated.astype("float32"), gamma)


def maddpg_actor_loss(q: paddle.Tensor, policy_out: paddle.Tensor,
                      reg_coef: float = _maddpg.ACTOR_REG_COEF) -> paddle.Tensor:
    """MADDPG's actor loss ``-mean(Q_i(o_n, a_1..mu_i(o_i)..a_N)) + reg_coef * mean(policy_out ** 2)``
    (Lowe et al. 2017 eq. 5, with PARL's and the authors' code's small penalty on the policy's raw outputs).

    Args:
        q: float32 ``[B]``, the critic at the batch's joint actions with agent ``i``'s replaced by its policy's
            sample.
        policy_out: float32 ``[B, n]`` logits (Discrete) or ``[B, 2 * act_dim]`` mean and log_std concatenated.
        reg_coef: weight of the penalty (PARL: 1e-3).

    Returns:
        a float32 scalar.

    Raises:
        ValueError: ``q`` is not ``[B]`` for the ``B`` rows of ``policy_out``.
    """
    if q.ndim != 1 or policy_out.ndim != 2 or q.shape[0] != policy_out.shape[0]:
        raise ValueError(f"q must be [B] and policy_out [B, dim], got {tuple(q.shape)} and "
                         f"{tuple(policy_out.shape)}")
    return -q.mean() + reg_coef * paddle.square(policy_out).mean()


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


# (end of COMA)
