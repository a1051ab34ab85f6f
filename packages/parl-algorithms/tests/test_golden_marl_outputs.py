"""The multi-agent algorithms' update sequences (MADDPG, QMIX, COMA, MAPPO), bit for bit: the ``learn`` outputs,
final weights, acting outputs, ``last_info`` and checkpoint entries of fixed-seed runs (``golden_marl_cases.py``)
equal those recorded in ``golden/marl-<backend>.json``; checkpoints (``Agent.save``) and torch pickles written by
the two-tree code restore, and the next ``learn`` is the one that code took.

The goldens and checkpoints were recorded on the two-tree code (``torch/`` and ``paddle/`` modules per algorithm,
their shared checks in ``parl_algorithms._maddpg`` / ``_qmix`` / ``_coma`` / ``_mappo``) before the four were
written once; a rewrite must leave them bit-identical. A golden changes only with a deliberate change of
behaviour, recorded here (``python golden/record.py marl``) with the reason.
"""

import importlib.util
import json
import pathlib

import golden_marl_cases
import pytest

GOLDEN = pathlib.Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", sorted(golden_marl_cases.CASES))
@pytest.mark.parametrize("backend", ["torch", "paddle"])
def test_golden_marl_outputs(backend, name):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    expected = json.loads((GOLDEN / f"marl-{backend}.json").read_text())[name]
    got = json.loads(json.dumps(golden_marl_cases.run_case(backend, name)))  # (the floats as the file stores them)
    for key in sorted(set(expected) | set(got)):
        assert got.get(key) == expected.get(key), f"{backend} {name}: {key} differs from the golden"


@pytest.mark.parametrize("file", golden_marl_cases.checkpoint_files())
def test_marl_checkpoints_and_pickles_of_the_two_tree_code_load(file):
    backend, rest = file.split("-", 1)
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    name, kind = rest.rsplit(".", 1)
    expected = json.loads((golden_marl_cases.CKPT / "marl-expected.json").read_text())[file]
    assert json.loads(json.dumps(golden_marl_cases.resumed(backend, name, kind))) == expected
