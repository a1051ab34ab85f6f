"""``python -m parl_monitor``: serve the monitor of a cluster (click)."""

from __future__ import annotations

import logging
import os
import signal
import threading

import click

from parl_monitor.process import default_monitor_port, parse_address

logger = logging.getLogger(__name__)


def _watch_parent(pid: int, stop: threading.Event, on_exit) -> None:
    import psutil

    try:
        parent = psutil.Process(pid)
        created = parent.create_time()
    except psutil.NoSuchProcess:
        on_exit()
        return
    while not stop.wait(1.0):
        try:
            alive = parent.is_running() and parent.create_time() == created and \
                parent.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            alive = False
        if not alive:
            logger.info("the cluster process %s ended; the monitor stops", pid)
            on_exit()
            return


@click.command(name="parl-monitor", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--address", required=True, envvar="PARL_MONITOR_ADDRESS",
              help="The cluster's master, host:port (e.g. 127.0.0.1:8010).")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="The monitor's port  [default: the master's port + 100]")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to bind; anything but loopback requires the token.")
@click.option("--token", default=None, envvar=["PARL_MONITOR_TOKEN", "XPARL_TOKEN"],
              help="The cluster token (also PARL_MONITOR_TOKEN / XPARL_TOKEN); browsers must present it when "
                   "the monitor is not bound to loopback.")
@click.option("--public", is_flag=True, default=False,
              help="On loopback, show actor logs, error messages and tracebacks to every user of this machine "
                   "without the token (they need it otherwise).")
@click.option("--metrics-public", is_flag=True, default=False,
              help="Serve /metrics without the token when bound to a non-loopback address, for a Prometheus "
                   "server on a private network (every other route still needs the token).")
@click.option("--events-file", type=click.Path(dir_okay=False), default=None, envvar="PARL_MONITOR_EVENTS_FILE",
              help="The cluster's event log (events-<port>.jsonl in its log folder; `xparl start` passes it), shown "
                   "at /events.")
@click.option("--refresh-s", type=click.FloatRange(min=0.2), default=2.0, show_default=True,
              help="Seconds between two refreshes of a page.")
@click.option("--poll-s", type=click.FloatRange(min=0.2), default=2.0, show_default=True,
              help="Seconds between two samples of the workers' load (the charts).")
@click.option("--parent-pid", type=int, default=None, help="Exit when this process (the master) ends.")
@click.option("--pid-file", type=click.Path(dir_okay=False), default=None,
              help="Write the monitor's pid here while it runs.")
@click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]), default="INFO",
              show_default=True)
def main(address, port, host, token, public, metrics_public, events_file, refresh_s, poll_s, parent_pid, pid_file,
         log_level) -> None:
    """Serve the web monitor of the xparl cluster at ADDRESS."""
    from werkzeug.serving import make_server

    from parl_monitor.app import EXTENSION, create_app

    logging.basicConfig(level=log_level, format="[%(asctime)s %(name)s] %(levelname)s %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    try:
        parse_address(address)
        port = default_monitor_port(address) if port is None else port
        if not token:  # the token the status client will use: logs and tracebacks are shown to its holders
            from parl_remote.client.master_link import resolve_token
            from parl_remote.errors import AuthenticationError

            try:
                token = resolve_token(address, None)
            except AuthenticationError:
                token = None
        app = create_app({"ADDRESS": address, "TOKEN": token, "HOST": host, "PORT": port, "PUBLIC": public,
                          "METRICS_PUBLIC": metrics_public, "EVENTS_FILE": events_file, "REFRESH_S": refresh_s,
                          "HISTORY_INTERVAL_S": poll_s})
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    try:
        server = make_server(host, port, app, threaded=True)
    except (OSError, SystemExit) as exc:  # werkzeug exits when the port is taken
        raise click.ClickException(f"cannot bind the monitor to {host}:{port} ({exc or 'address in use'}); pass "
                                   "another --port (xparl start --monitor-port)") from None
    state = app.extensions[EXTENSION]
    state.start_poller(poll_s)
    stop = threading.Event()
    if parent_pid is not None:
        threading.Thread(target=_watch_parent, args=(parent_pid, stop, server.shutdown), daemon=True,
                         name="parl-monitor-parent").start()

    def on_term(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_term)
    if pid_file:
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    click.echo(f"parl monitor of {address} on http://{shown}:{port}/", err=True)
    if public and not app.config["REQUIRE_TOKEN"]:
        click.echo(f"parl monitor: --public: actor logs and tracebacks on http://{shown}:{port}/ are open to every "
                   "user of this machine")
    if metrics_public and app.config["REQUIRE_TOKEN"]:
        click.echo(f"parl monitor: --metrics-public: http://{shown}:{port}/metrics is open to every host that reaches "
                   f"{host}:{port}")
    try:
        server.serve_forever()
    finally:
        stop.set()
        state.close()
        server.server_close()
        if pid_file:
            try:
                os.remove(pid_file)
            except FileNotFoundError:
                pass
