"""The HTML views blueprint: overview, worker, client, actor and errors pages.

Each page renders its figures on the server from the same page-data functions as the JSON API
(``parl_monitor.data``) and re-reads them every ``REFRESH_S`` seconds: the page's script fetches
``<page>?fragment=1`` (the live part only) and swaps it in; charts and the log tail use the JSON API.
"""

from __future__ import annotations

from flask import Blueprint, abort, current_app, redirect, render_template, request, url_for

from parl_monitor import data
from parl_monitor.app import visible_status
from parl_monitor.state import current_state as state

bp = Blueprint("views", __name__)


def _render(page: str, title: str, **context):
    shown = state().address or (state().status().get("master") or {}).get("address") or ""
    context.update(title=title, refresh_ms=int(current_app.config["REFRESH_S"] * 1000), address=shown)
    if request.args.get("fragment"):
        response = current_app.make_response(render_template(f"_{page}.html", **context))
    else:
        response = current_app.make_response(render_template(f"{page}.html", **context))
    response.headers["Cache-Control"] = "no-store"
    return response


def _page(fn, *args):
    try:
        return fn(*args)
    except data.NotFound as exc:
        abort(404, description=str(exc))


@bp.get("/")
def overview():
    """The cluster overview: CPUs, memory, workers, clients and actors."""
    pages = {name: request.args.get(f"{name}_page", 1, type=int) for name in data.LISTS}
    page = data.overview(visible_status(), pages, current_app.config["PAGE_SIZE"])
    return _render("overview", "Cluster overview", **page, pages=pages)


@bp.get("/workers/<worker_id>")
def worker(worker_id: str):
    """One worker: CPU and memory use, its actors, and its load over time as a chart."""
    st = state()
    page = _page(data.worker_page, visible_status(), worker_id, st.history(worker_id))
    return _render("worker", f"Worker {worker_id}", **page)


@bp.get("/clients/<client_id>")
def client(client_id: str):
    """One client: host, script, start time and its actors."""
    return _render("client", f"Client {client_id}", **_page(data.client_page, visible_status(), client_id))


@bp.get("/actors/<actor_id>")
def actor(actor_id: str):
    """One actor: state, host, pid, last remote error with traceback, and its log with a live tail."""
    page = _page(data.actor_page, visible_status(), actor_id)
    return _render("actor", f"Actor {actor_id}", **page)


@bp.get("/errors")
def errors():
    """The last remote error of every actor, newest first."""
    return _render("errors", "Remote errors", **data.errors_page(visible_status()))


@bp.get("/events")
def events():
    """The cluster's latest events (workers, clients, actors granted / ended / died, master restarts), newest first."""
    page = data.events_page(current_app.config["EVENTS_FILE"], current_app.config["EVENTS_SHOWN"])
    page["events"] = page["events"][::-1]
    return _render("events", "Cluster events", **page)


# PARL's monitor URLs (parl/remote/monitor.py), so bookmarks and scripts written for PARL land on our pages
@bp.get("/workers")
def parl_workers():
    """PARL's worker list -> the overview's workers table."""
    return redirect(url_for("views.overview") + "#workers")


@bp.get("/clients")
def parl_clients():
    """PARL's client list -> the overview's clients table."""
    return redirect(url_for("views.overview") + "#clients")


@bp.get("/cluster")
def parl_cluster():
    """PARL's cluster JSON -> ours (``/api/status``, the ``ClusterClient.status()`` snapshot)."""
    return redirect(url_for("api.status"))


@bp.get("/logs")
def parl_logs():
    """PARL's job logs of a client (``/logs?client_id=...``) -> that client's page, which links its actors' logs."""
    client_id = request.args.get("client_id")
    if not client_id:
        abort(400, description="PARL's /logs needs ?client_id=...; this monitor lists clients on its overview (/)")
    return redirect(url_for("views.client", client_id=client_id))
