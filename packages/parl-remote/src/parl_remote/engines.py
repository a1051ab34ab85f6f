"""``connect``: joins this process to an engine — an xparl cluster (embedded, or at an address) or a Ray cluster for a
``ray`` / ``ray://`` address — and puts its client in the process-wide slot of ``client.connection``. Above both
engines (``client`` / ``cluster`` for xparl, ``ray`` for Ray), below the ``xparl`` CLI.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from parl_remote.client import connection
from parl_remote.client.master_link import parse_address, resolve_token, token_source
from parl_remote.client.session import Client

logger = logging.getLogger(__name__)


def connect(
    address: str | None = None,
    distributed_files: tuple[str, ...] | list[str] = (),
    token: str | None = None,
    *,
    forward_output: bool = True,
    resource_wait_s: float | None = None,
    cpu_num: int | None = None,
) -> Client:
    """Connects this process to an xparl cluster (PARL's ``parl.connect``), or to a Ray cluster.

    Args:
        address: ``"host:port"`` of a running cluster's master. None starts an embedded local cluster
            (master and worker on 127.0.0.1, ``cpu_num`` CPUs, default one per core) that this process
            owns and stops at exit. ``"ray://HOST:PORT"`` (Ray Client) or ``"ray"`` (``$RAY_ADDRESS``, else
            the Ray cluster of this machine) put every actor on that Ray cluster instead (the Ray engine,
            ``pip install "parl-remote[ray]"``; ``token`` and ``cpu_num`` do not apply there).
        distributed_files: glob patterns of extra files the actors need (data, configs, packages outside
            the script's directory). The ``*.py`` files and sub-packages of the entry script's
            directory are shipped automatically. Shipped once per content hash and cached by workers.
        token: the cluster token; default ``$XPARL_TOKEN`` or the token file ``xparl start`` wrote.
        forward_output: print actors' stdout/stderr here, prefixed with the actor's name and pid
            (always written to each actor's log file as well).
        resource_wait_s: how long creating an actor waits for a free CPU before ``ResourceError``.
        cpu_num: CPUs of the embedded cluster (only without ``address``).

    Returns:
        The process-wide client (a ``parl_remote.ray.engine.RayClient`` for a Ray address).

    Raises:
        MissingDependencyError: a Ray address, and Ray is not installed (names the extra).
        ValueError: malformed address, ``cpu_num`` given with an address, or a ``distributed_files`` pattern
            that matches no file (``files.DistributedFilesError``, checked here as PARL does, not at the first actor).
        ClusterConnectionError: nothing answers at ``address`` within ``MASTER_TIMEOUT_S`` seconds.
        AuthenticationError: wrong or missing token.
        VersionMismatchError: the cluster runs another protocol or Python version.
    """
    if isinstance(distributed_files, str):
        raise TypeError("distributed_files must be a list of glob patterns, e.g. ['data/*.csv']")
    with connection.lock():
        previous = connection.current()
        if previous is not None and previous.pid == os.getpid() and not previous.closed:
            same = previous.address == address if address is not None else previous.embedded is not None
            if same:
                logger.info("already connected to %s", previous.address)
                return previous
            previous.close()
        connection.install(None)
        if is_ray_address(address):  # the Ray engine: the same actors on a Ray cluster (parl_remote/ray/)
            client = _connect_ray(address, token, cpu_num, distributed_files, forward_output, resource_wait_s)
            connection.install(client)
            return client
        embedded = None
        if address is None:
            from parl_remote.cluster import LocalCluster

            embedded = LocalCluster(cpu_num=cpu_num, parent_pid=os.getpid())
            embedded.start()
            address, token = embedded.address, embedded.token
        elif cpu_num is not None:
            raise ValueError("cpu_num only applies to the embedded cluster (connect() without an address)")
        parse_address(address)
        try:
            client = Client(
                address,
                resolve_token(address, token),
                tuple(distributed_files),
                forward_output=forward_output,
                resource_wait_s=resource_wait_s,
                embedded=embedded,
                token_source=token_source(address, token),
            )
        except BaseException:
            if embedded is not None:
                embedded.stop()
            raise
        try:  # PARL's behaviour: a bad distributed_files pattern fails connect(), not the first actor
            client._files_bundle()
        except BaseException:
            client.close()
            raise
        connection.install(client)
        if client.logs_url():  # as PARL does: where to read this client's actor logs
            print(f"[xparl] the logs of this client's actors: {client.logs_url()}", file=sys.stderr)
        return client


def is_ray_address(address: Any) -> bool:
    """True for the addresses that select the Ray engine: ``"ray"`` and ``"ray://HOST:PORT"`` (``parl_remote/ray/``,
    loaded only then)."""
    return isinstance(address, str) and (address == "ray" or address.startswith("ray://"))


def _connect_ray(address: str, token: str | None, cpu_num: int | None, distributed_files: Any,
                 forward_output: bool, resource_wait_s: float | None) -> Any:
    """``connect("ray...")``: a ``RayClient`` (the xparl-only arguments refused with the reason)."""
    if token is not None:
        raise ValueError(
            "token= is an xparl cluster's token; a Ray cluster authenticates with its own token "
            "(RAY_AUTH_MODE=token and RAY_AUTH_TOKEN or ~/.ray/auth_token, see `ray get-auth-token`)"
        )
    if cpu_num is not None:
        raise ValueError("cpu_num only applies to the embedded xparl cluster (connect() without an address); "
                         "a Ray cluster's CPUs are set by `ray start --num-cpus`")
    from parl_remote.ray.engine import RayClient

    return RayClient(address, tuple(distributed_files), forward_output=forward_output,
                     resource_wait_s=resource_wait_s)

