"""The master's scheduler (a mixin of ``master.Master``): capacity, and granting an idle job, plus whole GPUs,
to a registered client that asks (``ACQUIRE_JOB``). Nothing changes before a request is valid as a whole."""

from __future__ import annotations

import uuid
from typing import Any

from parl_remote.wire.protocol import Message, MsgType


class Scheduling:
    """``capacity`` and ``on_acquire`` of ``master.Master`` (uses its ``workers``, ``clients``, ``_known``,
    ``_new_actor``, ``_send`` and ``_reply``)."""

    def capacity(self) -> dict:
        total = sum(w.cpus_total for w in self.workers.values())
        used = sum(len(w.busy) for w in self.workers.values())
        ready = sum(len(w.vacant) for w in self.workers.values())  # free CPUs whose job process is up
        gpus_total = sum(len(w.gpus) for w in self.workers.values())
        gpus_used = sum(len(w.gpus) - len(w.free_gpus()) for w in self.workers.values())
        return {"total": total, "used": used, "vacant": max(0, total - used), "ready": ready,
                "workers": len(self.workers), "gpus_total": gpus_total, "gpus_used": gpus_used,
                "gpus_per_worker": [len(w.gpus) for w in self.workers.values()]}

    def on_acquire(self, msg: Message) -> None:
        body = msg.body()
        problem = _acquire_problem(body)
        if problem is not None:  # nothing changes before the whole request is valid
            self._reply(msg, {"kind": "bad_request", "message": problem}, MsgType.ERROR)
            return
        if not self._known(msg, self.clients.get(body["client_id"])):  # grants go to registered clients only
            return
        n_gpu = body.get("n_gpu", 0)
        # CPU and GPU actors share the workers: a GPU actor takes one job slot and n_gpu whole GPUs of its worker
        candidates = [w for w in self.workers.values() if w.vacant and len(w.free_gpus()) >= n_gpu]
        if not candidates:
            never = n_gpu > 0 and self.workers and all(len(w.gpus) < n_gpu for w in self.workers.values())
            kind = "gpu_never" if never else ("gpu" if n_gpu else "cpu")
            self._reply(msg, {"kind": kind, **self.capacity()}, MsgType.NO_RESOURCE)
            return
        # a CPU actor prefers workers with no free GPU, so that GPUs keep a job slot beside them
        worker = max(candidates, key=lambda w: (len(w.vacant) if n_gpu else -len(w.free_gpus()), len(w.vacant)))
        job_id, job = next(iter(worker.vacant.items()))
        del worker.vacant[job_id]
        actor_id = "a-" + uuid.uuid4().hex[:12]
        worker.busy.add(actor_id)
        granted = worker.free_gpus()[:n_gpu]
        if granted:
            worker.gpus_used[actor_id] = granted
        # the job exports this before the actor's class is loaded: the granted ids, or none at all for a CPU actor
        # on a worker that offers GPUs (they belong to the GPU actors); None leaves the environment as it is
        visible = ",".join(granted) if worker.gpus else None
        actor = self._new_actor(actor_id, body.get("class_name", ""), body["client_id"], worker,
                                {**job, "gpus": granted})
        client = self.clients.get(body["client_id"])
        if client is not None:
            client.actors.add(actor_id)
        self._send(
            worker.identity,
            MsgType.ASSIGN_JOB,
            {
                "job_id": job_id,
                "actor_id": actor_id,
                "client_id": body["client_id"],
                "class_name": actor["class_name"],
                "max_memory_mb": body.get("max_memory_mb"),
                "gpus": granted,
            },
        )
        self._reply(
            msg, {"actor_id": actor_id, "address": job["address"], "pid": job["pid"], "worker_id": worker.worker_id,
                  "gpus": granted, "cuda_visible_devices": visible}
        )


def _acquire_problem(body: Any) -> str | None:
    """What is wrong with an ACQUIRE_JOB body (signed, so from a token holder, but maybe malformed), or None."""
    if not isinstance(body, dict) or not isinstance(body.get("client_id"), str) or not body["client_id"]:
        return "ACQUIRE_JOB needs a dict with the client_id of a registered client"
    n_gpu, memory = body.get("n_gpu", 0), body.get("max_memory_mb")
    if type(n_gpu) is not int or n_gpu < 0:
        return f"n_gpu must be a whole number >= 0, not {n_gpu!r}"
    if memory is not None and (type(memory) not in (int, float) or not memory > 0):
        return f"max_memory_mb must be a positive number or None, not {memory!r}"
    if not isinstance(body.get("class_name", ""), str):
        return "class_name must be a string"
    return None
