"""The multi-agent algorithms' update sequences (MADDPG, QMIX, COMA, MAPPO), bit for bit: the ``learn`` outputs,
final weights, acting outputs, ``last_info`` and checkpoint entries of fixed-seed runs (``golden_marl_cases.py``)
equal those recorded in ``golden/marl-<backend>.json``; checkpoints (``Agent.save``) and torch pickles written by
the two-tree code restore, and the next ``learn`` is the one that code took.

The goldens and checkpoints were recorded on the two-tree code (``torch/`` and ``paddle/`` modules per algorithm,
their shared checks in ``parl_algorithms._maddpg`` / ``_qmix`` / ``_coma`` / ``_mappo``) before the four were
written once; a rewrite must leave them bit-identical (on a CPU of another instruction set than the recording
machine's, the last bits differ: ``golden_cases.mismatches`` then accepts sums and floats within 1e-5). A golden
changes only with a deliberate change of behaviour, recorded here (``python golden/record.py marl``) with the reason.

The cases run in a fresh interpreter per backend, as ``record.py`` records them: paddle's CPU results depend on
the process's history (in a process whose first tensor operation is a binary one, e.g. ``x + y``, rather than
building a model, the matrix products of the models built later differ in the last bits), so a golden computed
after other tests of the session would compare that history, not the algorithm.
"""

import functools
import importlib.util
import json
import pathlib
import subprocess
import sys

import golden_marl_cases
import pytest
from golden_cases import mismatches

HERE = pathlib.Path(__file__).parent
GOLDEN = HERE / "golden"


@functools.cache
def _fresh(backend, what):
    """``golden_marl_cases.<what>(backend)`` computed in a new interpreter."""
    code = f"import json, golden_marl_cases; print(json.dumps(golden_marl_cases.{what}({backend!r})))"
    out = subprocess.run([sys.executable, "-c", code], cwd=HERE, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(golden_marl_cases.CASES))
@pytest.mark.parametrize("backend", ["torch", "paddle"])
def test_golden_marl_outputs(backend, name):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    expected = json.loads((GOLDEN / f"marl-{backend}.json").read_text())[name]
    got = _fresh(backend, "run_all")[name]
    assert not mismatches(got, expected, f"{backend} {name}"), mismatches(got, expected, f"{backend} {name}")


@pytest.mark.parametrize("file", golden_marl_cases.checkpoint_files())
def test_marl_checkpoints_and_pickles_of_the_two_tree_code_load(file):
    backend = file.split("-", 1)[0]
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    expected = json.loads((golden_marl_cases.CKPT / "marl-expected.json").read_text())[file]
    got = _fresh(backend, "resume_all")[file]
    assert not mismatches(got, expected, file), mismatches(got, expected, file)
