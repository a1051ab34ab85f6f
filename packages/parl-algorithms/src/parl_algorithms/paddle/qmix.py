"""QMIX (Rashid et al. 2018, "QMIX: Monotonic Value Function Factorisation for Deep Multi-Agent Reinforcement
Learning") on PaddlePaddle with PARL's paddle ``QMIX`` API; same checks, layout and arithmetic as
``parl_algorithms.torch.QMIX`` (tested update for update against it).

Differences from PARL 2.2.1's paddle QMIX: RMSprop with PyTorch's arithmetic (``sqrt(r) + eps``, as PARL's
torch QMIX and PyMARL; paddle's own RMSProp uses ``sqrt(r + eps)``: :mod:`parl_algorithms.paddle.rmsprop`);
unavailable actions get -1e10 (PARL paddle subtracted 1e8); the terminal transition is in the loss (see
:mod:`parl_algorithms._qmix`); the batch is validated; the target networks run without autograd; ``device=``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import paddle

from parl_algorithms import _qmix
from parl_algorithms._validation import check_model_method
from parl_algorithms.paddle import marl_functional
from parl_algorithms.paddle._common import grad_norm
from parl_algorithms.paddle.rmsprop import RMSprop
from parl_core.paddle import Algorithm, Model
from parl_core.paddle.algorithm import check_paddle_model

__all__ = ["QMIX"]


def _host(value: Any) -> Any:
    if isinstance(value, paddle.Tensor):
        return value.numpy()
    return value if value is None or hasattr(value, "shape") else np.asarray(value)


def _tensor(value: Any) -> paddle.Tensor:
    return value if isinstance(value, paddle.Tensor) else paddle.to_tensor(np.asarray(value))


class QMIX(_qmix.ActingHiddenState, Algorithm):
    """QMIX on paddle: same contracts, arguments, returns and errors as ``parl_algorithms.torch.QMIX``.

    Model contracts (PARL's): ``agent_model.init_hidden()`` -> ``[1, hidden]``; ``agent_model(obs
    [B * n_agents, obs_dim], h)`` -> ``(q [B * n_agents, n_actions], h [B * n_agents, hidden])``;
    ``qmixer_model(agent_qs [B, T, n_agents], states [B, T, state_dim])`` -> ``[B, T, 1]`` with an int attribute
    ``n_agents``.

    Args:
        agent_model: the agents' shared recurrent Q network (a ``parl_core.paddle.Model``).
        qmixer_model: the mixing network.
        double_q: Double-Q targets.
        gamma: discount in ``[0, 1]``.
        lr: RMSprop learning rate (alpha 0.99, eps 1e-5, PyTorch's formula).
        clip_grad_norm: clip the global gradient norm to this value (``ClipGradByGlobalNorm``); ``None`` does not.
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"``: paddle's device (process-wide ``paddle.set_device``); default
            paddle's own.

    Attributes:
        target_agent_model, target_qmixer_model, n_agents, hidden_states, last_info: as the torch QMIX.

    Raises:
        TypeError: a model is not a paddle ``parl.Model``.
        ValueError: a missing model method or ``n_agents``, or a hyperparameter out of range.
    """

    def __init__(self, agent_model: Model, qmixer_model: Model, double_q: bool = True, gamma: float = 0.99,
                 lr: float = 0.0005, clip_grad_norm: float | None = None, *, device: str | None = None) -> None:
        check_paddle_model(agent_model, "QMIX")
        check_paddle_model(qmixer_model, "QMIX")
        super().__init__(None, device=device)
        check_model_method(agent_model, "init_hidden", "QMIX")
        check_model_method(agent_model, "forward", "QMIX")
        check_model_method(qmixer_model, "forward", "QMIX")
        self.n_agents = _qmix.qmixer_n_agents(qmixer_model)
        hp = _qmix.qmix_hyperparameters(double_q, gamma, lr, clip_grad_norm)
        self.double_q, self.gamma, self.lr, self.clip_grad_norm = (hp["double_q"], hp["gamma"], hp["lr"],
                                                                   hp["clip_grad_norm"])
        if device is not None:
            agent_model.to(device=self.device)
            qmixer_model.to(device=self.device)
        self.agent_model, self.qmixer_model = agent_model, qmixer_model
        self.target_agent_model = copy.deepcopy(agent_model)
        self.target_qmixer_model = copy.deepcopy(qmixer_model)
        for target in (self.target_agent_model, self.target_qmixer_model):
            for param in target.parameters():
                param.stop_gradient = True
        clip = None if self.clip_grad_norm is None else paddle.nn.ClipGradByGlobalNorm(self.clip_grad_norm)
        self.optimizer = RMSprop(list(agent_model.parameters()) + list(qmixer_model.parameters()),
                                 learning_rate=self.lr, alpha=0.99, eps=1e-5, grad_clip=clip)
        self.last_info: dict[str, float] = {}

    def _initial_hidden(self, model: Model, batch_size: int) -> paddle.Tensor:
        return model.init_hidden().unsqueeze(0).expand([batch_size, self.n_agents, -1])

    def _init_hidden_states(self, batch_size: int) -> None:
        """Zero the acting hidden states for ``batch_size`` episodes: ``[batch_size, n_agents, hidden]`` (PARL)."""
        self.hidden_states = self._initial_hidden(self.agent_model, batch_size)
        self.target_hidden_states = self._initial_hidden(self.target_agent_model, batch_size)

    def predict_local_q(self, obs: paddle.Tensor, hidden_state: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        """One step of the agent network without autograd: ``agent_model(obs, hidden_state)``.

        Args:
            obs: float32 ``[E * n_agents, obs_dim]`` (or ``[n_agents, obs_dim]``).
            hidden_state: float32 ``[E, n_agents, hidden]`` or ``[E * n_agents, hidden]``.

        Returns:
            ``(q [E * n_agents, n_actions], next hidden state [E * n_agents, hidden])``.
        """
        with paddle.no_grad():
            return self.agent_model(_tensor(obs).astype("float32"), _tensor(hidden_state))

    def _unroll(self, model: Model, obs: paddle.Tensor) -> paddle.Tensor:
        batch, steps, n_agents, obs_dim = obs.shape
        hidden = self._initial_hidden(model, batch)
        qs = []
        for t in range(steps):
            q, hidden = model(obs[:, t].reshape([batch * n_agents, obs_dim]), hidden)
            qs.append(q.reshape([batch, n_agents, -1]))
        return paddle.stack(qs, axis=1)

    def learn(self, state_batch: paddle.Tensor, actions_batch: paddle.Tensor, reward_batch: paddle.Tensor,
              terminated_batch: paddle.Tensor, obs_batch: paddle.Tensor, available_actions_batch: paddle.Tensor,
              filled_batch: paddle.Tensor) -> tuple[float, float]:
        """One RMSprop step on the masked TD loss of a batch of padded episodes; arguments, returns and errors
        as ``parl_algorithms.torch.QMIX.learn`` (state ``[B, T, S]``, actions ``[B, T, n]``, reward / terminated /
        filled ``[B, T, 1]``, obs ``[B, T, n, O]``, available actions ``[B, T, n, A]``) -> ``(loss, mean_td_error)``
        floats.

        Raises:
            ValueError: see :func:`parl_algorithms._qmix.check_episode_batch`.
        """
        arrays = dict(zip(_qmix.BATCH_NAMES, (state_batch, actions_batch, reward_batch, terminated_batch, obs_batch,
                                              available_actions_batch, filled_batch), strict=True))
        batch, steps, n_actions = _qmix.check_episode_batch({k: _host(v) for k, v in arrays.items()}, self.n_agents)
        tensor = {k: _tensor(v) for k, v in arrays.items()}
        state, obs = tensor["state_batch"].astype("float32"), tensor["obs_batch"].astype("float32")
        reward, terminated = tensor["reward_batch"].astype("float32"), tensor["terminated_batch"].astype("float32")
        filled, actions = tensor["filled_batch"].astype("float32"), tensor["actions_batch"].astype("int64")
        available = tensor["available_actions_batch"] != 0

        local_qs = self._unroll(self.agent_model, obs)
        if local_qs.shape[3] != n_actions:
            raise ValueError(f"QMIX.learn: agent_model returns {local_qs.shape[3]} Q values per agent but "
                             f"available_actions_batch has n_actions={n_actions}; build the agent network with the "
                             "env's n_actions outputs")
        chosen_local_qs = paddle.take_along_axis(local_qs[:, :-1], actions[:, :-1].unsqueeze(3), axis=3).squeeze(3)
        q_tot = self.qmixer_model(chosen_local_qs, state[:, :-1])
        with paddle.no_grad():
            target_local_qs = self._unroll(self.target_agent_model, obs)[:, 1:]
            online_next = local_qs.detach()[:, 1:] if self.double_q else None
            target_max_qs = marl_functional.qmix_target_max_q(target_local_qs, available[:, 1:], online_next)
            target_q_tot = self.target_qmixer_model(target_max_qs, state[:, 1:])
        mask = _qmix.transition_mask(filled)
        loss, mean_td_error = marl_functional.qmix_td_loss(q_tot, target_q_tot, reward[:, :-1],
                                                           terminated[:, :-1], mask, self.gamma)
        self.optimizer.clear_grad()
        loss.backward()
        info = {}
        if self.clip_grad_norm is not None:
            info["train/grad_norm"] = float(grad_norm(self.optimizer))
        self.optimizer.step()
        count = mask.sum()
        self.last_info = {"train/q_tot_mean": float((q_tot.detach() * mask).sum() / count),
                          "train/target_mean": float((target_q_tot * mask).sum() / count), **info}
        return float(loss), float(mean_td_error)

    def sync_target(self) -> None:
        """Copy the agent network and the mixer into their target networks (PARL's ``sync_target``)."""
        self.agent_model.sync_weights_to(self.target_agent_model)
        self.qmixer_model.sync_weights_to(self.target_qmixer_model)

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)
