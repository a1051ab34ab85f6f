"""``Model``: a ``paddle.nn.Layer`` with numpy weight exchange and target-network syncing."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import paddle
from paddle import _C_ops

from parl_core.paddle._mkl import use_mkl_avx2_on_amd

__all__ = ["Model"]


def _check_weights(model: paddle.nn.Layer, weights: Mapping, own: Mapping) -> None:
    """Raise the errors of ``set_weights``: a non-mapping, missing / unexpected keys, shape mismatches."""
    if not isinstance(weights, Mapping):
        raise TypeError(f"set_weights expects a dict name -> array as returned by get_weights(), "
                        f"got {type(weights).__name__}")
    missing = [k for k in own if k not in weights]
    unexpected = [k for k in weights if k not in own]
    mismatched = [
        f"{k}: model {tuple(own[k].shape)} vs given {tuple(np.shape(weights[k]))}"
        for k in own if k in weights and tuple(np.shape(weights[k])) != tuple(own[k].shape)
    ]
    parts = [f"missing keys {missing}"] * bool(missing) + [f"unexpected keys {unexpected}"] * bool(unexpected)
    if mismatched:
        parts.append(f"shape mismatches [{'; '.join(mismatched)}]")
    if parts:
        raise ValueError(f"{type(model).__name__}.set_weights: {', '.join(parts)}; pass the output "
                         "of get_weights() of a model with the same architecture")


def _as_numpy(value: object) -> np.ndarray:
    return value.numpy() if isinstance(value, paddle.Tensor) else np.asarray(value)


def _assign(value: paddle.Tensor, output: paddle.Tensor) -> None:
    paddle.assign(value, output=output)


def split_statistics(model: paddle.nn.Layer) -> tuple[dict, dict]:
    """``(parameters, statistics)`` by name. Paddle keeps BatchNorm's running mean / variance as
    parameters without gradient named ``_mean`` / ``_variance``; those are copied like torch's buffers
    instead of averaged (a target network's frozen weights are still averaged)."""
    params, stats = {}, dict(model.named_buffers())
    for name, param in model.named_parameters():
        is_stat = param.stop_gradient and name.rsplit(".", 1)[-1] in ("_mean", "_variance")
        (stats if is_stat else params)[name] = param
    return params, stats


def soft_update_(targets: list[paddle.Tensor], sources: list[paddle.Tensor], target_stats: list[paddle.Tensor],
                 source_stats: list[paddle.Tensor], decay: float) -> None:
    """In dygraph mode, in place: ``target = decay * target + (1 - decay) * source`` for each pair of ``targets`` /
    ``sources`` (Polyak averaging), and each of ``target_stats`` set to its ``source_stats`` (buffers, BatchNorm's
    running statistics).

    The average is one in-place ``lerp_`` per parameter, ``target + (1 - decay) * (source - target)`` as torch's
    ``lerp_`` in the torch backend (one kernel instead of three and a copy: a soft update of three 64x64 MLPs
    335-353 -> 196-211 us); the copies call ``_C_ops.assign_out_``, which is what ``paddle.assign(x, output=y)``
    runs in dygraph mode after ~30 us of Python checks per tensor (paddle 2.6 and 3.x).

    Args:
        targets, sources: parameters of the same shapes and dtypes, pairwise (any float dtype).
        target_stats, source_stats: the same, copied.
        decay: in ``(0, 1]``; not checked here (:meth:`Model.sync_weights_to` checks it and the pairs).
    """
    weights: dict = {}  # 1 - decay as a 0-d tensor of each parameter dtype
    with paddle.no_grad():
        for dst, src in zip(targets, sources, strict=True):
            weight = weights.get(dst.dtype)
            if weight is None:
                weight = weights[dst.dtype] = _C_ops.full([], 1.0 - decay, dst.dtype, dst.place)
            _C_ops.lerp_(dst, src, weight)
        for dst, src in zip(target_stats, source_stats, strict=True):
            _C_ops.assign_out_(src, dst)


_signal_handler_disabled = False


def _disable_paddle_signal_handler() -> None:
    """Undo, once per process, the C++ failure-signal handler that ``import paddle`` installs.

    That handler turns every SIGTERM (how parl-remote, process managers and ``kill`` stop a process) and
    SIGABRT into a "FatalError: `Termination signal` is detected" report with a C++ traceback on
    stderr, and takes SIGSEGV / SIGFPE / SIGILL / SIGBUS from Python's ``faulthandler``. PARL calls
    ``paddle.disable_signal_handler()`` at ``import parl`` for this reason; here it happens only when the
    first paddle ``Model`` is built, so importing ``parl`` changes nothing.
    """
    global _signal_handler_disabled
    if not _signal_handler_disabled:
        paddle.disable_signal_handler()
        _signal_handler_disabled = True


class Model(paddle.nn.Layer):
    """The forward network(s) of an agent on PaddlePaddle: a policy, a value function, or both.

    Subclass it exactly like ``paddle.nn.Layer`` (call ``super().__init__()``, define ``forward`` or
    the methods an algorithm needs, such as ``value`` and ``policy``). A target network is built with
    ``copy.deepcopy(model)``. Same API as the torch backend's ``parl_core.torch.Model``.

    Building the first model of a process calls ``paddle.disable_signal_handler()`` (see
    :func:`_disable_paddle_signal_handler`) and, on an AMD CPU with AVX2 where ``MKL_DEBUG_CPU_TYPE`` is unset,
    sets it to 5 so that paddle's MKL runs its AVX2 GEMM kernels, about 4x faster than the generic ones it
    picks for a non-Intel CPU (see :func:`parl_core.paddle._mkl.use_mkl_avx2_on_amd`).
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        _disable_paddle_signal_handler()
        use_mkl_avx2_on_amd()
        super().__init__(*args, **kwargs)

    def get_weights(self) -> dict[str, np.ndarray]:
        """Return every parameter and buffer as a numpy copy.

        Returns:
            ``{name: array}`` in ``state_dict`` order (paddle names: a ``Linear`` weight is
            ``[in_features, out_features]``; BatchNorm statistics are ``_mean`` / ``_variance``); each
            array is a CPU copy with the tensor's dtype and shape.
        """
        return {name: np.array(tensor.numpy(), copy=True) for name, tensor in self.state_dict().items()}

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        """Load weights produced by :meth:`get_weights` (of this or an identical model).

        Args:
            weights: ``{name: array}`` with exactly the keys and shapes of ``self.state_dict()``;
                arrays may be numpy arrays or paddle tensors, and are cast to each entry's dtype.

        Raises:
            TypeError: ``weights`` is not a mapping.
            ValueError: keys are missing or unexpected, or a shape differs; the message lists each.
        """
        own = self.state_dict()
        _check_weights(self, weights, own)
        for name, target in own.items():
            target.set_value(_as_numpy(weights[name]).astype(target.numpy().dtype, copy=False))

    def sync_weights_to(self, target_model: Model, decay: float = 0.0) -> None:
        """Soft-update ``target_model`` toward this model.

        ``target = decay * target + (1 - decay) * source`` for every parameter (Polyak averaging, computed as
        ``target + (1 - decay) * (source - target)`` with one in-place ``lerp_``, as torch's backend does;
        ``decay = 1 - tau`` in DDPG's notation), and buffers and non-trainable parameters (BatchNorm's
        running statistics) are copied, as in the torch backend.

        Args:
            target_model: a model with the same parameter names and shapes (usually a deepcopy).
            decay: in ``[0, 1]``; 0 copies the weights.

        Raises:
            TypeError: ``target_model`` is not a ``Model``.
            ValueError: ``target_model`` is this model, ``decay`` is outside ``[0, 1]``, or the two
                models' parameters differ in names or shapes.
        """
        if not isinstance(target_model, Model):
            raise TypeError(f"sync_weights_to expects a parl Model, got {type(target_model).__name__}")
        if target_model is self:
            raise ValueError("sync_weights_to: the target model is the source model itself; "
                             "build the target with copy.deepcopy(model)")
        decay = float(decay)
        if not 0.0 <= decay <= 1.0:
            raise ValueError(f"sync_weights_to: decay must be in [0, 1], got {decay}")
        src_params, src_buffers = split_statistics(self)
        dst_all = dict(target_model.named_parameters()) | dict(target_model.named_buffers())
        dst_params = {k: v for k, v in dst_all.items() if k not in src_buffers}
        dst_buffers = {k: v for k, v in dst_all.items() if k in src_buffers}
        if src_params.keys() != dst_params.keys() or src_buffers.keys() != dst_buffers.keys():
            raise ValueError("sync_weights_to: source and target models have different parameters "
                             f"({sorted(set(src_params) ^ set(dst_params) | set(src_buffers) ^ set(dst_buffers))})")
        for name, src in src_params.items():
            if dst_params[name].shape != src.shape:
                raise ValueError(f"sync_weights_to: shape of {name} differs: "
                                 f"{tuple(src.shape)} vs target {tuple(dst_params[name].shape)}")
        dynamic = paddle.in_dynamic_mode()
        if dynamic and decay > 0.0:
            soft_update_([dst_params[k] for k in src_params], list(src_params.values()),
                         [dst_buffers[k] for k in src_buffers], list(src_buffers.values()), decay)
            return
        copy = _C_ops.assign_out_ if dynamic else _assign  # (see soft_update_)
        with paddle.no_grad():
            for name, src in src_params.items():
                dst = dst_params[name]
                copy(src if decay == 0.0 else decay * dst + (1.0 - decay) * src, dst)
            for name, src in src_buffers.items():
                copy(src, dst_buffers[name])
