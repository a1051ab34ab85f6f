"""IMPALA (Espeholt et al. 2018, "IMPALA: Scalable Distributed Deep-RL with Importance Weighted
Actor-Learner Architectures") with PARL's ``IMPALA`` API and PARL's paddle constructor keywords: an actor-critic
loss on V-trace targets; written once for torch and paddle."""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

from parl_algorithms._validation import check_model_method, positive, unit_interval
from parl_algorithms.algorithms._acting import act
from parl_algorithms.algorithms.vtrace import vtrace

__all__ = ["IMPALA", "VTraceLoss"]

CONTINUOUS_HINT = ("IMPALA supports Discrete action spaces only (its V-trace ratios are of categorical "
                   "policies); for a continuous (Box) action space use PPO(continuous_action=True), SAC or TD3")


class VTraceLoss(NamedTuple):
    """The losses of one ``IMPALA.learn`` call (scalar tensors of the backend; PARL's ``VTraceLoss`` fields).

    Attributes:
        total_loss: ``pi_loss + vf_loss_coeff * vf_loss + entropy_coeff * entropy``.
        pi_loss: ``-sum(log pi(a_s|x_s) * pg_advantages)``.
        vf_loss: ``0.5 * sum((V(x_s) - v_s)^2)``.
        entropy: ``sum(H(pi(.|x_s)))``.
    """

    total_loss: Any
    pi_loss: Any
    vf_loss: Any
    entropy: Any


def _hyperparameters(sample_batch_steps: Any, gamma: Any, vf_loss_coeff: Any, clip_rho_threshold: Any,
                     clip_pg_rho_threshold: Any, max_grad_norm: Any) -> dict[str, Any]:
    """IMPALA's checked hyperparameters with PARL's defaults filled in (``None`` -> default).

    Returns:
        ``{"sample_batch_steps": int, "gamma", "vf_loss_coeff", "clip_rho_threshold", "clip_pg_rho_threshold":
        float, "max_grad_norm": float or None}``.

    Raises:
        ValueError: a value is missing or out of range; the message gives an example.
    """
    if isinstance(sample_batch_steps, bool) or not isinstance(sample_batch_steps, int) or sample_batch_steps < 2:
        raise ValueError(f"IMPALA needs sample_batch_steps, the unroll length T (an int >= 2: the last step of "
                         f"each unroll only bootstraps), got {sample_batch_steps!r}; e.g. "
                         "IMPALA(model, sample_batch_steps=50)")
    vf = 0.5 if vf_loss_coeff is None else vf_loss_coeff
    if isinstance(vf, bool) or not isinstance(vf, (int, float)) or vf < 0:
        raise ValueError(f"IMPALA needs vf_loss_coeff >= 0, got {vf!r}; e.g. IMPALA(model, vf_loss_coeff=0.5)")
    return {
        "sample_batch_steps": sample_batch_steps,
        "gamma": unit_interval(0.99 if gamma is None else gamma, "gamma", "IMPALA", "0.99"),
        "vf_loss_coeff": float(vf),
        "clip_rho_threshold": positive(1.0 if clip_rho_threshold is None else clip_rho_threshold,
                                       "clip_rho_threshold", "IMPALA", "1.0"),
        "clip_pg_rho_threshold": positive(1.0 if clip_pg_rho_threshold is None else clip_pg_rho_threshold,
                                          "clip_pg_rho_threshold", "IMPALA", "1.0"),
        "max_grad_norm": None if max_grad_norm is None else positive(max_grad_norm, "max_grad_norm", "IMPALA",
                                                                     "40.0"),
    }


def _check_unroll_batch(batch: int, steps: int) -> None:
    """Raise ``ValueError`` unless ``batch`` is a whole number of unrolls of ``steps`` steps."""
    if batch % steps:
        raise ValueError(f"IMPALA.learn: the batch B={batch} must be a whole number of unrolls of "
                         f"sample_batch_steps={steps} steps (B = E x T, env-major as PARL); send whole unrolls or "
                         "build IMPALA with the actors' unroll length")


