"""The Flask application factory of the parl monitor."""

from __future__ import annotations

import datetime as _dt
import hmac
import ipaddress
import secrets
import time
from typing import Any
from urllib.parse import urlencode

from flask import Flask, abort, current_app, g, jsonify, redirect, render_template, request, session
from werkzeug.exceptions import HTTPException

from parl_monitor.state import EXTENSION, ClusterUnavailableError, MonitorState, current_state

DEFAULTS: dict[str, Any] = {
    "ADDRESS": None,  # "host:port" of the cluster's master
    "TOKEN": None,  # the cluster token; required from browsers when HOST is not a loopback address
    "HOST": "127.0.0.1",  # the address the monitor is bound to (decides whether a token is required)
    "PORT": None,  # the monitor's own port (shown in pages only)
    "REQUIRE_TOKEN": None,  # None: required iff HOST is not loopback; True/False forces it
    "PUBLIC": False,  # True: on loopback, actor logs and tracebacks are shown without the token (--public)
    "METRICS_PUBLIC": False,  # True: /metrics needs no token off loopback either (--metrics-public)
    "EVENTS_FILE": None,  # the cluster's event log (events-<port>.jsonl; `xparl start` passes it): the events page
    "EVENTS_SHOWN": 200,  # the latest events the events page shows
    "CLIENT": None,  # a status client object (``state.StatusClient``); tests inject a fake here
    "CLIENT_TIMEOUT_S": 2.0,  # seconds the status client waits for the master
    "CACHE_TTL_S": 1.0,  # a status snapshot is reused for at most this long
    "HISTORY_SIZE": 360,  # samples kept per worker
    "HISTORY_INTERVAL_S": 2.0,  # least seconds between two samples of one worker
    "REFRESH_S": 2.0,  # pages re-read their figures this often (browser polling)
    "PAGE_SIZE": 100,  # rows per page of the overview's workers, clients and actors lists
    "LOG_CHUNK_BYTES": 65536,  # the most log bytes one /api/actors/<id>/log answer carries
    "LOG_DOWNLOAD_MAX_BYTES": 256 * 1024 * 1024,
    "SECRET_KEY": None,  # signs the session cookie; random per process when not given
}
# What reveals the actors' own output (logs, error messages, tracebacks): on a loopback monitor these need the token
# too unless PUBLIC, since every local user can reach a loopback port. (Elsewhere every route needs it.)
PRIVATE_ENDPOINTS = frozenset({"api.actor_log", "api.actor_log_download", "api.errors", "views.errors"})
_FLOATS = ("CLIENT_TIMEOUT_S", "CACHE_TTL_S", "HISTORY_INTERVAL_S", "REFRESH_S")
_INTS = ("PAGE_SIZE", "EVENTS_SHOWN", "HISTORY_SIZE", "LOG_CHUNK_BYTES", "LOG_DOWNLOAD_MAX_BYTES")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (``127.0.0.0/8``, ``::1``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def create_app(config: dict | None = None) -> Flask:
    """Build the monitor's Flask app.

    Configuration comes from ``DEFAULTS``, then the environment variables prefixed ``PARL_MONITOR_`` (e.g.
    ``PARL_MONITOR_ADDRESS=127.0.0.1:8010``, ``PARL_MONITOR_TOKEN``), then ``config`` (which wins). The
    ``MonitorState`` (status client, cache, history) is stored in ``app.extensions["parl_monitor"]``; its
    ``client`` attribute is the contract-B status client. Nothing is contacted until the first request.

    Access: bound to a non-loopback ``HOST`` (or with ``REQUIRE_TOKEN``), every route but ``/healthz`` and static
    files needs the token, and ``/metrics`` too unless ``METRICS_PUBLIC`` (``--metrics-public``: a Prometheus
    server on a private network scrapes it without the token). On loopback, the figures (``/metrics`` included)
    are open, but what the actors themselves wrote (logs, error
    messages and tracebacks: ``PRIVATE_ENDPOINTS``, and ``last_error`` in every record) needs the token as well,
    since any local user can reach a loopback port; ``PUBLIC=True`` (``--public``) opens them to every local user.

    Args:
        config: overrides of ``DEFAULTS`` (keys as in ``DEFAULTS``; ``CLIENT`` may be any object with
            ``status()`` and ``actor_log()``).

    Returns:
        The app, with the HTML views blueprint at ``/`` and the JSON API blueprint at ``/api``.

    Raises:
        ValueError: neither ``ADDRESS`` nor ``CLIENT`` is given, or a token is required (non-loopback HOST)
            but ``TOKEN`` is empty, or a number in the configuration is invalid.
    """
    app = Flask(__name__)
    app.config.update(DEFAULTS)
    app.config.from_prefixed_env("PARL_MONITOR")
    if config:
        app.config.update(config)
    cfg = app.config
    for key in ("ADDRESS", "TOKEN", "HOST", "EVENTS_FILE"):
        if cfg[key] is not None:
            cfg[key] = str(cfg[key])
    try:
        for key in _FLOATS:
            cfg[key] = float(cfg[key])
        for key in _INTS:
            cfg[key] = int(cfg[key])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"parl-monitor configuration: {exc}; numbers are expected for {_FLOATS + _INTS}") from exc
    if cfg["REFRESH_S"] <= 0 or cfg["LOG_CHUNK_BYTES"] <= 0:
        raise ValueError("REFRESH_S and LOG_CHUNK_BYTES must be > 0")
    if cfg["REQUIRE_TOKEN"] is None:
        cfg["REQUIRE_TOKEN"] = not is_loopback(cfg["HOST"] or "127.0.0.1")
    if cfg["REQUIRE_TOKEN"] and not cfg["TOKEN"]:
        raise ValueError(f"parl-monitor bound to {cfg['HOST']} (not loopback) requires the cluster token: pass "
                         "--token T (or PARL_MONITOR_TOKEN), or bind to 127.0.0.1")
    # Without a token, only answer requests addressed to a loopback name (127.0.0.1, localhost, [::1]): a web page
    # on another site cannot read the monitor through DNS rebinding (its requests carry that site's Host -> 400).
    # (Our own check: werkzeug's TRUSTED_HOSTS cannot match an IPv6 literal such as [::1]:8110.)
    cfg.setdefault("LOOPBACK_HOSTS_ONLY", not cfg["REQUIRE_TOKEN"])
    if not cfg["SECRET_KEY"]:
        cfg["SECRET_KEY"] = secrets.token_bytes(32)
    cfg["SESSION_COOKIE_SAMESITE"] = cfg.get("SESSION_COOKIE_SAMESITE") or "Strict"  # Flask's default is None
    cfg["SESSION_COOKIE_HTTPONLY"] = True

    monitor_state = app.extensions[EXTENSION] = MonitorState(
        cfg["CLIENT"], address=cfg["ADDRESS"], token=cfg["TOKEN"], cache_ttl_s=cfg["CACHE_TTL_S"],
        history_size=cfg["HISTORY_SIZE"], history_interval_s=cfg["HISTORY_INTERVAL_S"],
        client_timeout_s=cfg["CLIENT_TIMEOUT_S"])

    from parl_monitor import metrics
    from parl_monitor.api import bp as api_bp
    from parl_monitor.views import bp as views_bp

    app.extensions[metrics.EXTENSION] = metrics.MonitorMetrics(monitor_state)
    app.register_blueprint(views_bp)
    app.register_blueprint(api_bp, url_prefix="/api")
    app.before_request(_start_timer)  # first: the request-latency histogram times refusals too
    app.after_request(_observe_request)
    app.before_request(_check_host)
    app.before_request(_check_token)
    app.register_error_handler(ClusterUnavailableError, _cluster_unavailable)
    app.register_error_handler(HTTPException, _http_error)
    app.add_url_rule("/healthz", "healthz", lambda: jsonify(ok=True))
    app.add_url_rule("/metrics", "metrics", _metrics)
    app.jinja_env.filters.update(ts=format_time, ago=format_ago, mb=format_mb)
    app.jinja_env.globals.update(private_visible=private_visible,
                                 now=lambda: _dt.datetime.now(_dt.timezone.utc).timestamp())
    return app


