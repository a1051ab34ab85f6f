"""examples/dqn_variants on paddle: the Nature and MinAtar networks' shapes and the dueling aggregation (the torch
case and the example's runs are in the root tests/test_example_dqn_variants.py)."""

import importlib.util
import sys
import warnings

import pytest
from test_algorithms_examples import ROOT

sys.path.insert(0, str(ROOT / "tests"))
from test_example_dqn_variants import check_networks  # noqa: E402

sys.path.pop(0)


def test_dqn_variants_networks_on_paddle():
    pytest.importorskip("paddle")  # installed by this package's nox session
    spec = importlib.util.spec_from_file_location("dqn_variants_train", ROOT / "examples" / "dqn_variants" / "train.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="No ccache found")
        check_networks(example, "paddle")
