"""ESAgent: persistence (solver and inference model), torch models, GA, clones and misuse errors."""

from __future__ import annotations

import numpy as np
import pytest

from evokit import ESAgent, ModelFileError, NumpyMLP, SolverStateError


def _run(agent: ESAgent, clone: ESAgent, generations: int, pop: int = 6) -> None:
    for _ in range(generations):
        infos = [clone.add_noise() for _ in range(pop)]
        rewards = [-float(np.sum((agent.candidate_params(i) - 1.0) ** 2)) for i in infos]
        agent.update(infos, rewards)


@pytest.mark.parametrize("solver_type, optimizer", [("BASIC_ES", "ADAM"), ("BASIC_ES", "MOMENTUM"),
                                                    ("CMA_ES", "SGD"), ("GA", "SGD")])
def test_save_and_load_solver_continue_exactly(tmp_path, make_config, solver_type, optimizer):
    config = make_config(solver_type=solver_type, optimizer=optimizer, std=0.3)
    agent = ESAgent(NumpyMLP([3, 4, 2], seed=0), config=config)
    agent.init_solver()
    clone = agent.clone(sampler_id=1)
    _run(agent, clone, 3)
    agent.save_inference_model(tmp_path / "m")
    agent.save_solver(tmp_path / "m")
    # an agent loaded from disk, as the tutorial's offline update does: no model code needed for a NumpyMLP
    loaded = ESAgent(config=config).load_inference_model(tmp_path / "m").load_solver(tmp_path / "m")
    assert loaded.model_iter_id == agent.model_iter_id == 3
    np.testing.assert_array_equal(loaded.params, agent.params)
    clone_b = loaded.clone(sampler_id=2)
    clone_a = agent.clone(sampler_id=2)
    _run(agent, clone_a, 2)
    _run(loaded, clone_b, 2)
    np.testing.assert_array_equal(loaded.params, agent.params)


@pytest.mark.parametrize("solver_type, optimizer", [("BASIC_ES", "ADAM"), ("CMA_ES", "SGD"), ("GA", "SGD")])
def test_state_dict_round_trip_continues_exactly_through_a_run_checkpoint(tmp_path, make_config, solver_type,
                                                                         optimizer):
    """``state_dict`` / ``load_state_dict`` (what parl's Checkpointer saves): through a checkpoint file, another
    agent with other initial weights continues as the original; a refused state leaves the agent unchanged."""
    from parl_core.utils import Checkpointer, RunLog

    config = make_config(solver_type=solver_type, optimizer=optimizer, std=0.3)
    agent = ESAgent(NumpyMLP([3, 4, 2], seed=0), config=config).init_solver()
    _run(agent, agent.clone(sampler_id=1), 3)
    ckpt = Checkpointer(RunLog(tmp_path), every_min=0)
    ckpt.register(agent=agent)
    ckpt.save(step=3)
    other = ESAgent(NumpyMLP([3, 4, 2], seed=7), config=config).init_solver()
    resumed = Checkpointer(RunLog(tmp_path), every_min=0, resume=True)
    resumed.register(agent=other)
    assert resumed.load() == 3
    assert other.model_iter_id == agent.model_iter_id == 3
    np.testing.assert_array_equal(other.params, agent.params)
    _run(agent, agent.clone(sampler_id=2), 2)
    _run(other, other.clone(sampler_id=2), 2)
    np.testing.assert_array_equal(other.params, agent.params)

    small = ESAgent(NumpyMLP([3, 2], seed=0), config=config).init_solver()
    before = small.params.copy()
    with pytest.raises(SolverStateError, match="this agent's 8"):
        small.load_state_dict(agent.state_dict())
    state = agent.state_dict()
    del state["meta/warehouse_iters"]
    fresh = ESAgent(NumpyMLP([3, 4, 2], seed=7), config=config).init_solver()
    params = fresh.params.copy()
    with pytest.raises(ModelFileError, match="lacks \\['meta/warehouse_iters'\\]"):
        fresh.load_state_dict(state)
    np.testing.assert_array_equal(fresh.params, params)
    np.testing.assert_array_equal(small.params, before)


def test_inference_model_and_solver_from_different_iterations_are_refused(tmp_path, make_config):
    agent = ESAgent(NumpyMLP([3, 2]), config=make_config())
    agent.init_solver()
    agent.save_inference_model(tmp_path / "it0")
    _run(agent, agent.clone(), 1)
    agent.save_solver(tmp_path / "it1")
    fresh = ESAgent(config=make_config()).load_inference_model(tmp_path / "it0")
    with pytest.raises(SolverStateError, match="load both from one directory"):
        fresh.load_solver(tmp_path / "it1")
    with pytest.raises(SolverStateError, match="CMA_ES"):
        ESAgent(config=make_config(solver_type="CMA_ES")).load_inference_model(tmp_path / "it0").load_solver(
            tmp_path / "it1")
    with pytest.raises(FileNotFoundError, match="save_solver"):
        fresh.load_solver(tmp_path / "nowhere")


def test_torch_module(tmp_path, make_config):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    agent = ESAgent(net, config=make_config(optimizer="ADAM", std=0.1))
    agent.init_solver()
    assert agent.num_params == 3 * 5 + 5 + 5 * 2 + 2
    clone = agent.clone()
    info = clone.add_noise()
    x = np.ones((4, 3), dtype=np.float32)
    # the clone's module runs the perturbed parameters; the master's is untouched
    delta = clone.params - agent.params
    assert np.abs(delta).max() > 0
    np.testing.assert_allclose(delta, agent.candidate_params(info) - agent.params, atol=1e-7)
    assert not np.allclose(clone.predict(x), agent.predict(x))
    agent.update([info, clone.add_noise()], [1.0, 0.0])
    path = agent.save_inference_model(tmp_path / "m")
    assert path.endswith("model.pt")
    net2 = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    other = ESAgent(net2, config=make_config()).load_inference_model(tmp_path / "m")
    np.testing.assert_array_equal(other.params, agent.params)
    np.testing.assert_allclose(other.predict(x), agent.predict(x))


