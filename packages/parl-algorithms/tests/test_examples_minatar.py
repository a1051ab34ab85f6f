"""The distributed examples run a MinAtar game (Young & Tian 2019) with the same scripts as CartPole: flat float32
observations from parl.env.make_minatar, the small-env network, a tiny budget on the embedded cluster."""

import pytest
from test_algorithms_examples import run_example
from test_examples_xparl_connect import TINY  # the same tiny budgets


@pytest.mark.parametrize("name", sorted(TINY))
def test_example_runs_minatar_breakout(tmp_path, name):
    flags, steps_ok = TINY[name]
    result = run_example(name, tmp_path, "--env", "MinAtar/Breakout-v1", "--actors", "2", *flags)
    assert result["env"] == "MinAtar/Breakout-v1" and result["actors"] == 2 and result["actors_replaced"] == 0
    assert steps_ok(result["env_steps"]), result
    # no return target for MinAtar: the run ends at its budget with a greedy evaluation of 10 games
    assert result["reached"] is False and result["eval_episodes"] == 10 and result["eval_source"] == "greedy"
    assert 0.0 <= result["eval_return_mean"] < 100.0  # Breakout: one point per brick; an untrained policy scores ~0-2
