"""The acting path shared by the algorithms written once: observations in, the model's outputs back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["act"]


def act(algo: Any, method: str, obs: Any, fn: Callable[[Any], Any], *, single: bool = True) -> Any:
    """``fn(obs)`` on a float32 batch ``[B, *obs_shape]`` on ``algo.device``.

    One unbatched vector observation ``[obs_dim]`` (as PARL code passes) runs as a batch of one and the batch
    axis is removed from every tensor of the result (``[num_actions]`` instead of ``[1, num_actions]``, a 0-d
    action instead of ``[1]``); with ``single=False`` (A3C, IMPALA) it is refused, the message naming ``obs[None]``.

    Raises:
        TypeError: ``obs`` is not numeric.
        ValueError: ``obs`` is 0-d (or 1-d with ``single=False``), or the user's model rejects its shape (the
            message names ``<algorithm>.<method>``, the shape and the fix).
    """
    ops = algo.ops
    (obs,) = args = ops.to_device(algo.device, obs)
    try:
        if single:
            obs = ops.as_float(obs, "obs")
            if len(obs.shape) == 1:
                out = fn(obs.unsqueeze(0))
                return tuple(x[0] for x in out) if isinstance(out, tuple) else out[0]
        return fn(ops.obs_batch(obs, type(algo).__name__))
    except (ValueError, RuntimeError) as err:
        ops.shape_error(algo, method, err, args)
        raise
