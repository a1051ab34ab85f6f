"""The GPUs a worker offers, and the ``n_gpu`` an actor may ask for.

A worker declares GPU ids (``xparl start --gpu 0,1``, ``xparl connect --gpu 0,1``); without the flag it
detects them: the ids in its own ``CUDA_VISIBLE_DEVICES`` when that is set, else one id per device NVML
reports (``nvidia-ml-py``, an optional dependency imported only here and only when detecting; without it,
or without a driver, the worker offers no GPU). The master grants an ``n_gpu=k`` actor k whole GPUs of one
worker, exclusively, and the job sets ``CUDA_VISIBLE_DEVICES`` to them before the actor's class is loaded.

Every actor, CPU or GPU, runs in one of its worker's job slots. A mixed worker (``xparl connect --gpu 0,1``,
``xparl start --gpu 0,1``) has ``--cpu-num`` slots shared by both kinds. ``xparl start --gpu_cluster`` follows
PARL's rule instead (:func:`local_job_slots`): its local worker runs one job per GPU and ignores ``--cpu_num``.
"""

from __future__ import annotations

import logging
import os

logger = logging.getLogger(__name__)

__all__ = ["parse_ids", "detect", "resolve", "check_n_gpu", "local_job_slots", "NVML_HINT"]

NVML_HINT = "pip install nvidia-ml-py"


def parse_ids(text: str) -> list[str]:
    """``"0,1"`` -> ``["0", "1"]``; ``""`` -> ``[]``.

    Raises:
        ValueError: an id is empty or repeated.
    """
    ids = [part.strip() for part in text.split(",")] if text.strip() else []
    if any(not i for i in ids):
        raise ValueError(f"--gpu {text!r}: give GPU ids separated by commas, e.g. --gpu 0,1")
    if len(set(ids)) != len(ids):
        raise ValueError(f"--gpu {text!r} names a GPU twice; give each id once, e.g. --gpu 0,1")
    return ids


def _nvml_count() -> int | None:
    """Number of NVIDIA GPUs NVML sees; None when NVML (``nvidia-ml-py``) or the driver is missing."""
    try:
        import pynvml  # nvidia-ml-py: optional, and only needed here
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        return int(pynvml.nvmlDeviceGetCount())
    finally:
        pynvml.nvmlShutdown()


def detect() -> list[str]:
    """The GPU ids this machine offers: ``CUDA_VISIBLE_DEVICES`` when set, else NVML's devices, else none."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return parse_ids(visible)
    count = _nvml_count()
    return [str(i) for i in range(count or 0)]


def resolve(declared: str | None) -> tuple[list[str], str | None]:
    """The GPU ids a worker offers, from its ``--gpu`` flag.

    Args:
        declared: the ``--gpu`` value (``"0,1"``, ``""`` for none), or None to detect.

    Returns:
        ``(ids, warning)``: ``warning`` is set when ids were declared on a machine where NVML sees no GPU
        (accepted, so that scheduling can be tested on CPU-only machines).

    Raises:
        ValueError: the ids are malformed, or an integer id is not one of this machine's GPUs (on a machine
            with GPUs); the message names the fix.
    """
    if declared is None:
        return detect(), None
    ids = parse_ids(declared)
    count = _nvml_count()
    if not count:
        if not ids:
            return ids, None
        return ids, (f"--gpu {declared}: no GPU is visible to NVML on this machine ({NVML_HINT} if it has one); "
                     "the ids are offered anyway (useful to test scheduling), but actors cannot use them")
    bad = [i for i in ids if i.isdigit() and int(i) >= count]
    if bad:
        raise ValueError(f"--gpu {declared}: GPU id(s) {', '.join(bad)} do not exist; this machine has {count} "
                         f"GPU(s), ids 0..{count - 1} (see nvidia-smi)")
    return ids, None


def check_n_gpu(n_gpu: object) -> int:
    """Validate ``@remote_class(n_gpu=...)``.

    Raises:
        ValueError: ``n_gpu`` is not a whole number >= 0 (a negative or fractional count, a bool).
    """
    if isinstance(n_gpu, bool) or not isinstance(n_gpu, int) or n_gpu < 0:
        raise ValueError(f"n_gpu is the number of whole GPUs an actor gets: an int >= 0, got {n_gpu!r}; "
                         "e.g. @remote_class(n_gpu=1) (GPUs are not shared between actors)")
    return n_gpu


def local_job_slots(cpu_num: int | None, gpu_ids: list[str], gpu_cluster: bool) -> tuple[int | None, str | None]:
    """The job slots of ``xparl start``'s local worker: PARL's rule for ``--gpu_cluster``.

    PARL 2.2.1's ``xparl start --gpu_cluster`` sets the local worker's CPU count to 0 and gives it one job per
    GPU of ``--gpu`` (its ``scripts.py`` / ``start.py``), so ``--cpu_num`` does not limit how many GPU actors
    run. Here every actor takes a job slot, so a GPU cluster's local worker gets ``len(gpu_ids)`` slots (and takes
    GPU actors only, as PARL's GPU cluster refuses CPU jobs; ``xparl connect --gpu`` to a GPU cluster follows the
    same rule). Without
    ``--gpu_cluster`` (or when no GPU is offered) the worker is a mixed one: ``cpu_num`` slots, CPU and GPU
    actors alike.

    Args:
        cpu_num: ``--cpu-num`` (None: the number of cores).
        gpu_ids: the GPU ids the local worker offers (:func:`resolve`).
        gpu_cluster: ``--gpu_cluster`` was given.

    Returns:
        ``(slots, note)``: the ``cpu_num`` to give the worker (None: the number of cores), and a note for the
        user when ``--cpu-num`` was given but is ignored (else None).
    """
    if not gpu_cluster or not gpu_ids:
        return cpu_num, None
    note = None
    if cpu_num is not None and cpu_num != len(gpu_ids):
        note = (f"--cpu_num {cpu_num} is ignored with --gpu_cluster: the local worker runs one job per GPU "
                f"({len(gpu_ids)}), as PARL's does; for CPU actors beside GPU ones, start without --gpu_cluster "
                "(or add CPU workers: xparl connect without --gpu)")
    return len(gpu_ids), note