state = current_state  # the former name


def wants_json() -> bool:
    """True for requests to the JSON API."""
    return request.path == "/api" or request.path.startswith("/api/")


def wants_text() -> bool:
    """True for requests to ``/metrics`` (a scraper: errors are answered as plain text)."""
    return request.path == "/metrics"


def _text_error(message: str, code: int, headers: dict | None = None):
    return current_app.response_class(message.rstrip() + "\n", status=code, mimetype="text/plain",
                                      headers={"Cache-Control": "no-store", **(headers or {})})


def _start_timer():
    g.parl_monitor_started = time.perf_counter()


def _observe_request(response):
    from parl_monitor import metrics

    started = g.get("parl_monitor_started")
    if started is not None:
        current_app.extensions[metrics.EXTENSION].observe(request.endpoint, started)
    return response


def _metrics():
    """``GET /metrics``: the cluster's figures in the Prometheus text format (``parl_monitor.metrics``).

    ``name[]=<metric>`` (repeatable, Prometheus' convention) keeps only those families; other query parameters are
    ignored, as on every route. A master that does not answer is ``parl_master_up 0`` with status 200.
    """
    from prometheus_client import generate_latest

    from parl_monitor import metrics

    registry = current_app.extensions[metrics.EXTENSION].registry
    names = request.args.getlist("name[]")
    if names:
        registry = metrics.Only(registry, names)
    return current_app.response_class(generate_latest(registry), mimetype=None,
                                      headers={"Content-Type": metrics.CONTENT_TYPE, "Cache-Control": "no-store"})


def _check_host():
    """Refuse (400) a request whose Host header is not a loopback name, when ``LOOPBACK_HOSTS_ONLY``."""
    if not current_app.config["LOOPBACK_HOSTS_ONLY"]:
        return None
    host = request.host
    name = host[: host.index("]") + 1] if host.startswith("[") and "]" in host else host.rsplit(":", 1)[0]
    if not is_loopback(name):
        abort(400, description=f"Host {host!r} is not accepted: open the monitor at http://127.0.0.1:<port>")
    return None


