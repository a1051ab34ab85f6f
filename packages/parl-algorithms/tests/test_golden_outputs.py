"""Every algorithm's update sequence, bit for bit: the losses, final weights, ``predict`` / ``sample`` outputs and
checkpoint entries of fixed-seed runs (``golden_cases.py``) equal those recorded in ``golden/<backend>.json``.

The goldens were recorded on the two-tree code (one ``torch/`` and one ``paddle/`` module per algorithm) before
each algorithm was rewritten as one module (the OAC, IQL, IQL-distribution and DecisionTransformer cases, and their
checkpoints in ``golden_checkpoints.py``, were recorded on it just before those three were; the A3C and IMPALA cases
and checkpoints just before those two were); a rewrite must leave them bit-identical (checked on the machine that
recorded them; on a CPU of another instruction set the last bits differ, and ``golden_cases.mismatches`` accepts an
array whose sum, or a float, is within 1e-5 of the golden's). A golden changes only with a
deliberate change of behaviour, recorded here (``python golden/record.py``) with the reason:

- PPO: one check of continuous actions on both backends (their width must be the policy's ``act_dim``; paddle
  took any width). No golden changed: the goldens' batches fit.
- SAC (and CQL, OAC, its subclasses): one temperature update on both backends, its own Adam optimizer
  (``alpha_optimizer``, over ``log_alpha``) stepped after the actor's, the losses reading ``exp(log_alpha)`` on
  the device (torch had ``log_alpha`` as a parameter group of the actor's optimizer, one backward for both;
  paddle read the temperature back to the host after every step). Changed: the checkpoint entries of torch's
  SAC-auto-alpha, CQL and CQL-lagrange-v2 (``alpha_optimizer`` added, as paddle's). Losses, weights, actions and
  temperatures are bit-identical on both backends; checkpoints and pickles of the two-tree code still load
  (``test_checkpoints_and_pickles_of_the_two_tree_code_load``).
"""

import importlib.util
import json
import pathlib

import pytest
from golden_cases import CASES, mismatches, run_case

GOLDEN = pathlib.Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("backend", ["torch", "paddle"])
def test_golden_outputs(backend, name):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    expected = json.loads((GOLDEN / f"{backend}.json").read_text())[name]
    got = json.loads(json.dumps(run_case(backend, name)))  # (the floats as the file stores them)
    assert not mismatches(got, expected, f"{backend} {name}"), mismatches(got, expected, f"{backend} {name}")


def _checkpoint_cases():
    import golden_checkpoints

    return sorted(json.loads((golden_checkpoints.CKPT / "expected.json").read_text()))


@pytest.mark.parametrize("file", _checkpoint_cases())
def test_checkpoints_and_pickles_of_the_two_tree_code_load(file):
    # SAC / CQL / OAC / IQL / DecisionTransformer / A3C / IMPALA checkpoints (Agent.save) and torch pickles written
    # before the algorithms were written once restore into today's classes, and the next learn step is the one the
    # old code took, bit for bit
    import golden_checkpoints

    backend, rest = file.split("-", 1)
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    name, kind = rest.rsplit(".", 1)
    expected = json.loads((golden_checkpoints.CKPT / "expected.json").read_text())[file]
    got = json.loads(json.dumps(golden_checkpoints.resumed(backend, name, kind)))
    assert not mismatches(got, expected, file), mismatches(got, expected, file)
