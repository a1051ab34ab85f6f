"""The site's Sphinx extension (docs/_ext/parl_docs.py): README inclusion and the API checks."""

from __future__ import annotations

import logging

import parl_docs
import pytest


def test_missing_docstring_is_a_warning(caplog):
    caplog.set_level(logging.WARNING)
    parl_docs._check_docstring(None, "method", "parl_core.Model.get_weights", None, None, ["", "  "])
    parl_docs._check_docstring(None, "method", "parl_core.Model._private", None, None, [])
    parl_docs._check_docstring(None, "function", "parl_remote.connect", None, None, ["Connect."])
    parl_docs._check_docstring(None, "attribute", "evokit.SamplingInfo.key", None, None, [])
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["public method parl_core.Model.get_weights has no docstring (add a short Google-style one)"]


def test_public_names_cover_the_packages():
    names = set(parl_docs.public_names())
    assert {("parl_remote", "remote_class"), ("parl_core", "Model"), ("parl_algorithms", "PPO"),
            ("parl_core.utils", "ReplayMemory"), ("evokit", "ESAgent"), ("parl_monitor", "create_app")} <= names
    assert not any(name.startswith("__") for _, name in names)
    assert len(names) > 100


def test_readme_links_are_rewritten_for_the_site():
    pages = parl_docs.whole_readme_pages()
    assert pages["examples/ga3c/README.md"] == "distributed/ga3c"
    text = parl_docs.render_readme("examples/impala/README.md", {}, "distributed/impala", pages)
    assert "](../../examples/impala/pong_curve.png)" in text  # the README's ![...](pong_curve.png)
    assert "[benchmarks/README.md](/benchmarks.md#distributed)" in text
    text = parl_docs.render_readme("examples/a2c_distributed/README.md", {}, "distributed/a2c_distributed", pages)
    assert "[GA3C](/distributed/ga3c.md)" in text


def test_readme_sections_and_heading_shift():
    text = parl_docs.render_readme("packages/parl-remote/README.md", {"start": "## Ray engine", "end": "## Reliability",
                                                                      "shift": "1"}, "cluster", {})
    assert text.startswith("### Ray engine\n")
    assert "#### Kubernetes (KubeRay)" in text and "## Reliability" not in text
    with pytest.raises(ValueError, match="no line starts with"):
        parl_docs.render_readme("packages/parl-remote/README.md", {"start": "## No such section"}, "cluster", {})


def test_learning_curves_are_plotted(tmp_path):
    runs = parl_docs.curve_runs()
    assert {"coma-final", "qmix-lbf", "maml-maml", "maml-mamlpp"} <= set(runs)
    # the single-agent examples' runs (issue #26): every algorithm page shows one
    single_agent = {"a2c-cartpole", "ppo-cartpole", "ppo-pendulum", "dqn-cartpole", "quickstart-cartpole",
                    "ddpg-pendulum", "td3-pendulum", "sac-pendulum", "oac-pendulum", "cql-pendulum", "iql-pendulum",
                    "dt-pendulum"}
    assert single_agent <= set(runs)
    assert all(len(files) >= 3 for files in runs.values())  # every result is given over seeds
    written = parl_docs.plot_curves(tmp_path)
    assert sorted(p.name for p in written) == sorted(f"{name}.png" for name in runs)
    assert all(p.stat().st_size > 10_000 for p in written)


def test_a_curve_csv_of_unknown_columns_is_named(tmp_path):
    assert parl_docs.curve_axes(["meta_updates", "test_mse"], tmp_path)[:2] == ("meta_updates", "test_mse")
    # eval_return_mean is used only where every row has it; else the training return; offline: gradient steps
    header = ["env_steps", "wall_s", "train_return_mean", "eval_return_mean"]
    rows = [{"env_steps": "256", "wall_s": "1", "train_return_mean": "20.5", "eval_return_mean": ""},
            {"env_steps": "512", "wall_s": "2", "train_return_mean": "480.0", "eval_return_mean": "500.0"}]
    assert parl_docs.curve_axes(header, tmp_path, rows)[:2] == ("env_steps", "train_return_mean")
    assert parl_docs.curve_axes(header, tmp_path, rows[1:])[:2] == ("env_steps", "eval_return_mean")
    assert parl_docs.curve_axes(["gradient_steps", "eval_return_mean"], tmp_path)[:2] == ("gradient_steps",
                                                                                         "eval_return_mean")
    # a row per finished episode (a2c_distributed, ga3c): plotted as the trailing mean of 10 episodes
    assert parl_docs.curve_axes(["env_steps", "wall_s", "episode_return"], tmp_path)[:2] == ("env_steps",
                                                                                           "episode_return")
    with pytest.raises(ValueError, match="add this example's to CURVE_AXES"):
        parl_docs.curve_axes(["episode", "reward"], tmp_path / "curve.csv")


