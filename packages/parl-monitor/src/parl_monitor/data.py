"""Page data: one function per page, each turning a status snapshot into the dict that both the HTML view
renders and the JSON API returns (so every figure a page shows is also in the API)."""

from __future__ import annotations

import math
import re
from typing import Any

from parl_monitor.state import summarize

# Ids are opaque tokens made by the master ("w-...", "c-...", "a-..."). Anything else is refused before any
# lookup; a log is only ever read for an id that the master lists, never for a path.
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,199}$")


class NotFound(LookupError):
    """An id that is malformed or not in the cluster's status (the views answer 404)."""


def valid_id(value: str) -> bool:
    """True when ``value`` looks like a cluster id (letters, digits, ``_ . : @ -``; no ``/`` and no ``..``)."""
    return bool(ID_RE.match(value)) and ".." not in value


def _index(items: list[dict]) -> dict[str, dict]:
    return {str(item.get("id")): item for item in items}


def _find(snapshot: dict, kind: str, item_id: str) -> dict:
    if not valid_id(item_id):
        raise NotFound(f"malformed {kind[:-1]} id")
    found = _index(snapshot.get(kind, [])).get(item_id)
    if found is None:
        raise NotFound(f"no {kind[:-1]} {item_id!r} in the cluster")
    return found


def worker_view(worker: dict) -> dict[str, Any]:
    """A worker record plus derived figures: ``cpus_vacant``, ``gpus_free`` (the GPU ids no actor holds) and
    ``memory_percent`` (0-100)."""
    total_mb = float(worker.get("memory_total_mb") or 0.0)
    used_mb = float(worker.get("memory_used_mb") or 0.0)
    out = dict(worker)
    out["cpus_vacant"] = int(worker.get("cpus_total", 0)) - int(worker.get("cpus_used", 0))
    out.setdefault("gpus", [])
    out.setdefault("gpus_used", [])
    out["gpus_free"] = [g for g in out["gpus"] if g not in out["gpus_used"]]
    out["memory_percent"] = round(100.0 * used_mb / total_mb, 1) if total_mb > 0 else 0.0
    return out


LISTS = ("workers", "clients", "actors")  # the overview's paged lists


def page_of(items: list, page: int, page_size: int) -> tuple[list, dict[str, int]]:
    """Rows ``page`` (1-based, clamped to the pages there are) of ``items``, ``page_size`` per page, and
    ``{"page", "pages", "size", "total"}``.

    Raises:
        ValueError: ``page_size`` < 1.
    """
    if page_size < 1:
        raise ValueError(f"page_size must be >= 1, not {page_size}")
    pages = max(1, math.ceil(len(items) / page_size))
    page = min(max(1, int(page)), pages)
    rows = items[(page - 1) * page_size : page * page_size]
    return rows, {"page": page, "pages": pages, "size": page_size, "total": len(items)}


def overview(snapshot: dict, pages: dict[str, int] | None = None, page_size: int | None = None) -> dict[str, Any]:
    """The overview page: master, CPU / memory totals, counts, and the lists of workers, clients, actors.

    Args:
        snapshot: the cluster status snapshot.
        pages: the page (1-based) of each list in ``LISTS`` to return (missing: page 1); used with ``page_size``.
        page_size: rows per list; None returns the whole lists (and no ``paging``).

    Returns:
        ``summarize(snapshot)`` plus ``master``, ``workers`` (each with ``cpus_vacant``, ``memory_percent``,
        ``actors``: number of alive actors on it), ``clients`` (each with ``actors_alive``) and ``actors``; with
        ``page_size``, those lists hold one page each and ``paging`` gives ``{list: {page, pages, size, total}}``.
    """
    out = summarize(snapshot)
    actors = snapshot.get("actors", [])
    listed = {name: snapshot.get(name, []) for name in LISTS}
    if page_size is not None:
        paging = {}
        for name in LISTS:
            listed[name], paging[name] = page_of(listed[name], (pages or {}).get(name, 1), page_size)
        out["paging"] = paging
    alive_on: dict[str, int] = {}
    for actor in actors:
        if actor.get("state") == "alive":
            alive_on[str(actor.get("worker_id"))] = alive_on.get(str(actor.get("worker_id")), 0) + 1
    by_id = _index(actors)
    workers = []
    for worker in listed["workers"]:
        w = worker_view(worker)
        w["actors"] = alive_on.get(str(worker.get("id")), 0)
        workers.append(w)
    clients = []
    for client in listed["clients"]:
        c = dict(client)
        ids = [str(i) for i in client.get("actors", [])]
        c["actors_alive"] = sum(1 for i in ids if by_id.get(i, {}).get("state") == "alive")
        clients.append(c)
    out.update(master=snapshot.get("master", {}), workers=workers, clients=clients, actors=listed["actors"])
    return out


