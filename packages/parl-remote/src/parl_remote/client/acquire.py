"""Acquiring a job for a new actor: the client's side of the master's scheduling (``server/master.py``)."""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from parl_remote.errors import RemoteError, ResourceError
from parl_remote.wire.protocol import MsgType


class Client(Protocol):
    """What :func:`acquire` reads of ``session.Client`` (which calls it): a structural type, so that this module
    needs no import of the session."""

    address: str
    client_id: str
    master: Any  # master_link.MasterConnection
    embedded: Any  # cluster.LocalCluster of an embedded cluster, else None
    resource_wait_s: float

    def _register(self, master: Any) -> None: ...

logger = logging.getLogger(__name__)

#: the longest an embedded cluster may take to start its jobs before actor creation gives up (seconds)
EMBEDDED_START_S = 120.0


def acquire(client: Client, class_name: str, max_memory_mb: float | None, n_gpu: int) -> dict:
    """Asks the master for a job for a new actor of ``class_name``, waiting up to ``resource_wait_s`` for a free
    CPU (and ``n_gpu`` GPUs); returns the grant (the job's address, pid, worker and GPUs).

    The start-up of an embedded cluster (its worker, zygote and ``XPARL_PRELOAD`` imports) does not count
    against the wait; it has a limit of its own, ``EMBEDDED_START_S``.

    Raises:
        ResourceError: no free CPU / GPU within the wait, a GPU request no worker can ever meet, or an embedded
            cluster that did not start its jobs.
        RemoteError: an unexpected answer from the master.
    """
    first_asked = time.monotonic()
    deadline = first_asked + client.resource_wait_s
    startup_deadline = 0.0
    delay_s = 0.01
    warned = False
    while True:
        kind, body = client.master.request(
            MsgType.ACQUIRE_JOB,
            {"client_id": client.client_id, "class_name": class_name, "max_memory_mb": max_memory_mb, "n_gpu": n_gpu,
             "waited_s": time.monotonic() - first_asked},  # the master's grant latency histogram
        )
        if kind is MsgType.REPLY:
            return body
        if kind is MsgType.REREGISTER:  # a restarted master does not know this client yet
            client._register(client.master)
            continue
        if kind is MsgType.NO_RESOURCE and body.get("kind") == "gpu_never":
            raise ResourceError(
                f"{class_name} asks for n_gpu={n_gpu}, but no worker of the cluster at {client.address} has that "
                f"many GPUs (GPUs per worker: {body.get('gpus_per_worker')}). Ask for fewer, or add a worker with "
                f"enough: `xparl connect --address {client.address} --gpu 0,1,...` on a GPU machine"
            )
        if kind is MsgType.NO_RESOURCE and body.get("kind") == "cpu_on_gpu_cluster":
            raise ResourceError(
                f"{class_name} is a CPU actor (n_gpu=0), but every worker of the cluster at {client.address} is a GPU "
                "cluster's worker, which takes GPU actors only (PARL's rule for `xparl start --gpu_cluster`). Give the "
                f"class GPUs (@parl.remote_class(n_gpu=1)), or add CPUs: `xparl connect --address {client.address} "
                "--cpu_num N` on a machine without --gpu"
            )
        if kind is not MsgType.NO_RESOURCE:
            raise RemoteError(f"unexpected answer from the master: {kind.name} {body!r}")
        starting = body["total"] == 0 or body["used"] + body.get("ready", body["vacant"]) < body["total"]
        if starting and client.embedded is not None:
            # the embedded cluster's worker or its jobs are still starting (an interpreter, the zygote and its
            # XPARL_PRELOAD imports): that does not count against resource_wait_s, but has a limit of its own
            startup_deadline = startup_deadline or time.monotonic() + EMBEDDED_START_S
            if time.monotonic() >= startup_deadline:
                raise ResourceError(
                    f"the embedded cluster did not start its jobs within {EMBEDDED_START_S:g} s; see its "
                    f"logs in {client.embedded.log_dir} (worker-*.log; jobs.log under <state dir>/logs)"
                )
            deadline = time.monotonic() + client.resource_wait_s
        elif time.monotonic() >= deadline and body.get("kind") == "gpu":
            raise ResourceError(
                f"no {n_gpu} free GPU(s) with a free CPU on one worker for a {class_name} actor after waiting "
                f"{client.resource_wait_s:g} s: the cluster at {client.address} has {body['gpus_total']} GPUs, "
                f"{body['gpus_used']} held by other actors. Delete actors that hold GPUs, or add a GPU worker: "
                f"`xparl connect --address {client.address} --gpu 0,1`"
            )
        elif body["total"] == 0 and time.monotonic() >= deadline:
            raise ResourceError(
                f"no free CPU for a {class_name} actor after waiting {client.resource_wait_s:g} s: the cluster at "
                f"{client.address} has no worker. Add one: `xparl connect --address {client.address}` on a machine "
                "with CPUs to spare"
            )
        elif time.monotonic() >= deadline:
            raise ResourceError(
                f"no free CPU for a {class_name} actor after waiting {client.resource_wait_s:g} s: the cluster at "
                f"{client.address} has {body['total']} CPUs on {body['workers']} workers, {body['used']} in use. "
                f"Delete unused actors, or add CPUs: `xparl connect --address {client.address} --cpu-num N` "
                "on another machine (or restart with a larger --cpu-num)"
            )
        if not warned and time.monotonic() + 5 < deadline and delay_s >= 0.2:
            logger.info("no vacant CPU yet for %s; waiting up to %.0f s", class_name, client.resource_wait_s)
            warned = True
        time.sleep(delay_s)
        delay_s = min(delay_s * 2, 0.2)

