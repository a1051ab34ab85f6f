"""File distribution: the entry directory's packages and distributed_files reach the jobs, once per hash."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(90)

MAIN = """
import sys
import parl_remote as xparl
from pkg.sub.mod import Reader

@xparl.remote_class
class Local:  # defined in __main__: travels by value
    def hello(self):
        from pkg.helpers import shout
        return shout("local")

xparl.connect(sys.argv[1], token=sys.argv[2], distributed_files=["data/*.txt"])
reader = Reader()
print(reader.read("data/config.txt"), reader.where(), Local().hello(), sep="|")
"""

MOD = """
import os
import parl_remote as xparl
from pkg.helpers import shout

@xparl.remote_class
class Reader:
    def read(self, path):
        with open(path) as fh:
            return shout(fh.read().strip())

    def where(self):
        return os.path.basename(os.path.dirname(os.path.abspath(__file__)))
"""


def _project(root):
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "main.py").write_text(MAIN)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "helpers.py").write_text("def shout(text):\n    return text.upper() + '!'\n")
    (root / "pkg" / "sub" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "mod.py").write_text(textwrap.dedent(MOD))
    (root / "data" / "config.txt").write_text("learning rate 0.1\n")


def test_sub_packages_and_distributed_files(cluster, xparl_home, tmp_path):
    project = tmp_path / "project"
    _project(project)
    cmd = [sys.executable, "main.py", cluster.address, cluster.token]
    cache = xparl_home / "cache" / "files"

    def bundles():
        return {p.name for p in cache.iterdir() if not p.name.startswith(".")} if cache.exists() else set()

    existing = bundles()
    first = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().splitlines()[-1] == "LEARNING RATE 0.1!|sub|LOCAL!"
    new = bundles() - existing
    assert len(new) == 1
    shipped = cache / new.pop()
    assert (shipped / "pkg" / "sub" / "mod.py").exists() and (shipped / "data" / "config.txt").exists()
    # same content: the cached bundle is reused (no new folder); changed content: a new bundle
    second = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=60)
    assert second.returncode == 0, second.stderr
    assert len(bundles() - existing) == 1
    (project / "data" / "config.txt").write_text("gamma 0.99\n")
    third = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=60)
    assert third.stdout.strip().splitlines()[-1] == "GAMMA 0.99!|sub|LOCAL!"
    assert len(bundles() - existing) == 2


def test_missing_distributed_file_is_reported_by_connect(cluster, tmp_path):
    code = (
        "import parl_remote as xparl\n"
        "try:\n"
        f"    xparl.connect({cluster.address!r}, token={cluster.token!r}, distributed_files=['nothing/*.bin'])\n"
        "except ValueError as exc:  # PARL's exception type, raised by connect() itself\n"
        "    print('connect raised', type(exc).__name__, isinstance(exc, FileNotFoundError), exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("connect raised DistributedFilesError True") and "nothing/*.bin" in result.stdout


def test_empty_folders_of_a_shipped_folder_are_created(cluster, tmp_path):
    (tmp_path / "assets" / "empty" / "deeper").mkdir(parents=True)
    (tmp_path / "assets" / "one.txt").write_text("1")
    code = (
        "import os, parl_remote as xparl\n"
        "@xparl.remote_class\n"
        "class A:\n"
        "    def listing(self):\n"
        "        return sorted(os.path.relpath(os.path.join(d, n), 'assets') for d, ds, fs in os.walk('assets') "
        "for n in ds + fs)\n"
        f"xparl.connect({cluster.address!r}, token={cluster.token!r}, distributed_files=['assets'])\n"
        "print(A().listing())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "['empty', 'empty/deeper', 'one.txt']"
