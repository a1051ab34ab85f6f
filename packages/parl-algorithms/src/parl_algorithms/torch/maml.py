"""MAML (Finn, Abbeel and Levine 2017, "Model-Agnostic Meta-Learning for Fast Adaptation of Deep Networks",
ICML) and its MAML++ training tricks (Antoniou, Edwards and Storkey 2019, "How to train your MAML", ICLR),
as PARL 2.2.1's ``benchmark/torch/maml++`` trains them, written with ``torch.func`` (one ``vmap`` over the
tasks of a meta-batch instead of a Python loop).
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from parl_algorithms._validation import check_model_method
from parl_core.torch import Algorithm, Model
from parl_core.torch.device import DeviceLike, on_device

__all__ = ["MAML", "multi_step_loss_weights"]


def multi_step_loss_weights(num_steps: int, epoch: int, multi_step_loss_epochs: int) -> list[float]:
    """MAML++'s per-step importance of the query losses (multi-step loss, MSL; Antoniou et al. 2019, 4.1).

    Starts uniform (``1 / S`` each); every epoch the weight of each step but the last decays by
    ``1 / (S * multi_step_loss_epochs)`` down to ``0.03 / S``, the last step taking the rest, so that
    after ``multi_step_loss_epochs`` epochs the loss is (almost) the last step's alone. PARL's and the
    authors' (``get_per_step_loss_importance_vector``) schedule.

    Args:
        num_steps: inner steps ``S`` (>= 1).
        epoch: the current epoch (>= 0).
        multi_step_loss_epochs: epochs of annealing (>= 1).

    Returns:
        ``S`` weights summing to 1.
    """
    weights = [1.0 / num_steps] * num_steps
    decay = 1.0 / num_steps / multi_step_loss_epochs
    floor = 0.03 / num_steps
    for i in range(num_steps - 1):
        weights[i] = max(weights[i] - epoch * decay, floor)
    weights[-1] = 1.0 - sum(weights[:-1])
    return weights


def _positive(name: str, value: Any, *, integer: bool = False, zero: bool = False) -> Any:
    kind = int if integer else (int, float)
    if (
        isinstance(value, bool)
        or not isinstance(value, kind)
        or not math.isfinite(value)
        or value < 0
        or (value == 0 and not zero)
    ):
        raise ValueError(
            f"{name} must be a {'non-negative' if zero else 'positive'} "
            f"{'integer' if integer else 'number'}, got {value!r}"
        )
    return value


class MAML(Algorithm):
    """Meta-learn an initialisation from which a few SGD steps on a task's support set fit the task.

    For a meta-batch of ``T`` tasks, each task adapts a copy of the parameters ``theta`` with
    ``num_inner_steps`` steps ``theta_{s+1} = theta_s - alpha_s * grad L_support(theta_s)``; the meta-loss is
    the mean over tasks of the query MSE after the last step (or, with the multi-step loss, a weighted sum
    over steps), minimised by Adam on ``theta`` through the inner steps (second order: the gradient flows
    through ``grad L_support``; first order: it does not). Plain MAML (Finn et al. 2017) is the default;
    the MAML++ tricks (Antoniou et al. 2019) are switched on one by one:

    - ``learnable_inner_lr``: per-layer per-step learning rates (LSLR), one ``alpha`` per adapted parameter
      tensor and step, learned by the outer Adam (their gradient is clipped to ``[-20, 20]`` as PARL does);
    - ``multi_step_loss_epochs``: the multi-step loss (MSL, see :func:`multi_step_loss_weights`) for that
      many epochs;
    - ``first_order_epochs``: derivative-order annealing (DA): first order for that many epochs, then second;
    - ``total_epochs``: cosine annealing of the meta learning rate from ``meta_lr`` to ``min_meta_lr``
      over that many epochs (CA);
    - per-step batch normalisation (BNWB) lives in the model: when its ``forward`` takes a ``step`` keyword,
      the algorithm calls ``forward(x, step=s)`` with ``s`` the number of inner updates made so far
      (``0 .. num_inner_steps``), so the model can hold per-step normalisation parameters.

    The model is any ``parl.Model`` with ``forward(x) -> y`` (``x`` float32 ``[N, in_dim]``, ``y`` float32
    ``[N, out_dim]``, rows independent but for batch normalisation). The inner loop adapts the parameters
    named by ``model.inner_parameter_names()`` when the model defines it (e.g. every weight but the
    normalisation's), all of them otherwise. Loss: mean squared error (regression).

    Args:
        model: the network.
        inner_lr: the inner SGD step size ``alpha`` (initial value when learnable). PARL: 0.001 (learnable);
            Finn et al.: 0.01.
        num_inner_steps: inner SGD steps per task, in training and evaluation (PARL: 3).
        meta_lr: Adam learning rate of the outer loop (0.001).
        first_order: always first order (FOMAML) when True.
        learnable_inner_lr: learn the per-layer per-step inner learning rates (MAML++ LSLR).
        multi_step_loss_epochs: epochs with the multi-step loss (0: off; PARL's MAML++: 10).
        first_order_epochs: epochs trained first order before switching to second order (0: off).
        total_epochs: epochs of the cosine annealing of ``meta_lr`` (None: constant ``meta_lr``).
        min_meta_lr: the annealed learning rate's floor (PARL: 1e-5).
        inner_lr_grad_clip: clip of the inner learning rates' gradients (PARL: 20).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``; default CUDA when available.

    Raises:
        ValueError: a hyperparameter is out of range, the model lacks ``forward``, or
            ``inner_parameter_names()`` names a parameter the model does not have.
    """

    def __init__(
        self,
        model: Model,
        inner_lr: float = 0.01,
        num_inner_steps: int = 1,
        meta_lr: float = 1e-3,
        *,
        first_order: bool = False,
        learnable_inner_lr: bool = False,
        multi_step_loss_epochs: int = 0,
        first_order_epochs: int = 0,
        total_epochs: int | None = None,
        min_meta_lr: float = 1e-5,
        inner_lr_grad_clip: float = 20.0,
        device: DeviceLike = None,
    ) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "forward", "MAML")
        self.num_inner_steps: int = _positive("num_inner_steps", num_inner_steps, integer=True)
        self.meta_lr: float = float(_positive("meta_lr", meta_lr))
        _positive("inner_lr", inner_lr, zero=True)
        self.first_order = bool(first_order)
        self.multi_step_loss_epochs: int = _positive(
            "multi_step_loss_epochs", multi_step_loss_epochs, integer=True, zero=True
        )
        self.first_order_epochs: int = _positive("first_order_epochs", first_order_epochs, integer=True, zero=True)
        if total_epochs is not None:
            _positive("total_epochs", total_epochs, integer=True)
        self.total_epochs = total_epochs
        self.min_meta_lr: float = float(_positive("min_meta_lr", min_meta_lr, zero=True))
        if self.min_meta_lr > self.meta_lr:
            raise ValueError(f"min_meta_lr ({min_meta_lr}) must not exceed meta_lr ({meta_lr}); lower min_meta_lr")
        self.inner_lr_grad_clip: float = float(_positive("inner_lr_grad_clip", inner_lr_grad_clip))

        names = [name for name, _ in model.named_parameters()]
        inner = list(model.inner_parameter_names()) if hasattr(model, "inner_parameter_names") else names
        unknown = sorted(set(inner) - set(names))
        if unknown:
            raise ValueError(
                f"{type(model).__name__}.inner_parameter_names() names {unknown}, which are not "
                f"parameters of the model (it has {names}); return names from named_parameters()"
            )
        if not inner:
            raise ValueError(
                f"{type(model).__name__}.inner_parameter_names() is empty; the inner loop needs at "
                "least one parameter to adapt"
            )
        self.inner_names: tuple[str, ...] = tuple(inner)
        self.learnable_inner_lr = bool(learnable_inner_lr)
        # [S, P]: the step size of each adapted parameter tensor at each inner step (LSLR when learnable)
        self.inner_lrs = torch.nn.Parameter(
            torch.full((self.num_inner_steps, len(self.inner_names)), float(inner_lr), device=self.device),
            requires_grad=self.learnable_inner_lr,
        )
        meta_params = list(model.parameters()) + ([self.inner_lrs] if self.learnable_inner_lr else [])
        self.optimizer = torch.optim.Adam(meta_params, lr=self.meta_lr)
        self._step_kwarg = "step" in inspect.signature(model.forward).parameters
        self.last_info: dict[str, float] = {}

    # -- schedules ---------------------------------------------------------------------------------
    def meta_lr_at(self, epoch: int) -> float:
        """The outer learning rate of ``epoch``: cosine annealed over ``total_epochs`` (PARL's
        ``CosineAnnealingLR(T_max=total_epochs, eta_min=min_meta_lr)``), else ``meta_lr``."""
        if self.total_epochs is None:
            return self.meta_lr
        t = min(epoch, self.total_epochs) / self.total_epochs
        return self.min_meta_lr + (self.meta_lr - self.min_meta_lr) * (1 + math.cos(math.pi * t)) / 2

    def is_second_order(self, epoch: int) -> bool:
        """Whether ``epoch`` differentiates through the inner gradients."""
        return not self.first_order and epoch >= self.first_order_epochs

    def step_weights(self, epoch: int) -> list[float]:
        """Weights of the query losses after each inner step in ``epoch``'s meta-loss."""
        if self.multi_step_loss_epochs and epoch < self.multi_step_loss_epochs:
            return multi_step_loss_weights(self.num_inner_steps, epoch, self.multi_step_loss_epochs)
        return [0.0] * (self.num_inner_steps - 1) + [1.0]

    # -- the inner loop ------------------------------------------------------------------------------
    def _forward(self, params: dict[str, torch.Tensor], x: torch.Tensor, step: int) -> torch.Tensor:
        kwargs = {"step": step} if self._step_kwarg else {}
        return functional_call(self.model, params, (x,), kwargs)

    def _task_losses(self, second_order: bool, query_steps: tuple[int, ...]):
        """``f(inner, outer, lrs, xs, ys, xq, yq) -> [len(query_steps)]`` query MSEs of one task."""

        def task(inner, outer, lrs, xs, ys, xq, yq):
            losses, params = [], inner
            for s in range(self.num_inner_steps):

                def support_loss(p, s=s):
                    return F.mse_loss(self._forward({**p, **outer}, xs, s), ys)

                grads = grad(support_loss)(params)
                if not second_order:
                    grads = {k: g.detach() for k, g in grads.items()}
                params = {k: params[k] - lrs[s, i] * grads[k] for i, k in enumerate(self.inner_names)}
                if s + 1 in query_steps:
                    losses.append(F.mse_loss(self._forward({**params, **outer}, xq, s + 1), yq))
            return torch.stack(losses)

        return task

    def _split_params(self) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        params = dict(self.model.named_parameters())
        inner = {k: params[k] for k in self.inner_names}
        outer = {k: v for k, v in params.items() if k not in inner}
        return inner, outer

    @staticmethod
    def _check_tasks(**tensors: torch.Tensor) -> None:
        shapes = {k: tuple(v.shape) for k, v in tensors.items()}
        if any(len(s) != 3 for s in shapes.values()):
            raise ValueError(
                f"MAML expects task tensors of shape [tasks, points, features], got {shapes}; add the "
                "feature axis with x[..., None]"
            )
        if len({s[0] for s in shapes.values()}) != 1:
            raise ValueError(f"MAML expects the same number of tasks in every tensor, got {shapes}")

    @on_device
    def learn(
        self,
        x_support: torch.Tensor,
        y_support: torch.Tensor,
        x_query: torch.Tensor,
        y_query: torch.Tensor,
        epoch: int = 0,
    ) -> torch.Tensor:
        """One meta-update (one Adam step) on a meta-batch of ``T`` tasks.

        Args:
            x_support: float32 ``[T, K, in_dim]`` support inputs.
            y_support: float32 ``[T, K, out_dim]`` support targets.
            x_query: float32 ``[T, Q, in_dim]`` query inputs.
            y_query: float32 ``[T, Q, out_dim]`` query targets.
            epoch: the current epoch (>= 0), which sets the schedules (MSL, DA, cosine annealing).

        Returns:
            The meta-loss, a float32 scalar tensor (the weighted query MSE averaged over the tasks).
            ``last_info`` holds ``train/query_mse`` (after the last step), ``train/meta_lr``,
            ``train/second_order`` and the mean inner learning rate ``train/inner_lr_mean``.

        Raises:
            ValueError: tensors are not ``[T, N, features]`` with a common ``T``, or ``epoch < 0``.
        """
        _positive("epoch", epoch, integer=True, zero=True)
        self._check_tasks(x_support=x_support, y_support=y_support, x_query=x_query, y_query=y_query)
        lr = self.meta_lr_at(epoch)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        second_order = self.is_second_order(epoch)
        weights = self.step_weights(epoch)
        steps = tuple(s + 1 for s, w in enumerate(weights) if w > 0)
        inner, outer = self._split_params()
        task = self._task_losses(second_order, steps)
        losses = vmap(task, in_dims=(None, None, None, 0, 0, 0, 0))(
            inner, outer, self.inner_lrs, x_support, y_support, x_query, y_query
        )  # [T, len(steps)]
        w = torch.tensor([weights[s - 1] for s in steps], device=losses.device)
        per_step = losses.mean(0)
        loss = (per_step * w).sum()
        self.optimizer.zero_grad()
        loss.backward()
        if self.learnable_inner_lr and self.inner_lrs.grad is not None:
            self.inner_lrs.grad.clamp_(-self.inner_lr_grad_clip, self.inner_lr_grad_clip)
        self.optimizer.step()
        self.last_info = {
            "train/query_mse": float(per_step[-1].detach()),
            "train/meta_loss": float(loss.detach()),
            "train/meta_lr": lr,
            "train/second_order": float(second_order),
            "train/inner_lr_mean": float(self.inner_lrs.detach().mean()),
        }
        return loss.detach()

    @on_device
    def adapt_predict(self, x_support: torch.Tensor, y_support: torch.Tensor, x_query: torch.Tensor) -> torch.Tensor:
        """Adapt to each task's support set with ``num_inner_steps`` SGD steps; predict its query inputs.

        Args:
            x_support: float32 ``[T, K, in_dim]``.
            y_support: float32 ``[T, K, out_dim]``.
            x_query: float32 ``[T, Q, in_dim]``.

        Returns:
            float32 ``[T, Q, out_dim]`` predictions of the adapted networks (no graph to the parameters).
        """
        self._check_tasks(x_support=x_support, y_support=y_support, x_query=x_query)
        inner, outer = self._split_params()
        inner = {k: v.detach() for k, v in inner.items()}
        outer = {k: v.detach() for k, v in outer.items()}
        lrs = self.inner_lrs.detach()
        last = self.num_inner_steps

        def task(xs, ys, xq):
            params = inner
            for s in range(self.num_inner_steps):

                def support_loss(p, s=s):
                    return F.mse_loss(self._forward({**p, **outer}, xs, s), ys)

                grads = grad(support_loss)(params)
                params = {k: params[k] - lrs[s, i] * grads[k] for i, k in enumerate(self.inner_names)}
            return self._forward({**params, **outer}, xq, last)

        with torch.no_grad():
            return vmap(task)(x_support, y_support, x_query)

    @on_device
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """The meta-learned (unadapted) network's output, float32 ``[N, out_dim]`` for ``x`` ``[N, in_dim]``."""
        kwargs = {"step": 0} if self._step_kwarg else {}
        return self.model(x, **kwargs)
