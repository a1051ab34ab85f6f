"""The tutorial's prototxt loads unchanged; the TOML form gives the same config and the same agent."""

from __future__ import annotations

import numpy as np
import pytest

from evokit import ConfigError, ESAgent, NumpyMLP, load_config, parse_prototxt, parse_toml


def test_tutorial_prototxt_loads_unchanged(tutorial_prototxt):
    cfg = load_config(tutorial_prototxt)
    gs = cfg.solver.sampling.gaussian_sampling
    assert cfg.solver.type == cfg.solver.DESCRIPTOR.fields_by_name["type"].enum_type.values_by_name["BASIC_ES"].number
    assert cfg.solver.optimizer.base_lr == 0.05
    assert (cfg.solver.optimizer.adam.beta1, cfg.solver.optimizer.adam.beta2) == (0.9, 0.999)
    assert cfg.solver.optimizer.adam.epsilon == 1e-8
    assert (gs.std, gs.cached, gs.seed, gs.cache_size) == (0.5, True, 1024, 100000)
    # defaults of the fields the tutorial does not set
    assert cfg.solver.mirrored_sampling is True
    assert cfg.async_es.max_to_keep == 5


def test_toml_gives_the_same_config(tutorial_prototxt, tutorial_toml):
    assert load_config(tutorial_prototxt) == load_config(tutorial_toml)


def test_prototxt_and_toml_give_the_same_agent(tutorial_prototxt, tutorial_toml):
    agents = []
    for path in (tutorial_prototxt, tutorial_toml):
        agent = ESAgent(NumpyMLP([4, 8, 2], seed=3), config=path)
        agent.init_solver()
        clone = agent.clone()
        infos = [clone.add_noise() for _ in range(6)]
        params = clone.params
        agent.update(infos, np.arange(6.0))
        agents.append((infos, params, agent.params))
    (infos_a, clone_a, master_a), (infos_b, clone_b, master_b) = agents
    assert infos_a == infos_b
    np.testing.assert_array_equal(clone_a, clone_b)
    np.testing.assert_array_equal(master_a, master_b)
    assert not np.array_equal(master_a, NumpyMLP([4, 8, 2], seed=3).get_weights()["w0"])


def test_tutorial_config_verbatim_with_its_slash_comments_loads(tutorial_prototxt):
    """The tutorial's config block copied as printed, with its ``// 线下Adam更新`` comments."""
    annotated = tutorial_prototxt.parent / "tutorial_config_annotated.prototxt"
    assert "// " in annotated.read_text(encoding="utf-8")
    assert load_config(annotated) == load_config(tutorial_prototxt)
    # '//' inside a quoted string is data, not a comment; a syntax error still names its line
    cfg = parse_prototxt('async_es { model_warehouse: "http://host/dir" } // the warehouse')
    assert cfg.async_es.model_warehouse == "http://host/dir"
    with pytest.raises(ConfigError, match="3:"):
        parse_prototxt("solver {\n  type: BASIC_ES // fine\n  optimizer { type: ADAM base_lr: }\n}")


@pytest.mark.parametrize("text, fragment", [
    ("solver { type: NEAT }", "NEAT"),
    ("solver { optimiser { type: ADAM } }", "optimiser"),
])
def test_unknown_names_are_errors(text, fragment):
    with pytest.raises(ConfigError, match=fragment):
        parse_prototxt(text)


def test_toml_unknown_field_and_bad_syntax():
    with pytest.raises(ConfigError, match="optimiser"):
        parse_toml('[solver.optimiser]\ntype = "ADAM"\n')
    with pytest.raises(ConfigError, match="invalid EvoKit TOML"):
        parse_toml("[solver\n")


def test_invalid_values_are_rejected(tmp_path):
    path = tmp_path / "bad.prototxt"
    path.write_text("solver { sampling { gaussian_sampling { std: -1 } } }")
    with pytest.raises(ConfigError, match="std must be > 0"):
        load_config(path)
    with pytest.raises(FileNotFoundError, match="config file not found"):
        load_config(tmp_path / "missing.prototxt")
