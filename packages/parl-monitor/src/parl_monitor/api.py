"""The JSON API blueprint (mounted at ``/api``): every figure a page shows, as JSON. See README.md."""

from __future__ import annotations

import codecs

from flask import Blueprint, Response, abort, current_app, jsonify, request

from parl_monitor import data
from parl_monitor.app import visible_status
from parl_monitor.state import ClusterUnavailableError
from parl_monitor.state import current_state as state

bp = Blueprint("api", __name__)


def _page(fn, *args):
    try:
        return fn(*args)
    except data.NotFound as exc:
        abort(404, description=str(exc))


def _int_arg(name: str, default: int, low: int, high: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        abort(400, description=f"{name} must be an integer, got {raw!r}")
    if not low <= value <= high:
        abort(400, description=f"{name} must be in [{low}, {high}], got {value}")
    return value


def _known_actor(actor_id: str) -> dict:
    """The actor's record; 404 unless the id is well-formed and listed by the master (never a path)."""
    return _page(data.actor_page, visible_status(), actor_id)["actor"]


def _read_log(actor_id: str, offset: int, max_bytes: int) -> tuple[bytes, int]:
    try:
        chunk, next_offset = state().actor_log(actor_id, offset, max_bytes)
    except LookupError as exc:  # parl_remote raises a KeyError-like RemoteError for an unknown actor
        abort(404, description=f"no log for actor {actor_id!r}: {exc}")
    except Exception as exc:
        if "notfound" in type(exc).__name__.lower() or "unknown" in type(exc).__name__.lower():
            abort(404, description=f"no log for actor {actor_id!r}: {exc}")
        raise ClusterUnavailableError(f"cannot read the log of actor {actor_id}: {type(exc).__name__}: {exc}") \
            from exc
    return bytes(chunk), int(next_offset)


@bp.get("/")
def index():
    """The list of API routes."""
    rules = sorted(r.rule for r in current_app.url_map.iter_rules() if r.endpoint.startswith("api."))
    return jsonify(routes=rules)


@bp.get("/status")
def status():
    """The raw status snapshot of the cluster (``StatusClient.status``)."""
    return jsonify(visible_status())


@bp.get("/overview")
def overview():
    """Overview figures: cpus, memory, counts, master, workers, clients, actors."""
    return jsonify(data.overview(visible_status()))


@bp.get("/workers")
def workers():
    """All workers with derived figures."""
    return jsonify(workers=data.overview(visible_status())["workers"])


@bp.get("/workers/<worker_id>")
def worker(worker_id: str):
    """One worker, its actors and its history."""
    st = state()
    snapshot = visible_status()
    return jsonify(_page(data.worker_page, snapshot, worker_id, st.history(worker_id)))


@bp.get("/workers/<worker_id>/history")
def worker_history(worker_id: str):
    """A worker's samples, oldest first (time, cpus_used, cpus_total, memory_used_mb, memory_total_mb, load_1m)."""
    st = state()
    page = _page(data.worker_page, visible_status(), worker_id, st.history(worker_id))
    return jsonify(worker_id=worker_id, samples=page["history"])


@bp.get("/clients")
def clients():
    """All clients (each with ``actors_alive``)."""
    return jsonify(clients=data.overview(visible_status())["clients"])


@bp.get("/clients/<client_id>")
def client(client_id: str):
    """One client and its actors."""
    return jsonify(_page(data.client_page, visible_status(), client_id))


@bp.get("/actors")
def actors():
    """All actors the master lists (alive and recently dead)."""
    return jsonify(actors=visible_status().get("actors", []))


@bp.get("/actors/<actor_id>")
def actor(actor_id: str):
    """One actor, with its client's and worker's records."""
    return jsonify(_page(data.actor_page, visible_status(), actor_id))


@bp.get("/errors")
def errors():
    """Every actor's last remote error, newest first."""
    return jsonify(data.errors_page(visible_status()))


@bp.get("/events")
def events():
    """The cluster's latest events, oldest first: ``{"events": [...], "file": path}``; ``last`` (1..10000, default
    ``EVENTS_SHOWN``) of them. 404 when the monitor was started without ``--events-file``."""
    last = _int_arg("last", current_app.config["EVENTS_SHOWN"], 1, 10_000)
    if not current_app.config["EVENTS_FILE"]:
        abort(404, description="this monitor has no event log: start it with --events-file PATH (the cluster's "
                               "events-<port>.jsonl; `xparl start` passes it)")
    return jsonify(data.events_page(current_app.config["EVENTS_FILE"], last))


@bp.get("/actors/<actor_id>/log")
def actor_log(actor_id: str):
    """A chunk of an actor's log from ``offset`` (bytes, default 0), at most ``max_bytes``.

    A negative ``offset`` starts that many bytes before the log's current end (the page's tail view starts at
    ``-1 MiB``); the reply's ``offset`` is then the absolute position the chunk starts at.

    Returns ``{actor_id, offset, next_offset, data, eof}``: ``data`` is UTF-8 text (invalid bytes replaced; a
    multi-byte character cut by the chunk end is left for the next read, so ``next_offset`` may be a little
    less than ``offset + len(bytes)``, and one cut by a tail's start is skipped); ``eof`` is True when the
    chunk was empty (poll again later).
    """
    _known_actor(actor_id)
    cap = current_app.config["LOG_CHUNK_BYTES"]
    offset = _int_arg("offset", 0, -(2**62), 2**62)
    max_bytes = _int_arg("max_bytes", cap, 1, cap)
    chunk, next_offset = _read_log(actor_id, offset, max_bytes)
    if offset < 0:
        offset = next_offset - len(chunk)
        cut = 0
        while cut < min(3, len(chunk)) and chunk[cut] & 0xC0 == 0x80:  # UTF-8 continuation bytes
            cut += 1
        if cut:
            chunk, offset = chunk[cut:], offset + cut
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(chunk, final=False)
    pending = len(decoder.getstate()[0])
    if pending and next_offset - pending > offset:
        next_offset -= pending
    elif pending:  # a lone partial character: give it as a replacement rather than stall
        text += decoder.decode(b"", final=True)
    return jsonify(actor_id=actor_id, offset=offset, next_offset=next_offset, data=text, eof=not chunk)


@bp.get("/actors/<actor_id>/log/download")
def actor_log_download(actor_id: str):
    """The whole log of an actor as a ``text/plain`` attachment named ``<actor_id>.log``."""
    _known_actor(actor_id)
    st = state()
    chunk_bytes = current_app.config["LOG_CHUNK_BYTES"]
    limit = current_app.config["LOG_DOWNLOAD_MAX_BYTES"]
    first, next_offset = _read_log(actor_id, 0, chunk_bytes)

    def generate():
        nonlocal next_offset
        sent = len(first)
        yield first
        chunk = first
        while chunk and sent < limit:
            chunk, next_offset = st.actor_log(actor_id, next_offset, min(chunk_bytes, limit - sent))
            sent += len(chunk)
            if chunk:
                yield bytes(chunk)

    headers = {"Content-Disposition": f'attachment; filename="{actor_id}.log"', "Cache-Control": "no-store"}
    return Response(generate(), mimetype="text/plain", headers=headers)


@bp.after_request
def _no_cache(response):
    response.headers.setdefault("Cache-Control", "no-store")
    return response
