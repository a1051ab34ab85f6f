"""``xparl``: start, join, inspect and stop clusters (click).

- ``xparl start --port P [--cpu-num N] [--monitor-port M] [--host H] [--token-file F]``: a master and a local
  worker, in the background; pid files, the token (mode 0600) and ``info.json`` go to
  ``<state dir>/clusters/<P>/`` (``$XPARL_HOME``, default ``~/.parl``).
- ``xparl connect --address A [--cpu-num N] [--token-file F] [--host H]``: add a worker from any machine.

The token: ``--token-file F``, else ``$XPARL_TOKEN`` (``--token T`` is accepted but shows T to every user in
``ps``, so it warns); ``xparl connect`` on the machine of ``xparl start`` finds the cluster's token file.
- ``xparl status [--address A]``: ask each master (recorded locally, or the given one).
- ``xparl stop [--port P]``: stop the clusters this user started, through their pid files only.
- ``xparl events [--port P] [-n N] [-f]``: the cluster's latest events from its event log (``server.events``), and
  with ``-f`` those that follow.

PARL's underscore spellings (``--cpu_num``, ``--monitor_port``, ``--gpu_cluster``) are accepted as aliases.
GPUs: ``xparl start [--gpu 0,1]`` and ``xparl connect --gpu 0,1`` offer GPUs to ``n_gpu`` actors (see
``parl_remote.gpus``); unlike PARL, one cluster holds CPU and GPU workers and actors, sharing a worker's
``--cpu-num`` job slots. ``xparl start --gpu_cluster`` follows PARL's rule: the local worker runs one job per GPU
and ignores ``--cpu_num``.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

import click

from parl_remote import __version__, cluster, config, monitor_hook
from parl_remote.errors import AuthenticationError, RemoteError, VersionMismatchError


class _Refused(click.ClickException):
    """The master refused the token or the protocol version: waiting longer cannot help."""


def _wait_ready(address: str, token: str, cpus: int | None, timeout_s: float) -> dict:
    from parl_remote.client.cluster_client import ClusterClient

    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    client = ClusterClient(address, token=token, timeout_s=1.0)
    try:
        while time.monotonic() < deadline:
            try:
                status = client.status()
                if cpus is None or status["cpus"]["total"] >= cpus:
                    return status
            except (AuthenticationError, VersionMismatchError) as exc:  # definitive: retrying cannot help
                raise _Refused(str(exc)) from None
            except RemoteError as exc:
                last = exc
            time.sleep(0.1)
    finally:
        client.close()
    raise click.ClickException(f"the cluster at {address} did not become ready within {timeout_s:g} s ({last})")


def _cpu_num_option(whose: str):
    """The ``--cpu-num`` option (PARL's ``--cpu_num`` too) of ``xparl start`` and ``xparl connect``."""
    return click.option("--cpu-num", "--cpu_num", "cpu_num", type=click.IntRange(min=1), default=None,
                        help=f"CPUs (job slots) of {whose}  [default: number of cores]")


def _gpu_option(whose: str):
    """The ``--gpu`` option (PARL's spelling) of ``xparl start`` and ``xparl connect``."""
    return click.option("--gpu", "gpu", default=None, metavar="IDS",
                        help=f"GPU ids {whose} offers to n_gpu actors, e.g. 0,1  [default: detected with NVML "
                             "(nvidia-ml-py) or CUDA_VISIBLE_DEVICES; none if neither is there]")


def _parl_log_options(func):
    """PARL's ``--debug`` and ``--log_server_port_range`` of ``xparl start`` / ``xparl connect``."""
    func = click.option("--log_server_port_range", "--log-server-port-range", "log_server_port_range", default=None,
                        metavar="START-END",
                        help="PARL's per-worker log server ports: accepted, not needed (actor logs travel through "
                             "the master: `xparl status`, the monitor, ActorDiedError)")(func)  # fmt: skip
    return click.option("--debug", is_flag=True, default=False,
                        help="Debug-level logs from the master, workers and jobs (PARL's flag), in the log "
                             "folder that start prints")(func)  # fmt: skip


def _apply_parl_log_options(debug: bool, log_server_port_range: str | None) -> None:
    if log_server_port_range is not None:
        start, _, end = log_server_port_range.partition("-")
        if not (start.isdigit() and end.isdigit() and int(start) <= int(end)):
            raise click.BadParameter("use START-END, e.g. 8000-9000", param_hint="--log_server_port_range")
        click.echo("note: --log_server_port_range is accepted for PARL's scripts and not needed: actor logs "
                   "travel through the master (no per-worker log server)", err=True)  # fmt: skip
    if debug:
        os.environ["XPARL_DEBUG"] = "1"  # inherited by the master, the workers and their jobs


def _resolve_gpus(gpu: str | None) -> str:
    """The ``--gpu`` value passed to the worker (checked here, so a bad id fails the command itself)."""
    from parl_remote import gpus

    try:
        ids, warning = gpus.resolve(gpu)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if warning:
        click.echo(f"warning: {warning}", err=True)
    return ",".join(ids)


def _host_option(help_text: str):
    """The ``--host`` option (default loopback) of ``xparl start`` / ``xparl connect``."""
    return click.option("--host", default="127.0.0.1", show_default=True, help=help_text)


def _token_options(default_help: str):
    """``--token`` (visible in ``ps``: warns) and ``--token-file`` of ``xparl start`` / ``xparl connect``;
    ``XPARL_TOKEN`` is read when neither is given."""

    def decorate(func):
        func = click.option("--token-file", "token_file", type=click.Path(dir_okay=False), default=None,
                            help="Read the cluster token from this file (or set XPARL_TOKEN).")(func)
        return click.option("--token", default=None,
                            help=f"Cluster token; other users can see it in `ps`: prefer --token-file or "
                                 f"XPARL_TOKEN  [default: {default_help}]")(func)  # fmt: skip

    return decorate


def _cli_token(token: str | None, token_file: str | None) -> tuple[str | None, str]:
    """The token given on the command line and where it came from: ``--token`` (with a warning) or
    ``--token-file``; ``(None, "")`` when neither is given."""
    if token and token_file:
        raise click.UsageError("give --token or --token-file, not both")
    if token:
        click.echo("warning: --token shows the token to every user of this machine (`ps`); use --token-file PATH "
                   "or the XPARL_TOKEN environment variable", err=True)  # fmt: skip
        return token, "--token"
    if token_file:
        try:
            text = pathlib.Path(token_file).read_text().strip()
        except OSError as exc:
            raise click.BadParameter(f"cannot read {token_file}: {exc.strerror}", param_hint="--token-file") from None
        if not text:
            raise click.BadParameter(f"{token_file} is empty", param_hint="--token-file")
        return text, f"--token-file {token_file}"
    return None, ""  # the caller looks at $XPARL_TOKEN (and `connect`, at the cluster's token file)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="xparl")
def main() -> None:
    """xparl: the cluster of PARL's remote actors (@parl.remote_class)."""


@main.command()
@click.option("--port", type=click.IntRange(1, 65535), default=8010, show_default=True, help="Master port.")
@_cpu_num_option("the local worker")
@click.option(
    "--monitor-port",
    "--monitor_port",
    "monitor_port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Port of the web monitor  [default: port + 100]",
)
@_host_option("Interface the master binds; 0.0.0.0 to accept workers and clients from other machines.")
@_token_options("the token of the cluster that last ran on this port, else a new random one")
@_parl_log_options
@click.option("--new-token", is_flag=True, default=False,
              help="Make a new token even if a cluster ran on this port (its surviving workers are then refused).")
@click.option("--no-monitor", is_flag=True, default=False, help="Do not start the web monitor.")
@_gpu_option("the local worker")
@click.option("--gpu-cluster", "--gpu_cluster", "gpu_cluster", is_flag=True, default=False,
              help="PARL's GPU cluster: the local worker runs one job per GPU of --gpu (or of those detected) "
                   "and ignores --cpu-num. Without it, the local worker's --cpu-num slots take CPU and GPU "
                   "actors alike.")
def start(
    port: int, cpu_num: int | None, monitor_port: int | None, host: str, token: str | None, token_file: str | None,
    no_monitor: bool, gpu: str | None, gpu_cluster: bool, new_token: bool, debug: bool,
    log_server_port_range: str | None,
) -> None:
    """Start a master and a local worker in the background (after a crash: a master for the surviving workers)."""
    _apply_parl_log_options(debug, log_server_port_range)
    token = _cli_token(token, token_file)[0] or os.environ.get("XPARL_TOKEN") or None
    gpus = _resolve_gpus(gpu)
    if gpu_cluster and not gpus:
        click.echo("note: --gpu_cluster, but this machine offers no GPU; add GPU workers with "
                   f"`xparl connect --address <this host>:{port} --gpu 0,1`", err=True)
    from parl_remote.gpus import local_job_slots

    cpu_num, slots_note = local_job_slots(cpu_num, gpus.split(",") if gpus else [], gpu_cluster)
    if slots_note:
        click.echo(f"note: {slots_note}", err=True)
    cdir = config.cluster_dir(port)
    for info in cluster.recorded_clusters():
        if info["port"] == port and info["alive"]:
            raise click.ClickException(
                f"a cluster already runs on port {port}; stop it with `xparl stop --port {port}`"
            )
    if monitor_port is None and port + config.MONITOR_PORT_OFFSET <= 65535:
        monitor_port = port + config.MONITOR_PORT_OFFSET
    # a restart after a crash keeps the cluster's token, so its surviving workers and actors rejoin
    old_token, survivor = cluster.previous_run(cdir)
    if token is None and not new_token:
        token = old_token
    survivor = survivor if token is not None and token == old_token else None  # a new token refuses it
    local = cluster.LocalCluster(
        cpu_num=cpu_num, host=host, port=port, token=token, monitor_port=monitor_port, log_dir=cdir, gpus=gpus,
        gpu_cluster=bool(gpu_cluster and gpus),
    )
    try:
        local.start(start_worker=survivor is None)
    except RuntimeError as exc:
        raise click.ClickException(f"{exc} (is port {port} free?)") from exc
    cluster.record(local, cdir, worker_pid=survivor)
    _wait_ready(local.address, local.token, 1 if survivor else local.cpu_num, timeout_s=20.0)
    if survivor:
        click.echo(f"xparl master restarted on port {port} with the cluster's token: the local worker (pid "
                   f"{survivor}) rejoined with its actors (a new token: --new-token)")  # fmt: skip
    if gpu_cluster and gpus:
        click.echo(f"xparl GPU cluster started: master at {local.address}; the local worker runs one job per GPU "
                   f"of {gpus}")
    else:
        click.echo(f"xparl cluster started: master at {local.address} with {local.cpu_num} CPUs"
                   + (f" and GPUs {gpus}" if gpus else ""))
    click.echo(f"  token: {cdir / 'token'} (readable by you only; local clients find it)")
    click.echo(f"  connect from Python: parl.connect('{local.address}')")
    click.echo(
        f"  add CPUs from another machine: xparl connect --address <this host's IP>:{port} --token-file <a copy of it>"
        + ("" if host != "127.0.0.1" else "  (start with --host 0.0.0.0 to accept other machines)")
    )
    click.echo(f"  logs: {cdir}; events: xparl events --port {port} -f")
    if monitor_port and not no_monitor:
        pid = monitor_hook.start_monitor(local.address, monitor_port, local.token, cdir, local.master.pid,
                                         events_file=local.events_file)
        if pid is None:
            click.echo("  monitor: not started (parl-monitor is not installed: pip install parl-monitor)")
        else:
            click.echo(f"  monitor: http://127.0.0.1:{monitor_port}")
    click.echo(f"  stop: xparl stop --port {port}")


@main.command(name="connect")
@click.option("--address", required=True, help="host:port of the cluster's master.")
@_cpu_num_option("this worker")
@_token_options("XPARL_TOKEN, else the token file of a cluster started on this machine")
@click.option("--host", default=None,
              help="Address of this machine that clients can reach (jobs bind it)  [default: this machine's address "
                   "on the route to the master: 127.0.0.1 for a master on this machine]")
@_gpu_option("this worker")
@_parl_log_options
def connect_cmd(
    address: str, cpu_num: int | None, token: str | None, token_file: str | None, host: str | None, gpu: str | None,
    debug: bool, log_server_port_range: str | None,
) -> None:
    """Add a worker with this machine's CPUs (and GPUs) to a running cluster (its jobs listen on ``--host``, by
    default this machine's address on the route to the master, where the clients reach them).

    To a GPU cluster (``xparl start --gpu_cluster``) a machine that offers GPUs adds a worker by PARL's rule: one job
    per GPU, GPU actors only, ``--cpu_num`` ignored."""
    _apply_parl_log_options(debug, log_server_port_range)
    from parl_remote.client.master_link import parse_address, resolve_token, token_source

    gpus = _resolve_gpus(gpu)
    token, source = _cli_token(token, token_file)
    try:
        master_host, port = parse_address(address)
        source = source or token_source(address, None)
        token = resolve_token(address, token)
    except (ValueError, RemoteError) as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        status = _wait_ready(address, token, None, timeout_s=5.0)
        before = status["cpus"]["total"]
    except _Refused as exc:
        raise click.ClickException(f"{exc.message} (this worker's token came from {source})") from exc
    except click.ClickException as exc:
        raise click.ClickException(f"cannot reach the master at {address}: {exc.message}") from exc
    gpu_cluster = bool(status.get("master", {}).get("gpu_cluster")) and bool(gpus)
    if gpu_cluster:
        from parl_remote.gpus import local_job_slots

        cpu_num, slots_note = local_job_slots(cpu_num, gpus.split(","), True)
        if slots_note:
            click.echo(f"note: {slots_note}", err=True)
    cdir = config.cluster_dir(port)
    host = host or config.address_towards(master_host, port)
    cmd = [sys.executable, "-m", "parl_remote.server.worker", "--address", address, "--host", host]
    if cpu_num:
        cmd += ["--cpu-num", str(cpu_num)]
    cmd += ["--gpu", gpus] + (["--gpu-only"] if gpu_cluster else [])
    with open(cdir / "worker-connect.log", "ab") as log:
        proc = subprocess.Popen(
            cmd,
            env=dict(os.environ, XPARL_TOKEN=token, XPARL="True"),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    (cdir / f"worker-{proc.pid}.pid").write_text(str(proc.pid))
    n = cpu_num or os.cpu_count() or 1
    _wait_ready(address, token, before + n, timeout_s=20.0)
    if gpu_cluster:
        click.echo(f"worker (pid {proc.pid}) added GPUs {gpus} (one job per GPU, GPU actors only) to the GPU cluster "
                   f"at {address}")
    else:
        click.echo(f"worker (pid {proc.pid}) added {n} CPUs" + (f" and GPUs {gpus}" if gpus else "")
                   + f" to the cluster at {address}")


def _status_line(address: str, status: dict) -> str:
    """One line per cluster from its status summary (``ClusterClient.status(summary=True)``)."""
    cpus, counts = status["cpus"], status["counts"]
    line = (
        f"Cluster {address}: {counts['workers']} workers, {cpus['used']} used CPUs, {cpus['vacant']} vacant "
        f"CPUs, {counts['clients']} clients, {counts['actors_alive']} actors"
    )
    unreachable = counts["actors_unreachable"]
    if unreachable:  # their worker is silent: a network cut shorter than LINK_GRACE_S costs them nothing
        line += f" ({unreachable} more unreachable)"
    gpus = status.get("gpus") or {}
    if gpus.get("total"):
        line += f", {gpus['used']} used GPUs, {gpus['vacant']} vacant GPUs"
    monitor_port = status["master"].get("monitor_port")
    if monitor_port:
        line += f"; monitor http://{address.rpartition(':')[0]}:{monitor_port}"
    for w in status["gpu_workers"]:  # GPUs used / free per worker
        if w["gpus"]:
            free = [g for g in w["gpus"] if g not in w["gpus_used"]]
            line += (f"\n  worker {w['id']} on {w['host']}: GPUs used [{','.join(w['gpus_used'])}], "
                     f"free [{','.join(free)}]")
    return line


@main.command()
@click.option("--address", default=None, help="host:port of a master  [default: every cluster started here]")
@click.option("--token", default=None, envvar="XPARL_TOKEN", help="Cluster token (for --address).")
@click.option("--json", "as_json", is_flag=True, default=False, help="Print the full status as JSON.")
def status(address: str | None, token: str | None, as_json: bool) -> None:
    """Show workers, used / vacant CPUs, clients and actors of each cluster."""
    from parl_remote.client.cluster_client import ClusterClient

    targets = [address] if address else [c["address"] for c in cluster.recorded_clusters() if c["alive"]]
    if not targets:
        click.echo("No xparl cluster started by this user is running (start one with `xparl start`).")
        return
    failures = []
    for target in targets:
        try:
            with ClusterClient(target, token=token, timeout_s=3.0) as client:
                result = client.status(summary=not as_json)
        except (ValueError, RemoteError) as exc:
            failures.append(f"{target}: {exc}")
            continue
        click.echo(json.dumps(result, indent=1) if as_json else _status_line(target, result))
    if failures:
        raise click.ClickException("; ".join(failures))


def _events_path(port: int | None, file: str | None) -> pathlib.Path:
    """The event log ``xparl events`` reads: ``--file``, else that of the cluster on ``--port`` started here, else
    that of the only cluster started here."""
    from parl_remote.server.events import events_file

    if file:
        return pathlib.Path(file)
    if port is None:
        root = config.state_dir() / "clusters"
        logs = sorted(root.glob("*/events-*.jsonl")) if root.exists() else []
        if len(logs) != 1:
            ports = ", ".join(p.parent.name for p in logs) or "none"
            raise click.UsageError(f"pass --port P (the master's port; clusters with an event log here: {ports}) or "
                                   "--file PATH (events-<port>.jsonl in the cluster's log folder)")
        return logs[0]
    return events_file(config.cluster_dir(port), port)


def _follow(path: pathlib.Path, printed: set, show) -> None:
    """Prints the events appended to ``path`` from its current end, across rotations, until Ctrl-C."""
    from parl_remote.server.events import parse_line

    f = open(path, "rb")  # noqa: SIM115 - reopened on rotation
    f.seek(0, os.SEEK_END)
    pending = b""
    try:
        while True:
            chunk = f.read()
            if chunk:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    event = parse_line(line)
                    if event is not None and (event.get("master_pid"), event.get("seq")) not in printed:
                        show(event)
                continue
            try:
                rotated = os.stat(path).st_ino != os.fstat(f.fileno()).st_ino or os.stat(path).st_size < f.tell()
            except FileNotFoundError:  # between the rename and the new file
                rotated = False
            if rotated:
                f.close()
                f = open(path, "rb")  # noqa: SIM115
                pending = b""
                continue
            time.sleep(0.25)  # the file's poll interval while following
    finally:
        f.close()


@main.command()
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="The master port of a cluster started here  [default: the only one with an event log]")
@click.option("--file", "file", type=click.Path(dir_okay=False), default=None,
              help="An event log (events-<port>.jsonl in a cluster's log folder), e.g. copied from another machine.")
@click.option("-n", "--lines", "lines", type=click.IntRange(min=0), default=20, show_default=True,
              help="How many of the latest events to print first.")
@click.option("-f", "--follow", is_flag=True, default=False, help="Go on printing new events as they come (Ctrl-C "
              "stops).")
@click.option("--json", "as_json", is_flag=True, default=False, help="Print the JSON lines as the log holds them.")
def events(port: int | None, file: str | None, lines: int, follow: bool, as_json: bool) -> None:
    """Print the latest events of a cluster (workers joined / lost, clients, actors granted / ended / died with
    their cause, master restarts) from its event log, and with -f follow it."""
    from parl_remote.server.events import format_event, read_events

    path = _events_path(port, file)

    def show(event: dict) -> None:
        click.echo(json.dumps(event, separators=(",", ":")) if as_json else format_event(event))

    try:
        recent = read_events(path, lines) if lines else []
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    for event in recent:
        show(event)
    if follow:
        try:
            _follow(path, {(e.get("master_pid"), e.get("seq")) for e in recent}, show)
        except KeyboardInterrupt:
            pass


@main.command()
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Stop only the cluster of this master port  [default: all clusters started by this user]",
)
def stop(port: int | None) -> None:
    """Stop clusters started by this user (by their pid files; never by process name)."""
    root = config.state_dir() / "clusters"
    dirs = [root / str(port)] if port else (sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else [])
    stopped = 0
    for cdir in dirs:
        if not cdir.exists():
            continue
        pids = cluster.stop_recorded(cdir, extra_pids=cluster.reported_local_workers(cdir))
        if pids:
            stopped += 1
            click.echo(f"stopped the cluster on port {cdir.name} (pids {', '.join(map(str, pids))})")
    if not stopped:
        click.echo("No running xparl cluster found" + (f" on port {port}." if port else "."))


if __name__ == "__main__":
    main()