def worker_page(snapshot: dict, worker_id: str, history: list[dict]) -> dict[str, Any]:
    """One worker: its record (``worker_view``), its actors and its sampled history (oldest first).

    Raises:
        NotFound: the id is malformed or not a worker of the cluster.
    """
    worker = worker_view(_find(snapshot, "workers", worker_id))
    actors = [a for a in snapshot.get("actors", []) if str(a.get("worker_id")) == worker_id]
    return {"worker": worker, "actors": actors, "history": history}


def client_page(snapshot: dict, client_id: str) -> dict[str, Any]:
    """One client: its record and the full records of its actors (ids the master no longer lists are
    reported in ``missing_actors``).

    Raises:
        NotFound: the id is malformed or not a client of the cluster.
    """
    client = _find(snapshot, "clients", client_id)
    by_id = _index(snapshot.get("actors", []))
    ids = [str(i) for i in client.get("actors", [])]
    # Actors that name this client but are missing from its list (e.g. created since) are shown too.
    ids += [aid for aid, a in by_id.items() if str(a.get("client_id")) == client_id and aid not in ids]
    actors = [by_id[i] for i in ids if i in by_id]
    return {"client": client, "actors": actors, "missing_actors": [i for i in ids if i not in by_id]}


def actor_page(snapshot: dict, actor_id: str) -> dict[str, Any]:
    """One actor: its record (state, host, pid, death cause, ``last_error`` with traceback) and the records of
    its client and worker when the master still lists them (else None).

    Raises:
        NotFound: the id is malformed or not an actor of the cluster.
    """
    actor = _find(snapshot, "actors", actor_id)
    client = _index(snapshot.get("clients", [])).get(str(actor.get("client_id")))
    worker = _index(snapshot.get("workers", [])).get(str(actor.get("worker_id")))
    return {"actor": actor, "client": client, "worker": worker}


def errors_page(snapshot: dict) -> dict[str, Any]:
    """Every actor's last remote error in one place, newest first: ``{"errors": [{actor_id, class_name,
    client_id, host, pid, state, type, message, traceback, time}]}``."""
    rows = []
    for actor in snapshot.get("actors", []):
        err = actor.get("last_error")
        if not err:
            continue
        rows.append({"actor_id": actor.get("id"), "class_name": actor.get("class_name"),
                     "client_id": actor.get("client_id"), "host": actor.get("host"), "pid": actor.get("pid"),
                     "state": actor.get("state"), "type": err.get("type"), "message": err.get("message"),
                     "traceback": err.get("traceback"), "time": err.get("time")})
    rows.sort(key=lambda r: r.get("time") or 0.0, reverse=True)
    return {"errors": rows}


def redact_errors(snapshot: dict) -> dict:
    """A copy of ``snapshot`` whose actors' ``last_error`` keep only ``type`` and ``time``: the message and the
    traceback (what the actor's code wrote) are replaced by None and ``hidden`` is True. The input is not changed.
    """
    out = dict(snapshot)
    actors = []
    for actor in snapshot.get("actors", []):
        err = actor.get("last_error")
        if err:
            actor = dict(actor, last_error={"type": err.get("type"), "time": err.get("time"), "message": None,
                                            "traceback": None, "hidden": True})
        actors.append(actor)
    out["actors"] = actors
    return out


def events_page(events_file: str | None, last: int) -> dict[str, Any]:
    """The latest ``last`` events of the cluster's event log (``parl_remote.server.events``), oldest first:
    ``{"file": path or None, "events": [...]}``; ``file`` is None when the monitor has no event log, and the list is
    empty while the log does not exist yet."""
    if not events_file:
        return {"file": None, "events": []}
    from parl_remote.server.events import read_events

    try:
        events = read_events(events_file, last)
    except FileNotFoundError:
        events = []
    return {"file": events_file, "events": events}