def test_ga_improves_and_keeps_the_best(make_config):
    agent = ESAgent(NumpyMLP([2, 3], seed=0), config=make_config(solver_type="GA", std=0.2, elite_size=4))
    agent.init_solver()
    clone = agent.clone()
    start = -float(np.sum((agent.params - 1.0) ** 2))
    best = []
    for _ in range(30):
        infos = [clone.add_noise() for _ in range(10)]
        assert all(len(i.key) == 2 for i in infos)  # (noise key, parent elite)
        rewards = [-float(np.sum((agent.candidate_params(i) - 1.0) ** 2)) for i in infos]
        stats = agent.update(infos, rewards)
        best.append(stats["best_reward"])
        assert -float(np.sum((agent.params - 1.0) ** 2)) == pytest.approx(stats["best_reward"], rel=1e-5)
    assert all(b2 >= b1 for b1, b2 in zip(best, best[1:], strict=False))  # elitism: never worse
    assert best[-1] > start / 4


def test_misuse_errors(make_config):
    agent = ESAgent(NumpyMLP([2, 2]), config=make_config())
    with pytest.raises(SolverStateError, match="init_solver"):
        agent.clone()
    agent.init_solver()
    clone = agent.clone()
    with pytest.raises(SolverStateError, match="master agent"):
        clone.update([], [])
    with pytest.raises(SolverStateError, match="master agent"):
        clone.clone()
    with pytest.raises(SolverStateError, match="needs a model"):
        ESAgent(config=make_config()).init_solver()
    with pytest.raises(ValueError, match="without its code"):
        ESAgent(config=make_config()).load_inference_model(__file__)
    with pytest.raises(TypeError, match="get_weights"):
        ESAgent(object())


def test_sampling_state_lets_another_agent_draw_the_masters_samples(make_config):
    config = make_config(std=0.2)
    master = ESAgent(NumpyMLP([3, 4], seed=0), config=config)
    master.init_solver()
    _run(master, master.clone(), 2)
    worker = ESAgent(NumpyMLP([3, 4], seed=5), config=config)  # different initial weights: replaced by the state
    worker.init_solver()
    worker.set_sampling_state(master.get_sampling_state())
    infos = [worker.clone(sampler_id=4).add_noise() for _ in range(3)]
    assert all(i.model_iter_id == 2 for i in infos)
    for info in infos:
        np.testing.assert_array_equal(worker.candidate_params(info), master.candidate_params(info))
    master.update(infos, [0.0, 1.0, 2.0])
    assert master.model_iter_id == 3
    with pytest.raises(SolverStateError, match="another master"):
        worker.update(infos, [0.0, 1.0, 2.0])


def test_paddle_layer(tmp_path, make_config):
    paddle = pytest.importorskip("paddle")
    paddle.seed(0)

    def make_net():
        return paddle.nn.Sequential(paddle.nn.Linear(3, 5), paddle.nn.Tanh(), paddle.nn.Linear(5, 2))

    agent = ESAgent(make_net(), config=make_config(optimizer="ADAM", std=0.1))
    agent.init_solver()
    assert agent.num_params == 32
    clone = agent.clone()
    info = clone.add_noise()
    x = np.ones((4, 3), dtype=np.float32)
    np.testing.assert_allclose(clone.params - agent.params, agent.candidate_params(info) - agent.params, atol=1e-6)
    assert not np.allclose(clone.predict(x), agent.predict(x))
    before = agent.params
    agent.update([info, clone.add_noise()], [1.0, 0.0])
    assert not np.array_equal(before, agent.params)
    assert agent.save_inference_model(tmp_path / "m").endswith("model.pdparams")
    other = ESAgent(make_net(), config=make_config()).load_inference_model(tmp_path / "m")
    np.testing.assert_array_equal(other.params, agent.params)
    np.testing.assert_allclose(other.predict(x), agent.predict(x), rtol=1e-6)


def test_load_inference_model_reads_a_paddle_saved_directory(tmp_path, make_config):
    """The tutorial's flow: save an inference model with paddle, then ``ESAgent().load_inference_model(dir)``."""
    paddle = pytest.importorskip("paddle")
    paddle.seed(1)
    net = paddle.nn.Sequential(paddle.nn.Linear(3, 5), paddle.nn.Tanh(), paddle.nn.Linear(5, 2))
    paddle.jit.save(net, str(tmp_path / "init_model" / "model"),
                    input_spec=[paddle.static.InputSpec([None, 3], "float32", "obs")])
    x = np.ones((4, 3), dtype=np.float32)
    agent = ESAgent(config=make_config(optimizer="ADAM", std=0.1)).load_inference_model(tmp_path / "init_model")
    agent.init_solver()
    assert agent.num_params == 32
    np.testing.assert_allclose(agent.predict(x), net(paddle.to_tensor(x)).numpy(), rtol=1e-6)
    clone = agent.clone()
    infos = [clone.add_noise(), clone.add_noise()]
    assert not np.allclose(clone.predict(x), agent.predict(x))  # the loaded layer's parameters are perturbed
    before = agent.params
    agent.update(infos, [1.0, 0.0])
    assert not np.array_equal(before, agent.params)
    with pytest.raises(ValueError, match="without model="):
        ESAgent(net, config=make_config()).load_inference_model(tmp_path / "init_model")
