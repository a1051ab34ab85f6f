"""The master's scheduler (a mixin of ``master.Master``): capacity, and granting an idle job, plus whole GPUs,
to a registered client that asks (``ACQUIRE_JOB``). Nothing changes before a request is valid as a whole.

A grant costs the same with 10 or 10,000 workers: ``VacancyIndex`` keeps the workers that have a vacant job in
buckets keyed by (free GPUs, vacant jobs), so a grant looks at the few distinct keys, never at every worker
(``benchmarks/scale/bench_scale.py`` measures it). ``capacity`` is summed once per change of the cluster, not per
request."""

from __future__ import annotations

import uuid
from typing import Any

from parl_remote.server.counters import waited_s
from parl_remote.wire.protocol import Message, MsgType


class VacancyIndex:
    """The workers that have a vacant job, bucketed by ``(free GPUs, vacant jobs, GPU-only)``.

    ``update(worker)`` after any change of a worker's vacant jobs or GPUs (or ``remove`` when it leaves);
    ``pick(n_gpu)`` returns the worker the scheduling rule prefers in O(distinct keys), at most
    (GPUs + 1) x (CPUs + 1) x 2 per kind of worker, whatever the number of workers.
    """

    def __init__(self) -> None:
        self.buckets: dict[tuple[int, int, bool], dict[str, Any]] = {}
        self.key_of: dict[str, tuple[int, int, bool]] = {}

    def remove(self, worker_id: str) -> None:
        key = self.key_of.pop(worker_id, None)
        if key is not None:
            bucket = self.buckets[key]
            del bucket[worker_id]
            if not bucket:
                del self.buckets[key]

    def update(self, worker: Any) -> None:
        key = (len(worker.free_gpus()) if worker.gpus else 0, len(worker.vacant), bool(worker.gpu_only))
        if self.key_of.get(worker.worker_id) == key:
            self.buckets[key][worker.worker_id] = worker  # (a re-registered worker is a new record)
            return
        self.remove(worker.worker_id)
        if key[1]:
            self.key_of[worker.worker_id] = key
            self.buckets.setdefault(key, {})[worker.worker_id] = worker

    def pick(self, n_gpu: int) -> Any | None:
        """The worker for an actor of ``n_gpu`` GPUs: one with that many free GPUs and a vacant job; a CPU actor
        prefers workers with no free GPU (so that GPUs keep a job slot beside them), then the most vacant jobs;
        a GPU actor the most vacant jobs. A GPU-only worker takes GPU actors only. None when no worker
        qualifies."""
        keys = [k for k in self.buckets if k[0] >= n_gpu and (n_gpu or not k[2])]
        if not keys:
            return None
        best = max(keys, key=(lambda k: k[1]) if n_gpu else (lambda k: (-k[0], k[1])))
        return next(iter(self.buckets[best].values()))


class Scheduling:
    """``capacity`` and ``on_acquire`` of ``master.Master`` (uses its ``workers``, ``clients``, ``_known``,
    ``_new_actor``, ``_send`` and ``_reply``, and keeps ``vacancy`` with ``_changed``)."""

    def _changed(self, worker: Any = None, gone: str | None = None) -> None:
        """Call after a change of the cluster's workers or jobs: re-indexes ``worker`` (or drops worker id ``gone``
        from the index) and invalidates the cached capacity and status."""
        if worker is not None:
            self.vacancy.update(worker)
        if gone is not None:
            self.vacancy.remove(gone)
        self._capacity = None
        self.generation += 1

    def capacity(self) -> dict:
        """CPUs and GPUs of the registered workers: total, used, vacant, ready (vacant with their job process up)."""
        if self._capacity is None:
            self._capacity = self._sum_capacity()
        return dict(self._capacity)

    def _sum_capacity(self) -> dict:
        total = sum(w.cpus_total for w in self.workers.values())
        used = sum(len(w.busy) for w in self.workers.values())
        ready = sum(len(w.vacant) for w in self.workers.values())  # free CPUs whose job process is up
        gpus_total = sum(len(w.gpus) for w in self.workers.values())
        gpus_used = sum(len(w.gpus) - len(w.free_gpus()) for w in self.workers.values())
        return {
            "total": total,
            "used": used,
            "vacant": max(0, total - used),
            "ready": ready,
            "workers": len(self.workers),
            "gpus_total": gpus_total,
            "gpus_used": gpus_used,
            "gpus_per_worker": [len(w.gpus) for w in self.workers.values()],
        }

    def on_acquire(self, msg: Message) -> None:
        body = msg.body()
        problem = _acquire_problem(body)
        if problem is not None:  # nothing changes before the whole request is valid
            self.counters.refused("bad_request")
            self._reply(msg, {"kind": "bad_request", "message": problem}, MsgType.ERROR)
            return
        if not self._known(msg, self.clients.get(body["client_id"])):  # grants go to registered clients only
            return
        n_gpu = body.get("n_gpu", 0)
        # CPU and GPU actors share the workers: a GPU actor takes one job slot and n_gpu whole GPUs of its worker
        worker = self.vacancy.pick(n_gpu)
        if worker is None:
            never = n_gpu > 0 and self.workers and all(len(w.gpus) < n_gpu for w in self.workers.values())
            gpu_only = not n_gpu and self.workers and all(w.gpu_only for w in self.workers.values())
            kind = "gpu_never" if never else "cpu_on_gpu_cluster" if gpu_only else ("gpu" if n_gpu else "cpu")
            self.counters.refused(kind)
            self._reply(msg, {"kind": kind, **self.capacity()}, MsgType.NO_RESOURCE)
            return
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
        actor = self._new_actor(
            actor_id,
            body.get("class_name", ""),
            body["client_id"],
            worker,
            {**job, "gpus": granted, "max_memory_mb": body.get("max_memory_mb")},
        )
        self._changed(worker)
        client = self.clients.get(body["client_id"])
        if client is not None:
            client.actors.add(actor_id)
        waited = waited_s(body)
        self.counters.granted(waited)
        self._event("actor_granted", actor_id=actor_id, class_name=actor["class_name"], client_id=body["client_id"],
                    worker_id=worker.worker_id, host=worker.host, gpus=granted, waited_s=round(waited, 6))
        self._send(worker.identity, MsgType.ASSIGN_JOB, assignment(actor))
        self._reply(
            msg,
            {
                "actor_id": actor_id,
                "address": job["address"],
                "pid": job["pid"],
                "worker_id": worker.worker_id,
                "gpus": granted,
                "cuda_visible_devices": visible,
            },
        )


def assignment(actor: dict) -> dict:
    """The ``ASSIGN_JOB`` body that gives an actor's job to it (sent again if its worker re-registers before it
    heard of the grant)."""
    return {
        "job_id": actor["job_id"],
        "actor_id": actor["id"],
        "client_id": actor["client_id"],
        "class_name": actor["class_name"],
        "max_memory_mb": actor.get("max_memory_mb"),
        "gpus": actor["gpus"],
    }


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
    waited = body.get("waited_s", 0.0)
    if type(waited) not in (int, float) or not waited >= 0:
        return f"waited_s must be a number of seconds >= 0, not {waited!r}"
    return None
