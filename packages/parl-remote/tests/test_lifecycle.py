"""Process hygiene and scale: churn without leaks, many clients, the embedded cluster, no torch import."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest
from conftest import run_python, wait_until

import parl_remote as xparl

pytestmark = pytest.mark.timeout(120)


@xparl.remote_class
class Tiny:
    def __init__(self, value):
        self.value = value

    def get(self):
        return self.value


def _fds(pid: int) -> int:
    return psutil.Process(pid).num_fds()


def _tree(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def _statuses(pid: int) -> list[str]:
    """The status of each descendant of ``pid`` (one that exits while being looked at is left out)."""
    statuses = []
    for process in _tree(pid):
        try:
            statuses.append(process.status())
        except psutil.NoSuchProcess:
            pass
    return statuses


def _ended(pid: int) -> bool:
    """True when ``pid`` has exited (gone, or a zombie waiting for its parent)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def worker_id(status_client) -> str:
    (worker,) = status_client.status()["workers"]
    return worker["id"]


def test_200_actors_created_and_deleted_leak_nothing(cluster, connected, status_client, xparl_home):
    def settled():
        status = status_client.status()
        jobs = [s for s in _statuses(cluster.worker.pid) if s != psutil.STATUS_ZOMBIE]
        return status["cpus"]["used"] == 0 and len(jobs) == cluster.cpu_num + 1  # + the zygote

    for i in range(5):  # warm up: sockets, caches, lazily created state
        assert Tiny(i).get() == i
    wait_until(settled, message="cluster idle")
    before = {"client": _fds(os.getpid()), "worker": _fds(cluster.worker.pid), "master": _fds(cluster.master.pid)}
    for i in range(200):
        actor = Tiny(i)
        assert actor.get() == i
        del actor
    wait_until(settled, timeout_s=20, message="all jobs replaced")
    zombies = [s for s in _statuses(cluster.worker.pid) if s == psutil.STATUS_ZOMBIE]
    assert not zombies
    after = {"client": _fds(os.getpid()), "worker": _fds(cluster.worker.pid), "master": _fds(cluster.master.pid)}
    for name in before:
        assert after[name] <= before[name] + 2, f"{name} fds grew: {before[name]} -> {after[name]}"
    dead = [a for a in status_client.status()["actors"] if a["state"] == "dead"]
    assert len(dead) == 100  # the master keeps the last 100 ended actors
    (log_dir,) = [p for p in (xparl_home / "logs").iterdir() if p.is_dir() and p.name == worker_id(status_client)]
    wait_until(lambda: len(list(log_dir.glob("a-*.log"))) <= 200, message="old actor logs pruned")
    assert all(status_client.actor_log(a["id"])[1] >= 0 for a in dead[-5:])  # recent logs still readable


CLIENT = """
import sys
import time
import parl_remote as xparl

@xparl.remote_class
class Adder:
    def add(self, a, b):
        return a + b

xparl.connect(sys.argv[1], token=sys.argv[2])
adder = Adder()
total = sum(adder.add(i, 1) for i in range(50))
print("total", total, flush=True)
"""


