"""The client library: the session (``connect``), its link to the master, class shipping, the actor handle
and its reactor, the ``remote_class`` decorator, futures and the cluster status client. Above
``transport/`` and ``wire/``; the master, worker and job processes (``server/``) never import it.

The names of the former ``parl_remote.client`` module stay importable from here (loaded on first use).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Client": "session",
    "disconnect": "connection",
    "get_global_client": "connection",
    "MasterConnection": "master_link",
    "parse_address": "master_link",
    "resolve_token": "master_link",
}


def __getattr__(name: str) -> Any:
    if name == "connect":  # above this layer (it picks the engine): parl_remote.engines
        return importlib.import_module("parl_remote.engines").connect
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'parl_remote.client' has no attribute {name!r}")
    return getattr(importlib.import_module(f"parl_remote.client.{module}"), name)