def test_seed_spread_over_the_common_range():
    a = ([0.0, 10.0, 20.0], [0.0, 10.0, 20.0])
    b = ([5.0, 15.0], [5.0, 5.0])
    grid, low, mean, high = parl_docs.seed_spread([a, b], points=3)
    assert grid == [5.0, 10.0, 15.0]  # from the largest first x to the smallest last x
    assert low == [5.0, 5.0, 5.0] and high == [5.0, 10.0, 15.0] and mean == [5.0, 7.5, 10.0]
    assert parl_docs.seed_spread([([0.0, 1.0], [1.0, 1.0]), ([2.0, 3.0], [1.0, 1.0])]) == ([], [], [], [])
    repeated = ([0.0, 1.0, 1.0, 2.0], [0.0, 1.0, 3.0, 5.0])
    assert parl_docs.seed_spread([repeated, repeated], points=3)[2][1] == 3.0  # a repeated x: the last


def test_trailing_mean_of_episode_returns():
    assert parl_docs.trailing_mean([1.0, 3.0, 5.0, 7.0], 2) == [1.0, 2.0, 4.0, 6.0]
    assert parl_docs.trailing_mean([], 10) == []


def test_torch_module_init_doc_is_not_shown_as_ours():
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        """Our network."""

    lines = ["Our network.", "", *torch.nn.Module.__init__.__doc__.strip().splitlines()]
    parl_docs.drop_foreign_init_doc(Net, lines)
    assert [line for line in lines if line.strip()] == ["Our network."]


def test_a_foreign_init_part_alone_is_no_missing_docstring(caplog):
    """autodoc passes a class's docstring and its __init__'s separately: dropping torch's is not a missing one."""
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        """Our network."""

    caplog.set_level(logging.WARNING)
    lines = torch.nn.Module.__init__.__doc__.strip().splitlines()
    parl_docs._check_docstring(None, "class", "parl_core.Net", Net, None, lines)
    assert lines == [] and caplog.records == []
    parl_docs._check_docstring(None, "class", "parl_core.Net", Net, None, [])
    assert len(caplog.records) == 1


def test_every_parl_reexport_has_a_row_on_the_parl_page():
    import parl

    page = (parl_docs.DOCS / "api" / "parl.md").read_text(encoding="utf-8")
    missing = [name for name in parl.__all__ if f"| `parl.{name}` |" not in page]
    assert missing == [], f"docs/api/parl.md has no row for {missing}"


def test_private_bases_are_hidden():
    """``Bases:`` names no private class: a private mixin gives way to its public bases, or to ``object``."""
    import parl_core.torch
    from parl_algorithms.torch import DQN
    from parl_algorithms.torch._common import LazyInfo

    assert parl_docs.is_private_class(LazyInfo)
    assert parl_docs.public_bases([LazyInfo, parl_core.torch.Algorithm]) == [parl_core.torch.Algorithm]
    assert not any(parl_docs.is_private_class(base) for base in parl_docs.public_bases(list(DQN.__bases__)))
    assert parl_docs.public_bases(list(parl_core.torch.Agent.__bases__)) == [object]
    assert parl_docs.public_bases([parl_core.torch.Algorithm]) == [parl_core.torch.Algorithm]


def test_remote_class_has_a_real_signature():
    """help() and the API reference show the decorator's options, not ``(*args, **kwargs)``."""
    import inspect

    from parl_remote import remote_class

    params = inspect.signature(remote_class).parameters
    assert list(params) == ["cls", "wait", "max_memory", "n_gpu"]
    assert params["wait"].kind is inspect.Parameter.KEYWORD_ONLY and params["wait"].default is True
