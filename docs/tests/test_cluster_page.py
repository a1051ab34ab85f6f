"""The cluster page's "A cluster over two machines", run as a newcomer would type it, over two hosts: the first
machine is this one, the second a network namespace with a hostname of its own, joined to it by a veth pair
(``packages/parl-remote/tests/netns.py``). The page's shell commands run with only its example values replaced:
``10.0.0.1`` by the first host's address, port ``8010`` by a free one, ``token.txt`` by the copied token file.
Then a program on the first machine creates the page's 12 actors, which must land on both machines, and
``xparl stop`` on the first machine must end the second machine's worker too, as the page says.

Needs root (network namespaces): the CI machine runs the docs session as root.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap

import psutil
import pytest
from blocks import ROOT, all_blocks, free_port, shell_commands

sys.path.insert(0, str(ROOT / "packages" / "parl-remote" / "tests"))
from netns import TwoHosts, unavailable_reason  # noqa: E402

pytestmark = pytest.mark.timeout(240)

PAGE = "docs/cluster.md"
CLIENT = """
import json, os, socket, sys
import parl

@parl.remote_class
class Actor:
    def host(self):
        return socket.gethostname()

parl.connect(sys.argv[1])
actors = [Actor() for _ in range(12)]
print(json.dumps(sorted(a.host() for a in actors)))
parl.disconnect()
"""


def _page_commands() -> list[list[str]]:
    """The shell commands of the page's section "A cluster over two machines", in order."""
    blocks = all_blocks()[PAGE]
    text = (ROOT / PAGE).read_text()
    start, end = text.index("## A cluster over two machines"), text.index("\n## ", text.index("## A cluster over"))
    return [cmd for b in blocks if b.lang == "bash" and start <= text.find(b.code) < end
            for cmd in shell_commands(b.code)]  # fmt: skip



def test_page_commands_are_the_ones_run_here():
    commands = _page_commands()
    assert [c[:2] for c in commands] == [["xparl", "start"], ["xparl", "connect"], ["xparl", "status"]], commands
    assert "10.0.0.1:8010" in commands[1] and "token.txt" in commands[1]


@pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))
def test_a_cluster_over_two_machines_as_the_page_says(tmp_path):
    xparl = shutil.which("xparl")
    assert xparl, "the xparl command is not on PATH (pip install parl-remote)"
    port = free_port("0.0.0.0")
    home_a, home_b = tmp_path / "machine-a", tmp_path / "machine-b"
    home_a.mkdir()
    home_b.mkdir()
    worker_b_pids: list[int] = []
    with TwoHosts() as hosts:

        def typed(cmd: list[str]) -> list[str]:
            return [xparl] + [a.replace("10.0.0.1", hosts.here).replace("8010", str(port)) for a in cmd[1:]]

        env_a = {**os.environ, "XPARL_HOME": str(home_a)}
        env_b = {**os.environ, "XPARL_HOME": str(home_b)}
        start, connect, status = _page_commands()
        try:
            out = subprocess.run(typed(start), env=env_a, capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stdout + out.stderr
            shutil.copy(home_a / "clusters" / str(port) / "token", home_b / "token.txt")  # "copy it to the second"
            joined = hosts.popen_there(typed(connect), env=env_b, cwd=home_b, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)  # fmt: skip
            said = joined.communicate(timeout=90)[0]
            worker_b_pids += [int(p.read_text()) for p in (home_b / "clusters" / str(port)).glob("worker-*.pid")]
            assert joined.returncode == 0, said
            assert "added 8 CPUs" in said, said

            shown = subprocess.run(typed(status), env=env_a, capture_output=True, text=True, timeout=60)
            assert shown.returncode == 0, shown.stdout + shown.stderr
            assert re.search(r": 2 workers, \d+ used CPUs", shown.stdout), shown.stdout

            # a program on the first machine: 12 actors over the two machines' 4 + 8 CPUs
            script = tmp_path / "train.py"
            script.write_text(textwrap.dedent(CLIENT))
            token = (home_a / "clusters" / str(port) / "token").read_text().strip()
            ran = subprocess.run([sys.executable, str(script), f"{hosts.here}:{port}"],
                                 env={**env_a, "XPARL_TOKEN": token}, capture_output=True, text=True, timeout=120)
            assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
            names = json.loads(ran.stdout.strip().splitlines()[-1])
            there = f"hostb-{os.getpid()}"
            assert names.count(there) == 8 and names.count(socket.gethostname()) == 4, names
        finally:
            stop = subprocess.run([xparl, "stop", "--port", str(port)], env=env_a, capture_output=True, text=True,
                                  timeout=60)  # fmt: skip
            # "xparl stop (on the first machine) stops the master, its local worker and the workers other machines
            # added": the second machine's worker ends by itself (killed here only if it did not, then failing)
            _, alive = psutil.wait_procs([psutil.Process(pid) for pid in worker_b_pids if psutil.pid_exists(pid)],
                                         timeout=20.0)
            for proc in alive:
                proc.kill()
        assert stop.returncode == 0, stop.stdout + stop.stderr
        assert not alive, f"the second machine's worker ({alive}) outlived xparl stop"