def private_visible() -> bool:
    """True when the current request may see actor logs, error messages and tracebacks (``PUBLIC``, or the token
    was presented)."""
    return bool(current_app.config["PUBLIC"] or g.get("parl_monitor_auth"))


def visible_status() -> dict:
    """The cluster's status snapshot as the current request may see it: ``last_error`` messages and tracebacks
    are withheld (``data.redact_errors``) unless :func:`private_visible`."""
    from parl_monitor import data
    from parl_monitor.state import current_state

    snapshot = current_state().status()
    return snapshot if private_visible() else data.redact_errors(snapshot)


def _check_token():
    """Check the token where one is needed, and note in ``g.parl_monitor_auth`` whether it was presented.

    Accepted: ``Authorization: Bearer <token>``, or ``?token=<token>`` once (it sets a session cookie and
    redirects to the same URL without the token). Refused (401): every request but ``/healthz`` and static files
    when ``REQUIRE_TOKEN``; otherwise (loopback) only ``PRIVATE_ENDPOINTS``, and only unless ``PUBLIC``.
    """
    cfg = current_app.config
    if request.endpoint in ("healthz", "static") or (request.endpoint == "metrics" and cfg["METRICS_PUBLIC"]):
        return None
    g.parl_monitor_auth = bool(session.get("parl_monitor_auth"))
    expected = (cfg["TOKEN"] or "").encode()
    if not g.parl_monitor_auth and expected:
        header = request.headers.get("Authorization", "")
        given = request.args.get("token")
        if header.startswith("Bearer ") and hmac.compare_digest(header[7:].strip().encode(), expected):
            g.parl_monitor_auth = True
        elif given is not None and hmac.compare_digest(given.encode(), expected):
            g.parl_monitor_auth = True
            session["parl_monitor_auth"] = True
            if request.method == "GET" and not wants_json() and not wants_text():  # (a scraper keeps no cookie)
                args = request.args.to_dict(flat=False)
                args.pop("token", None)
                query = urlencode([(k, v) for k, vs in args.items() for v in vs])
                return redirect(request.path + (f"?{query}" if query else ""))
    if g.parl_monitor_auth:
        return None
    if cfg["REQUIRE_TOKEN"]:
        what = "the cluster token is required"
    elif request.endpoint in PRIVATE_ENDPOINTS and not cfg["PUBLIC"]:
        if not expected:
            message = ("actor logs and tracebacks need the cluster token, and this monitor was started without it: "
                       "restart it with --token (or PARL_MONITOR_TOKEN / XPARL_TOKEN), or with --public to show "
                       "them to every user of this machine")
            return _unauthorized(message, 403)
        what = "actor logs and tracebacks need the cluster token (or a monitor started with --public)"
    else:
        return None
    return _unauthorized(f"{what}: send 'Authorization: Bearer <token>' or open the page once with ?token=<token> "
                         "(the token is in the file `xparl start` printed, or XPARL_TOKEN)")


def _unauthorized(message: str, code: int = 401):
    if wants_text():
        return _text_error(message, code)
    if wants_json():
        return jsonify(error="unauthorized", message=message), code
    return render_template("error.html", code=code, title="Token required", message=message), code


def _cluster_unavailable(exc: ClusterUnavailableError):
    if wants_text():
        return _text_error(str(exc), 503)
    if wants_json():
        return jsonify(error="cluster_unavailable", message=str(exc)), 503
    return render_template("error.html", code=503, title="Cluster unavailable", message=str(exc)), 503


def _http_error(exc: HTTPException):
    if wants_text():
        allow = exc.get_headers()
        return _text_error(f"{exc.code} {exc.name}: {exc.description}", exc.code,
                           {k: v for k, v in allow if k.lower() == "allow"})
    if wants_json():
        return jsonify(error=exc.name.lower().replace(" ", "_"), message=exc.description), exc.code
    return render_template("error.html", code=exc.code, title=exc.name, message=exc.description), exc.code


def format_time(value: float | None) -> str:
    """Unix seconds -> ``"YYYY-MM-DD HH:MM:SS UTC"`` ("-" for None)."""
    if value is None:
        return "-"
    return _dt.datetime.fromtimestamp(float(value), _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def format_ago(value: float | None, now: float | None = None) -> str:
    """Seconds elapsed since unix time ``value`` as ``"1h 2m 3s"`` ("-" for None)."""
    if value is None:
        return "-"
    now = _dt.datetime.now(_dt.timezone.utc).timestamp() if now is None else now
    secs = max(int(now - float(value)), 0)
    hours, rest = divmod(secs, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m {seconds}s"
    if minutes:
        return f"{minutes}m {seconds}s"
    return f"{seconds}s"


def format_mb(value: float | None) -> str:
    """Megabytes as an integer string ``"1200 MB"`` ("-" for None)."""
    if value is None:
        return "-"
    return f"{float(value):.0f} MB"
