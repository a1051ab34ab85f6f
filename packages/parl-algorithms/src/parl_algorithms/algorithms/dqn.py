"""DQN (Mnih et al. 2015, "Human-level control through deep reinforcement learning") and Double DQN
(van Hasselt et al. 2016), with PARL's ``DQN`` / ``DDQN`` API; written once for torch and paddle. Dueling
networks (Wang et al. 2016) are built in the Model."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from parl_algorithms._validation import check_model_method, positive, unit_interval

__all__ = ["DQN", "DDQN"]


class DQN:
    """Deep Q-network with a target network, MSE loss and Adam (PARL's defaults).

    The model must define ``forward(obs) -> Q``: float32 ``[B, num_actions]``.

    Args:
        model: the Q network (a ``parl.Model`` of the class's framework); the target network is
            ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]`` (required, as in PARL).
        lr: Adam learning rate > 0 (required).
        loss_type: ``"mse"`` (PARL) or ``"huber"`` (smooth L1, as in the Nature paper and SB3).
        max_grad_norm: clip the global gradient norm to this value; ``None`` (PARL) does not clip.
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Attributes:
        last_info: diagnostics of the last ``learn`` call: ``train/q_mean``, ``train/target_mean``.

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks ``forward``, or a hyperparameter is missing / out of range.
    """

    ops: ClassVar[Any]  # the backend's layer: parl_algorithms.torch.ops or parl_algorithms.paddle.ops
    learn_returns_float: ClassVar[bool]  # PARL's return: torch ``loss.item()``, paddle the loss tensor
    double_q = False

    def __init__(self, model: Any, gamma: float | None = None, lr: float | None = None, *,
                 loss_type: str = "mse", max_grad_norm: float | None = None, device: Any = None) -> None:
        super().__init__(model, device=device)
        name = type(self).__name__
        check_model_method(model, "forward", name)
        self.gamma = unit_interval(gamma, "gamma", name, "0.99")
        self.lr = positive(lr, "lr", name, "1e-3")
        if loss_type not in ("mse", "huber"):
            raise ValueError(f"{name}: loss_type must be 'mse' or 'huber', got {loss_type!r}")
        self.loss_type = loss_type
        self.max_grad_norm = None if max_grad_norm is None else positive(max_grad_norm, "max_grad_norm", name, "10")
        self.target_model = copy.deepcopy(model)
        self.optimizer = self.ops.adam(self.model.parameters(), lr=self.lr, max_grad_norm=self.max_grad_norm)
        self.last_info: dict[str, float] = {}

    def _q(self, model: Any, obs: Any, batch: int | None = None) -> Any:
        """``model(obs)``, checked to be float32 ``[B, num_actions]`` (``batch``: B when the caller has read it;
        each shape read is a call into the framework's C++, a few microseconds on the acting path)."""
        q = model(obs)
        shape = q.shape if isinstance(q, self.ops.Tensor) else None
        if shape is None or len(shape) != 2 or shape[0] != (obs.shape[0] if batch is None else batch):
            raise ValueError(f"{type(self).__name__}: model.forward(obs) must return Q values float32 "
                             f"[B, num_actions], got {getattr(q, 'shape', type(q).__name__)}")
        return q

    def predict(self, obs: Any) -> Any:
        """Q values of every action.

        Args:
            obs: float32 ``[B, *obs_shape]``, or one vector observation ``[obs_dim]`` (as PARL code passes).

        Returns:
            float32 ``[B, num_actions]`` (``[num_actions]`` for one observation); the greedy action is
            ``argmax(-1)``.

        Raises:
            TypeError: ``obs`` is not numeric.
            ValueError: ``obs`` is 0-d, or the model does not return ``[B, num_actions]``.
        """
        ops = self.ops
        (obs,) = args = ops.to_device(self.device, obs)
        try:
            obs = ops.as_float(obs, "obs")
            shape = obs.shape
            if len(shape) == 1:
                return self._q(self.model, obs.unsqueeze(0), 1)[0]
            if not shape:
                ops.obs_batch(obs, type(self).__name__)  # raises the message for a 0-d obs
            return self._q(self.model, obs, shape[0])
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "predict", err, args)
            raise

    def sample(self, obs: Any, epsilon: float = 0.0) -> Any:
        """Epsilon-greedy actions.

        Args:
            obs: float32 ``[B, *obs_shape]``, or one vector observation ``[obs_dim]``.
            epsilon: probability of a uniformly random action, in ``[0, 1]``.

        Returns:
            int64 ``[B]`` (0-d for one observation).
        """
        ops = self.ops
        (obs,) = args = ops.to_device(self.device, obs)
        try:
            obs = ops.as_float(obs, "obs")
            single = len(obs.shape) == 1
            q = self.predict(obs.unsqueeze(0) if single else obs)
            action = q.argmax(1)
            if epsilon > 0:
                explore = ops.rand([q.shape[0]], q) < epsilon
                action = ops.where(explore, ops.randint(q.shape[1], [q.shape[0]], q), action)
            return action[0] if single else action
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "sample", err, args)
            raise

    def _target(self, reward: Any, next_obs: Any, terminal: Any) -> Any:
        next_q_target = self._q(self.target_model, next_obs)
        return self.ops.functional.td_target(reward, next_q_target.amax(1), terminal, self.gamma)

    def learn(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any) -> Any:
        """One gradient step on ``loss(Q(s, a), r + gamma * (1 - terminal) * max_a' Q_target(s', a'))``.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            action: int64 ``[B]`` or ``[B, 1]``.
            reward: float32 ``[B]`` or ``[B, 1]``.
            next_obs: float32 ``[B, *obs_shape]``.
            terminal: float32 / bool ``[B]`` or ``[B, 1]``: 1 if the episode terminated (not truncated).

        Returns:
            torch: the loss as a Python float (PARL's ``loss.item()``); paddle: the scalar loss tensor (PARL's
            return).

        Raises:
            ValueError: shapes do not fit, or the actions are not discrete indices.
        """
        ops = self.ops
        obs, action, reward, next_obs, terminal = args = ops.to_device(self.device, obs, action, reward, next_obs,
                                                                       terminal)
        try:
            name = type(self).__name__
            obs, next_obs = ops.obs_batch(obs, name), ops.obs_batch(next_obs, name)
            if next_obs.shape != obs.shape:
                raise ValueError(f"{name}: next_obs {tuple(next_obs.shape)} must have the shape of obs "
                                 f"{tuple(obs.shape)}")
            batch = obs.shape[0]
            reward = ops.column(reward, "reward", batch, name)
            terminal = ops.column(terminal, "terminal", batch, name)
            q = self._q(self.model, obs)
            action = ops.discrete_actions(action, batch, q.shape[1], name)
            pred = ops.take_along_axis(q, action.unsqueeze(1), 1).squeeze(1)
            with ops.no_grad():
                target = self._target(reward, next_obs, terminal)
            loss = ops.F.mse_loss(pred, target) if self.loss_type == "mse" else ops.F.smooth_l1_loss(pred, target)
            ops.step(self.optimizer, loss, self.max_grad_norm)
            self.last_info = {"train/q_mean": ops.info_scalar(pred.detach().mean()),
                              "train/target_mean": ops.info_scalar(target.mean())}
            return loss.item() if self.learn_returns_float else loss
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "learn", err, args)
            raise

    def sync_target(self) -> None:
        """Copy the model's weights into the target network."""
        self.model.sync_weights_to(self.target_model)

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)


class DDQN(DQN):
    """Double DQN: the online network picks the next action, the target network values it
    (van Hasselt et al. 2016, "Deep Reinforcement Learning with Double Q-learning"). Same API, arguments,
    shapes and dtypes as :class:`DQN`.

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks ``forward``, or a hyperparameter is missing / out of range.
    """

    double_q = True

    def _target(self, reward: Any, next_obs: Any, terminal: Any) -> Any:
        return self.ops.functional.double_dqn_target(reward, self._q(self.model, next_obs),
                                                     self._q(self.target_model, next_obs), terminal, self.gamma)
