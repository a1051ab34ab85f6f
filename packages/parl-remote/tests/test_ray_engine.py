"""The Ray engine's own cases: bad input (each a clear error naming the fix) and ``connect("ray")`` through
``RAY_ADDRESS``. The semantics shared with xparl are in ``test_engines.py`` (one body, both engines)."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import time

import pytest
from ray_cluster import RayHead, free_port

import parl_remote as xparl

pytestmark = pytest.mark.timeout(180)


def test_ray_address_without_ray_installed_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets where Ray is not installed
    with pytest.raises(xparl.MissingDependencyError, match=r'pip install "parl-remote\[ray\]"') as info:
        xparl.connect("ray://127.0.0.1:10001")
    assert isinstance(info.value, ImportError)


def test_xparl_only_arguments_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="RAY_AUTH_TOKEN"):
        xparl.connect("ray://127.0.0.1:10001", token="abc")
    with pytest.raises(ValueError, match="ray start --num-cpus"):
        xparl.connect("ray", cpu_num=2)


@pytest.mark.ray
def test_an_unreachable_ray_address_fails_within_seconds_naming_it():
    address = f"ray://127.0.0.1:{free_port()}"
    start = time.monotonic()
    with pytest.raises(xparl.ClusterConnectionError, match=address.replace(".", r"\.")):
        xparl.connect(address)
    assert time.monotonic() - start < 10
    with pytest.raises(ValueError, match="ray://HOST:PORT"):
        xparl.connect("ray://no-port")


@pytest.mark.ray
def test_ray_address_env_points_at_nothing(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{free_port()}")
    with pytest.raises(xparl.ClusterConnectionError, match="127.0.0.1"):
        xparl.connect("ray")


@pytest.mark.ray
def test_a_ray_older_than_supported_is_refused(monkeypatch):
    import ray

    monkeypatch.setattr(ray, "__version__", "2.5.1")
    with pytest.raises(xparl.VersionMismatchError, match=r"2\.5\.1.*>= 2\.10.*--upgrade"):
        xparl.connect("ray")


JOIN = """
import parl_remote as xparl

@xparl.remote_class
class Doubler:
    def double(self, x):
        return 2 * x

client = xparl.connect("ray")
assert client.engine == "ray" and xparl.connect("ray") is client  # the same address: the same connection
print("RESULT", Doubler().double(21))
"""


@pytest.mark.ray
def test_connect_ray_joins_the_cluster_of_ray_address(tmp_path):
    # a fresh process: Ray reads its authentication settings (RAY_AUTH_*) when it is first imported
    head = RayHead(num_cpus=2).start()
    try:
        (tmp_path / "join.py").write_text(JOIN)
        env = {**os.environ, **head.env, "RAY_ADDRESS": head.gcs_address}
        proc = subprocess.run([sys.executable, "join.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
    finally:
        head.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RESULT 42" in proc.stdout


DEPLOY = pathlib.Path(__file__).resolve().parents[1] / "deploy" / "kuberay"
REPO = pathlib.Path(__file__).resolve().parents[3]


@pytest.mark.ray
def test_the_kuberay_guide_files_agree_with_the_tree_and_the_tested_ray():
    # A Kubernetes run is out of reach here (no cluster, no Docker engine); what can drift is checked: the Ray
    # release of the image, of the manifest and of the tests, the packages the image installs, the client port.
    import ray
    import yaml

    dockerfile = (DEPLOY / "Dockerfile").read_text()
    base = re.search(r"^FROM rayproject/ray:(\S+)-py(\d)(\d+)", dockerfile, re.M)
    assert base and base.group(1) == ray.__version__, "the image's Ray must be the one the tests ran"
    pinned = re.search(r"^ray==(\S+)", (REPO / "constraints.txt").read_text(), re.M)
    assert pinned and pinned.group(1) == ray.__version__
    installed = set(re.findall(r"/tmp/parl/packages/([\w-]+)", dockerfile))
    assert installed == {p.name for p in (REPO / "packages").iterdir() if (p / "pyproject.toml").exists()}
    assert '"/tmp/parl/packages/parl-remote[ray]"' in dockerfile
    manifest = yaml.safe_load((DEPLOY / "raycluster.yaml").read_text())
    assert manifest["apiVersion"] == "ray.io/v1" and manifest["kind"] == "RayCluster"
    assert manifest["spec"]["rayVersion"] == ray.__version__
    head = manifest["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert {"containerPort": 10001, "name": "client"} in head["ports"]
    workers = [g["template"]["spec"]["containers"][0] for g in manifest["spec"]["workerGroupSpecs"]]
    for container in [head, *workers]:
        assert container["image"].endswith(":" + ray.__version__)
        assert {e["name"] for e in container["env"]} >= {"RAY_AUTH_MODE", "RAY_AUTH_TOKEN"}
