"""COMA (Foerster et al. 2018, "Counterfactual Multi-Agent Policy Gradients", AAAI) on PaddlePaddle, with the
API of PARL's torch ``COMA`` (PARL 2.2.1 had no paddle COMA)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import paddle

from parl_algorithms._coma import check_coma_batch, check_model_sizes, coma_epsilon, coma_hyperparameters
from parl_algorithms._validation import check_model_method
from parl_algorithms.paddle import marl_functional as F
from parl_algorithms.paddle._common import grad_norm, readable_shape_errors
from parl_core.paddle import Algorithm, Model

__all__ = ["COMA"]

_HINT = "See PARL's benchmark/torch/coma/sc2_model.py (ComaModel: actor_model, critic_model) for the contract."


class COMA(Algorithm):
    """COMA for cooperative agents with Discrete actions and a common (team) reward; the same algorithm as
    :class:`parl_algorithms.torch.COMA` (whose docstring lists the fixes to PARL's COMA), line for line.

    The TD(lambda) target uses the target network on the next step's inputs
    (``target_model.value(critic_inputs_next)``), not the online network on the current inputs as PARL's
    torch COMA did. Optimizers: ``paddle.optimizer.RMSProp`` with ``rho=0.99`` and ``epsilon=1e-16`` (paddle
    divides by ``sqrt(r + epsilon)``, torch by ``sqrt(r) + 1e-8``: the two agree to 1e-8), each clipping its
    gradients' global norm to ``grad_norm_clip``.

    Args:
        model: a ``parl_core.paddle.Model`` with ``policy(obs, h) -> (logits [B, n_actions], h)``,
            ``value(inputs) -> Q [B, n_actions]``, ``get_actor_params()``, ``get_critic_params()`` and
            ``actor_model.init_hidden() -> [1, hidden]``.
        n_actions, n_agents, grad_norm_clip, actor_lr, critic_lr, gamma, td_lambda, entropy_coeff: as the torch
            COMA (``None`` takes PARL's ``coma_config.py`` value).
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"``; paddle's device (process-wide); default paddle's own.

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: as the torch COMA.
    """

    def __init__(self, model: Model, n_actions: int, n_agents: int, grad_norm_clip: float | None = None,
                 actor_lr: float | None = None, critic_lr: float | None = None, gamma: float | None = None,
                 td_lambda: float | None = None, *, entropy_coeff: float = 0.0, device: str | None = None) -> None:
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
        for param in self.target_model.parameters():
            param.stop_gradient = True
        self.actor_parameters = list(self.model.get_actor_params())
        self.critic_parameters = list(self.model.get_critic_params())
        self.critic_optimizer = self._rmsprop(self.critic_parameters, self.critic_lr)
        self.actor_optimizer = self._rmsprop(self.actor_parameters, self.actor_lr)
        self.last_info: dict[str, float] = {}

    def _rmsprop(self, params: list, lr: float) -> paddle.optimizer.RMSProp:
        return paddle.optimizer.RMSProp(learning_rate=lr, rho=0.99, epsilon=1e-16, parameters=params,
                                        grad_clip=paddle.nn.ClipGradByGlobalNorm(self.grad_norm_clip))

    def init_hidden(self, ep_num: int) -> paddle.Tensor:
        """The actor's initial hidden state for ``ep_num`` episodes, float32 ``[ep_num, n_agents, hidden]``.

        Raises:
            ValueError: the model has no ``actor_model.init_hidden()`` (COMA's actor is recurrent).
        """
        actor = getattr(self.model, "actor_model", None)
        if not callable(getattr(actor, "init_hidden", None)):
            raise ValueError("COMA needs a recurrent actor: give the model an `actor_model` attribute with "
                             "`init_hidden()` returning float32 [1, hidden] (PARL's sc2_model.ActorModel)")
        return actor.init_hidden().unsqueeze(0).tile([int(ep_num), self.n_agents, 1])

    @readable_shape_errors
    def predict(self, obs: paddle.Tensor, rnn_h_in: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        """The actor's action probabilities (no gradient; no masking or epsilon: the agent adds them).

        Args:
            obs: float32 ``[B, D_actor]``; rnn_h_in: float32 ``[B, hidden]``.

        Returns:
            ``(prob float32 [B, n_actions], rnn_h_out float32 [B, hidden])``.
        """
        obs = _float(obs)
        if obs.ndim != 2:
            raise ValueError(f"COMA.predict needs obs float32 [B, D_actor] (one row per agent), got shape "
                             f"{list(obs.shape)}; add a batch axis with obs[None]")
        with paddle.no_grad():
            logits, rnn_h_out = self.model.policy(obs, _float(rnn_h_in))
            return paddle.nn.functional.softmax(self._logits(logits, obs.shape[0]), axis=-1), rnn_h_out

    def _logits(self, logits: Any, rows: int) -> paddle.Tensor:
        if isinstance(logits, (tuple, list)) or logits.shape[-1] != self.n_actions or \
                int(np.prod(logits.shape)) != rows * self.n_actions:
            got = type(logits).__name__ if isinstance(logits, (tuple, list)) else list(logits.shape)
            raise ValueError(f"COMA needs model.policy(obs, h) to return (logits float32 "
                             f"[B, n_actions={self.n_actions}]"
                             f", h) for B={rows} input rows, got {got}. {_HINT}")
        return logits.reshape([rows, self.n_actions])

    def _q(self, net: Model, inputs: paddle.Tensor) -> paddle.Tensor:
        episodes, steps, agents = inputs.shape[:3]
        q = net.value(inputs.reshape([episodes * steps * agents, -1]))
        if list(q.shape) != [episodes * steps * agents, self.n_actions]:
            raise ValueError(f"COMA needs model.value(inputs) to return Q of every action of the agent, float32 "
                             f"[B, n_actions={self.n_actions}], got {list(q.shape)} for B={episodes * steps * agents}"
                             f". {_HINT}")
        return q.reshape([episodes, steps, agents, self.n_actions])

    @staticmethod
    def _batch(batch: dict) -> dict[str, paddle.Tensor]:
        out = {}
        for key, value in batch.items():
            if key in ("o", "s", "u_onehot"):
                continue
            tensor = value if isinstance(value, paddle.Tensor) else paddle.to_tensor(np.asarray(value))
            if key in ("u", "u_next"):
                tensor = tensor.astype("int64")
                out[key] = tensor.squeeze(-1) if tensor.ndim == 4 else tensor
            else:
                out[key] = tensor.astype("float32")
        return out

    @readable_shape_errors
    def learn(self, batch: dict, epsilon: float) -> tuple[paddle.Tensor, paddle.Tensor]:
        """One critic step then one actor step on a batch of whole episodes; the batch, the return and the errors
        are those of :meth:`parl_algorithms.torch.COMA.learn`.

        Returns:
            ``(critic_loss, actor_loss)`` float32 scalar tensors.
        """
        epsilon = coma_epsilon(epsilon)
        episodes, steps = check_coma_batch(batch, self.n_agents, self.n_actions)
        b = self._batch(batch)
        u = b["u"]
        if "u_next" in b:
            u_next = b["u_next"]
        else:
            u_next = paddle.concat([u[:, 1:], paddle.zeros_like(u[:, :1])], axis=1)
        mask = (1.0 - b["padded"]).expand([episodes, steps, self.n_agents])

        q_evals = self._q(self.model, b["critic_inputs"])
        with paddle.no_grad():
            q_next = paddle.take_along_axis(self._q(self.target_model, b["critic_inputs_next"]),
                                            u_next.unsqueeze(-1), axis=-1).squeeze(-1)
        targets = F.coma_td_lambda_targets(b["r"], q_next, b.get("terminated", b["isover"]), b["isover"],
                                           b["padded"], self.gamma, self.td_lambda)
        q_taken = paddle.take_along_axis(q_evals, u.unsqueeze(-1), axis=-1).squeeze(-1)
        critic_loss = F.coma_critic_loss(q_taken, targets, mask)
        self.critic_optimizer.clear_grad()
        critic_loss.backward()
        critic_grad_norm = grad_norm(self.critic_optimizer)
        self.critic_optimizer.step()

        h = self.init_hidden(episodes)
        logits = []
        inputs = b["actor_inputs"]
        for t in range(steps):
            out, h = self.model.policy(inputs[:, t].reshape([episodes * self.n_agents, -1]), h)
            logits.append(self._logits(out, episodes * self.n_agents).reshape([episodes, self.n_agents, -1]))
        pi = F.coma_policy_probs(paddle.stack(logits, axis=1), b["avail_u"], epsilon)
        advantage, _, _ = F.coma_counterfactual_advantage(q_evals, pi, u)
        actor_loss, entropy = F.coma_actor_loss(pi, u, advantage, mask, self.entropy_coeff)
        self.actor_optimizer.clear_grad()
        actor_loss.backward()
        actor_grad_norm = grad_norm(self.actor_optimizer)
        self.actor_optimizer.step()
        self.actor_optimizer.clear_grad()
        self.critic_optimizer.clear_grad()

        count = float(mask.sum().clip(min=1.0))
        self.last_info = {
            "train/critic_loss": float(critic_loss), "train/actor_loss": float(actor_loss),
            "train/entropy": float(entropy), "train/q_taken_mean": float((q_taken.detach() * mask).sum()) / count,
            "train/target_mean": float((targets * mask).sum()) / count,
            "train/advantage_mean": float((advantage * mask).sum()) / count,
            "train/critic_grad_norm": float(critic_grad_norm), "train/actor_grad_norm": float(actor_grad_norm),
        }
        return critic_loss.detach(), actor_loss.detach()

    def sync_target(self, decay: float = 0) -> None:
        """``target = decay * target + (1 - decay) * model`` (PARL: a hard copy, ``decay=0``)."""
        self.model.sync_weights_to(self.target_model, decay=decay)

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call."""
        return dict(self.last_info)


def _float(value: Any) -> paddle.Tensor:
    if isinstance(value, paddle.Tensor):
        return value.astype("float32")
    return paddle.to_tensor(np.asarray(value, dtype=np.float32))