class IMPALA:
    """Importance-weighted actor-learner: actor-critic on V-trace targets, for discrete actions.

    A learn batch is ``E`` unrolls of ``T = sample_batch_steps`` steps each, flattened **env-major**
    to ``B = E * T`` rows, PARL 2.2.1's layout (row ``e * T + t`` is step ``t`` of unroll ``e``, i.e.
    ``x.reshape(E, T)`` recovers the unrolls; from ``[T, E, ...]`` arrays, ``x.swapaxes(0, 1).reshape(E * T,
    ...)``). As PARL, the value of each unroll's last step is the bootstrap value and the loss covers its
    first ``T - 1`` steps, and ``sample`` returns ``(probs, logits)``. Losses are sums over the batch (PARL);
    Adam with a global gradient-norm clip of ``max_grad_norm`` (PARL: 40). The same batch layout, losses,
    returns and errors on torch and paddle.

    The model must define ``policy(obs) -> logits float32 [B, A]`` and ``value(obs) -> float32 [B]``
    or ``[B, 1]``; ``policy_and_value(obs)`` is used instead when defined (one forward pass).

    Args:
        model: the actor-critic model (a ``parl.Model`` of the class's framework).
        sample_batch_steps: ``T``, the unroll length (>= 2).
        gamma: discount factor in ``[0, 1]`` (default 0.99).
        vf_loss_coeff: weight of the value loss (default 0.5).
        clip_rho_threshold: V-trace ``rho_bar`` (default 1.0).
        clip_pg_rho_threshold: ``rho_bar`` of the policy-gradient advantage (default 1.0).
        learning_rate: Adam's initial learning rate (PARL: 0.001); ``learn`` sets it on every call.
        max_grad_norm: global L2 gradient clip, ``None`` for none.
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda"``,
            ``"cuda:1"`` or a ``torch.device`` (default CUDA when available, PARL's rule); paddle ``"cpu"``,
            ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``), set process-wide (``paddle.set_device``; default paddle's own,
            the GPU in a CUDA build).

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks ``policy`` / ``value``, or a hyperparameter is missing or out of range.
    """

    ops: ClassVar[Any]  # the backend's layer: parl_algorithms.torch.ops or parl_algorithms.paddle.ops

    def __init__(self, model: Any, sample_batch_steps: int | None = None, gamma: float | None = None,
                 vf_loss_coeff: float | None = None, clip_rho_threshold: float | None = None,
                 clip_pg_rho_threshold: float | None = None, *, learning_rate: float = 0.001,
                 max_grad_norm: float | None = 40.0, device: Any = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "policy", "IMPALA")
        check_model_method(model, "value", "IMPALA")
        checked = _hyperparameters(sample_batch_steps, gamma, vf_loss_coeff, clip_rho_threshold,
                                   clip_pg_rho_threshold, max_grad_norm)
        self.sample_batch_steps: int = checked["sample_batch_steps"]
        self.gamma: float = checked["gamma"]
        self.vf_loss_coeff: float = checked["vf_loss_coeff"]
        self.clip_rho_threshold: float = checked["clip_rho_threshold"]
        self.clip_pg_rho_threshold: float = checked["clip_pg_rho_threshold"]
        self.max_grad_norm: float | None = checked["max_grad_norm"]
        self.optimizer = self.ops.adam(self.model.parameters(),
                                       lr=positive(learning_rate, "learning_rate", "IMPALA", "0.001"),
                                       max_grad_norm=self.max_grad_norm)
        self.last_info: dict[str, float] = {}

    def _policy_and_value(self, obs: Any) -> tuple[Any, Any]:
        fused = getattr(self.model, "policy_and_value", None)
        logits, value = fused(obs) if callable(fused) else (self.model.policy(obs), self.model.value(obs))
        return (self._check_logits(logits, obs.shape[0]),
                self.ops.column(value, "model.value(obs)", obs.shape[0], "IMPALA"))

    def _logits(self, obs: Any) -> Any:
        return self._check_logits(self.model.policy(obs), obs.shape[0])

    @classmethod
    def _check_logits(cls, logits: Any, batch: int) -> Any:
        if not isinstance(logits, cls.ops.Tensor) or logits.ndim != 2 or logits.shape[0] != batch:
            got = f"a {type(logits).__name__}" if not isinstance(logits, cls.ops.Tensor) else tuple(logits.shape)
            raise ValueError(f"IMPALA needs model.policy(obs) to return logits float32 [B={batch}, num_actions], got "
                             f"{got}; {CONTINUOUS_HINT}")
        return logits

    def _sample(self, obs: Any) -> tuple[Any, Any]:
        logits = self._logits(obs)
        return self.ops.F.softmax(logits, -1), logits

    def sample(self, obs: Any) -> tuple[Any, Any]:
        """The current policy's action probabilities (an actor draws its action from them), PARL's ``sample``.

        Args:
            obs: float32 ``[B, *obs_shape]``.

        Returns:
            ``(probs float32 [B, num_actions], behaviour_logits float32 [B, num_actions])``: ``probs`` the
            softmax of the logits (each row sums to 1); the caller samples the action from it (e.g.
            ``torch.multinomial(probs, 1)``) and passes the logits to ``learn`` as ``behaviour_logits``.
        """
        return act(self, "sample", obs, self._sample, single=False)

    def predict(self, obs: Any) -> Any:
        """Greedy actions int64 ``[B]`` for obs float32 ``[B, *obs_shape]``."""
        return act(self, "predict", obs, lambda x: self._logits(x).argmax(-1), single=False)

    def learn(self, obs: Any, actions: Any, behaviour_logits: Any, rewards: Any, dones: Any, learning_rate: float,
              entropy_coeff: float) -> tuple[VTraceLoss, Any]:
        """One Adam step on ``E`` env-major unrolls (``B = E * T``, ``T = sample_batch_steps``; PARL's layout).

        Args:
            obs: float32 ``[B, *obs_shape]`` (e.g. ``[B, C, H, W]`` on Atari), row ``e * T + t`` (step ``t``
                of unroll ``e``); every other argument has its rows in the same order.
            actions: int64 ``[B]`` the actions taken.
            behaviour_logits: float32 ``[B, num_actions]`` the actor's logits when it acted.
            rewards: float32 ``[B]``.
            dones: bool / float32 ``[B]``, true where the episode ended at this step (its discount is 0).
            learning_rate: Adam's learning rate for this step.
            entropy_coeff: multiplies the entropy in the loss (PARL's sign: negative, e.g. -0.01, rewards it).

        Returns:
            ``(VTraceLoss(total_loss, pi_loss, vf_loss, entropy), kl)``: 0-d float32 tensors, ``kl`` the mean
            ``KL(pi || mu)`` of learner and behaviour policies (PARL's return).

        Raises:
            ValueError: ``B`` is not a multiple of ``T``, a tensor is not of the documented shape, or
                the actions / logits are not those of a discrete action space.
        """
        ops = self.ops
        args = ops.to_device(self.device, obs, actions, behaviour_logits, rewards, dones, learning_rate,
                             entropy_coeff)
        try:
            return self._learn(*args)
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "learn", err, args)
            raise

    def _learn(self, obs: Any, actions: Any, behaviour_logits: Any, rewards: Any, dones: Any, learning_rate: Any,
               entropy_coeff: Any) -> tuple[VTraceLoss, Any]:
        ops, F = self.ops, self.ops.F
        obs = ops.obs_batch(obs, "IMPALA")
        batch, T = obs.shape[0], self.sample_batch_steps
        _check_unroll_batch(batch, T)
        behaviour_logits = ops.as_float(behaviour_logits, "behaviour_logits")
        rewards = ops.column(ops.as_float(rewards, "rewards"), "rewards", batch, "IMPALA")
        dones = ops.column(ops.as_float(dones, "dones"), "dones", batch, "IMPALA")
        logits, values = self._policy_and_value(obs)
        num_actions = logits.shape[1]
        if tuple(behaviour_logits.shape) != (batch, num_actions):
            raise ValueError(f"IMPALA.learn: behaviour_logits must be the actors' logits float32 [B={batch}, "
                             f"num_actions={num_actions}], got {tuple(behaviour_logits.shape)}; pass the second "
                             f"output of IMPALA.sample for every step. {CONTINUOUS_HINT}")
        actions = ops.discrete_actions(actions, batch, num_actions, "IMPALA")
        target_log_probs, entropy_per = ops.functional.categorical_log_prob_entropy(logits, actions)
        behaviour_log_softmax = F.log_softmax(behaviour_logits, -1)
        behaviour_log_probs = ops.take_along_axis(behaviour_log_softmax, actions.unsqueeze(1), 1).squeeze(1)
        with ops.no_grad():
            target_log_softmax = F.log_softmax(logits.detach(), -1)
            kl = (target_log_softmax.exp() * (target_log_softmax - behaviour_log_softmax)).sum(-1).mean()

        def unrolls(x: Any) -> Any:  # [E * T] env-major -> [T, E] (PARL's split_batches)
            return x.reshape([batch // T, T]).T

        values_tb = unrolls(values)
        returns = vtrace(ops, behaviour_actions_log_probs=unrolls(behaviour_log_probs)[:-1],
                         target_actions_log_probs=unrolls(target_log_probs.detach())[:-1],
                         discounts=(1.0 - unrolls(dones)[:-1]) * self.gamma, rewards=unrolls(rewards)[:-1],
                         values=values_tb[:-1].detach(), bootstrap_value=values_tb[-1].detach(),
                         clip_rho_threshold=self.clip_rho_threshold, clip_pg_rho_threshold=self.clip_pg_rho_threshold)
        pi_loss = -(unrolls(target_log_probs)[:-1] * returns.pg_advantages).sum()
        vf_loss = 0.5 * (values_tb[:-1] - returns.vs).pow(2).sum()
        entropy = unrolls(entropy_per)[:-1].sum()
        total_loss = pi_loss + self.vf_loss_coeff * vf_loss + float(entropy_coeff) * entropy
        ops.set_lr(self.optimizer, learning_rate)
        measured = self.max_grad_norm is not None  # (without a clip, no norm is computed: nan)
        grad_norm = ops.step(self.optimizer, total_loss, self.max_grad_norm, return_norm=measured)
        self.last_info = {"train/pi_loss": ops.info_scalar(pi_loss), "train/vf_loss": ops.info_scalar(vf_loss),
                          "train/entropy": ops.info_mean(entropy_per), "train/kl": ops.info_scalar(kl),
                          "train/grad_norm": ops.info_scalar(grad_norm) if measured else float("nan")}
        return VTraceLoss(total_loss.detach(), pi_loss.detach(), vf_loss.detach(), entropy.detach()), kl

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (``train/entropy`` is the mean entropy per step)."""
        return dict(self.last_info)
