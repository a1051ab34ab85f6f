"""Where a paddle algorithm computes: ``device=`` of ``parl_core.paddle.Algorithm``.

Paddle places new tensors on one process-wide device (``paddle.set_device``), which is the GPU by default in
a CUDA build of paddle (PARL's paddle algorithms rely on that). ``device=None`` keeps that default; a given
device becomes paddle's current device and the model is moved there, so the tensors the algorithm and the
``Agent`` create afterwards live there too.
"""

from __future__ import annotations

import paddle

__all__ = ["resolve_device"]


def resolve_device(device: str | None = None) -> str:
    """Turn a ``device=`` argument into paddle's spelling and check that it exists here.

    Args:
        device: ``None`` (paddle's current device: a GPU in a CUDA build with a visible GPU, else the CPU),
            ``"cpu"``, ``"gpu"`` / ``"gpu:1"``, or torch's spellings ``"cuda"`` / ``"cuda:1"``.

    Returns:
        ``"cpu"`` or ``"gpu:<index>"``.

    Raises:
        TypeError: ``device`` is not a string or ``None``.
        ValueError: an unknown device, a GPU where paddle has no CUDA or no GPU, or a GPU index past the last
            one; the message names ``device="cpu"``.
    """
    if device is None:
        return paddle.get_device()
    if not isinstance(device, str):
        raise TypeError(f"device must be a string such as 'cpu', 'gpu' or 'gpu:1', got {type(device).__name__}; "
                        "e.g. device='cpu'")
    kind, _, index = device.strip().lower().replace("cuda", "gpu").partition(":")
    if kind == "cpu" and not index:
        return "cpu"
    if kind != "gpu" or (index and not index.isdigit()):
        raise ValueError(f"device={device!r} is not a paddle device; pass device='cpu', 'gpu' or 'gpu:<index>'")
    count = paddle.device.cuda.device_count() if paddle.device.is_compiled_with_cuda() else 0
    if count == 0:
        raise ValueError(f"device={device!r} asks for a GPU, but this paddle has no CUDA device "
                         "(a CPU build of paddlepaddle, or no GPU visible); pass device='cpu', or leave device "
                         "unset to use paddle's default device")
    if int(index or 0) >= count:
        raise ValueError(f"device={device!r}: paddle sees {count} GPU(s) (gpu:0 .. gpu:{count - 1}); pass one of "
                         "those, or device='cpu'")
    return f"gpu:{int(index or 0)}"