def test_eight_clients_at_once(cluster, tmp_path):
    script = tmp_path / "eight.py"
    script.write_text(CLIENT)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), cluster.address, cluster.token],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(8)
    ]
    outputs = [p.communicate(timeout=90) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == f"total {sum(range(50)) + 50}"


EMBEDDED = """
import os, sys, time
import parl_remote as xparl

@xparl.remote_class
class Summer:
    def total(self, n):
        return sum(range(n)), os.getpid()

client = xparl.connect(cpu_num=2)
actors = [Summer() for _ in range(2)]
results = [a.total(1000) for a in actors]
assert all(r[0] == 499500 for r in results)
assert len({r[1] for r in results} | {os.getpid()}) == 3  # two other processes
print(" ".join(map(str, client.embedded.pids())), flush=True)
print("torch" in sys.modules, "paddle" in sys.modules, flush=True)
if sys.argv[1] == "hang":
    time.sleep(60)
else:
    sys.stdin.readline()  # the test lists the cluster's processes first, then lets us exit normally
"""


@pytest.mark.parametrize("ending", ["exit", "kill"])
def test_embedded_cluster_ends_with_its_process(tmp_path, ending):
    script = tmp_path / "embedded.py"
    script.write_text(EMBEDDED)
    proc = subprocess.Popen([sys.executable, str(script), "hang" if ending == "kill" else "exit"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2, proc.stderr.read() if proc.poll() is not None else pids
    assert proc.stdout.readline().strip() == "False False"  # no torch / paddle imported
    descendants = [c.pid for pid in pids for c in _tree(pid)]
    assert len(descendants) >= 3  # zygote + 2 jobs
    if ending == "kill":
        proc.send_signal(signal.SIGKILL)
    else:
        proc.stdin.write("\n")
        proc.stdin.flush()
    proc.wait(timeout=30)
    for pid in pids + descendants:
        wait_until(lambda pid=pid: _ended(pid), timeout_s=10, message=f"process {pid} to end")


def test_imports_and_works_without_torch():
    code = (
        "import sys\n"
        "sys.modules['torch'] = None  # any import of torch now fails\n"
        "sys.modules['paddle'] = None\n"
        "import parl_remote as xparl\n"
        "@xparl.remote_class\n"
        "class A:\n"
        "    def f(self):\n"
        "        import sys\n"
        "        return 'torch' in sys.modules and sys.modules['torch'] is not None\n"
        "xparl.connect(cpu_num=1)\n"
        "print(A().f())\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_output_forwarding_can_be_turned_off(cluster, capfd):
    code = (
        "import sys\n"
        "import parl_remote as xparl\n"
        "@xparl.remote_class\n"
        "class A:\n"
        "    def f(self):\n"
        "        print('from-the-actor')\n"
        "        return 1\n"
        f"xparl.connect({cluster.address!r}, token={cluster.token!r}, forward_output=sys.argv[1] == 'on')\n"
        "print(A().f())\n"
    )
    on = subprocess.run([sys.executable, "-c", code, "on"], capture_output=True, text=True, timeout=60)
    off = subprocess.run([sys.executable, "-c", code, "off"], capture_output=True, text=True, timeout=60)
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    assert "] from-the-actor" in on.stdout and "[A pid=" in on.stdout
    assert "from-the-actor" not in off.stdout and off.stdout.strip() == "1"


def test_exit_without_disconnect_is_clean(cluster):
    """PARL issue #584: errors from proxies' __del__ at interpreter shutdown."""
    code = (
        "import parl_remote as xparl\n"
        "@xparl.remote_class\n"
        "class A:\n"
        "    def f(self):\n"
        "        return 1\n"
        "@xparl.remote_class(wait=False)\n"
        "class B:\n"
        "    def f(self):\n"
        "        return 2\n"
        f"xparl.connect({cluster.address!r}, token={cluster.token!r})\n"
        "a, b = A(), B()\n"
        "pending = b.f()\n"
        "print(a.f(), pending.get())\n"
    )
    result = run_python(code)
    assert result.returncode == 0 and result.stdout.strip() == "1 2", result.stderr
    assert "Exception" not in result.stderr and "Traceback" not in result.stderr, result.stderr


CTRL_C_IN_A_TERMINAL = """
import os, sys, time
import parl_remote as xparl

@xparl.remote_class
class Sleeper:
    def sleep(self, seconds, started_file=None):
        if started_file:
            open(started_file, "w").close()
        time.sleep(seconds)
        return os.getpid()

xparl.connect(cpu_num=2)
actor = Sleeper()
first = actor.sleep(0)
started = time.monotonic()
try:
    actor.sleep(3, sys.argv[1])  # the test presses Ctrl-C once this call has started
    print("not interrupted", flush=True)
except KeyboardInterrupt:
    print("interrupted", "quickly" if time.monotonic() - started < 2.5 else "late", flush=True)
print("same actor", actor.sleep(0) == first, flush=True)
print("new actor", Sleeper().sleep(0) != first, flush=True)
"""


def test_ctrl_c_in_a_terminal_interrupts_the_call_not_the_embedded_cluster(tmp_path):
    """A terminal's Ctrl-C (and a notebook's interrupt) signals the whole foreground process group: it must
    abandon the client's current call only. (The embedded cluster's master, worker and actors used to share
    that group: the actor died and the master exited, so no actor could be created afterwards.)"""
    script = tmp_path / "terminal.py"
    script.write_text(CTRL_C_IN_A_TERMINAL)
    started_file = tmp_path / "started"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(started_file)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,  # the group leader, like a shell's foreground job
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        wait_until(lambda: started_file.exists() or proc.poll() is not None, timeout_s=60, message="the call")
        assert proc.poll() is None, proc.communicate()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert out.splitlines() == ["interrupted quickly", "same actor True", "new actor True"], out + err
