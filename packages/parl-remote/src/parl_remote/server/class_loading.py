"""How a process of the cluster (an xparl job, a Ray engine actor) gets the class a client sent."""

from __future__ import annotations

import importlib
from typing import Any

import cloudpickle


def load_class(class_ref: tuple[str, str] | None, class_blob: bytes | None) -> type:
    """The class sent as ``(module, qualname)`` (imported; a decorated class's ``_original``) or by value.

    Raises:
        ImportError: the reference cannot be imported here and no by-value copy was sent (names the fix).
    """
    if class_ref is not None:
        module_name, qualname = class_ref
        try:
            obj: Any = importlib.import_module(module_name)
            for part in qualname.split("."):
                obj = getattr(obj, part)
            original = getattr(obj, "_original", obj)
            if isinstance(original, type):
                return original
        except Exception:
            if class_blob is None:
                raise ImportError(
                    f"cannot import {module_name}.{qualname} on the worker; ship its file with "
                    "connect(distributed_files=[...]) or install it on the worker"
                ) from None
    return cloudpickle.loads(class_blob)
