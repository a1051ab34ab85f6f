"""parl_core Algorithm and Agent (torch and paddle): weights of every model, numpy bridge, checkpoints."""

import copy
import importlib

import numpy as np
import pytest
from backends import load_backend


def make_classes(B):
    class QNet(B.core.Model):
        def __init__(self):
            super().__init__()
            self.fc1 = B.Linear(4, 16)
            self.fc2 = B.Linear(16, 2)

        def forward(self, obs):
            return self.fc2(B.tanh(self.fc1(obs)))

    class ToyDQN(B.core.Algorithm):
        """A tiny DQN-like algorithm with a target network, an Adam optimizer and a step counter."""

        checkpoint_attrs = ("learn_steps",)

        def __init__(self, model, lr=1e-2):
            super().__init__(model)
            self.target_model = copy.deepcopy(model)
            self.optimizer = B.adam(self.model.parameters(), lr=lr)
            self.learn_steps = 0

        def predict(self, obs):
            return B.argmax(self.model(obs))

        def sample(self, obs):
            return self.model(obs)

        def learn(self, obs, action, target):
            q = B.gather_action(self.model(obs), action)
            loss = ((q - target) ** 2).mean()
            B.step(self.optimizer, loss)
            self.learn_steps += 1
            if self.learn_steps % 2 == 0:
                self.model.sync_weights_to(self.target_model, decay=0.5)
            return loss

    return QNet, ToyDQN


def make_agent(B, seed=0):
    QNet, ToyDQN = make_classes(B)
    B.seed(seed)
    return B.core.Agent(ToyDQN(QNet()))


def batch(i):
    rng = np.random.default_rng(i)
    return (rng.normal(size=(8, 4)), rng.integers(0, 2, size=8), rng.normal(size=8))


def test_algorithm_weights_cover_target_network(backend):
    QNet, ToyDQN = make_classes(backend)
    alg = ToyDQN(QNet())
    assert set(alg.models()) == {"model", "target_model"}
    weights = alg.get_all_weights()
    assert set(weights) == {"model", "target_model"}
    other = ToyDQN(QNet())
    backend.fill_(alg.target_model.fc1.weight, 3.0)
    other.set_weights(alg.get_all_weights())
    assert np.all(backend.numpy(other.target_model.fc1.weight) == 3.0)
    np.testing.assert_array_equal(backend.numpy(other.model.fc2.bias), backend.numpy(alg.model.fc2.bias))


def test_algorithm_set_weights_errors(backend):
    QNet, ToyDQN = make_classes(backend)
    alg = ToyDQN(QNet())
    with pytest.raises(ValueError, match="target_model"):
        alg.set_weights({"model": alg.model.get_weights()})
    with pytest.raises(TypeError, match="get_weights"):
        alg.set_weights(["not", "a", "dict"])


def test_non_model_passed_to_algorithm_is_a_type_error(backend):
    with pytest.raises(TypeError, match=r"class MyModel\(parl.Model\)"):
        backend.core.Algorithm(backend.Linear(2, 2))


def test_agent_requires_an_algorithm(backend):
    QNet, _ = make_classes(backend)
    with pytest.raises(TypeError, match="parl.Algorithm"):
        backend.core.Agent(QNet())


def test_agent_rejects_algorithm_holding_a_non_model(backend):
    class ParlStyle(backend.core.Algorithm):
        def __init__(self, model):  # PARL's algorithms often skip Algorithm.__init__
            self.model = model

    with pytest.raises(TypeError, match=r"ParlStyle.model is a Linear, not a parl.Model"):
        backend.core.Agent(ParlStyle(backend.Linear(2, 2)))


def test_agent_converts_numpy_in_and_out(backend):
    agent = make_agent(backend)
    obs = np.zeros((3, 4), dtype=np.float64)  # float64 becomes float32
    action = agent.predict(obs)
    assert isinstance(action, np.ndarray) and action.shape == (3,)
    q = agent.sample(obs)
    assert isinstance(q, np.ndarray) and q.dtype == np.float32 and q.shape == (3, 2)
    loss = agent.learn(*batch(0))
    assert isinstance(loss, float) and loss > 0


def test_agent_returns_a_named_tuple_of_tensors_as_a_tuple_of_numbers(backend):
    """IMPALA's learn returns ``(VTraceLoss(...), kl)``: a named tuple of 0-d tensors inside a tuple."""
    from typing import NamedTuple

    class Losses(NamedTuple):
        a: object
        b: object

    agent = make_agent(backend)
    learn = agent.alg.learn

    def named_learn(*args):
        loss = learn(*args)
        return Losses(loss, loss * 2.0), [loss]

    agent.alg.learn = named_learn
    out = agent.learn(*batch(0))
    assert type(out) is tuple and type(out[0]) is tuple and type(out[1]) is list
    (a, b), (c,) = out
    assert all(isinstance(x, float) for x in (a, b, c))
    assert a > 0 and b == pytest.approx(2.0 * a) and c == a


def test_agent_predict_runs_without_grad(backend):
    agent = make_agent(backend)
    seen = {}
    original = agent.alg.sample

    def spy(obs):
        seen["grad"] = backend.grad_enabled()
        return original(obs)

    agent.alg.sample = spy
    agent.sample(np.zeros((1, 4), dtype=np.float32))
    assert seen["grad"] is False


def test_agent_rejects_non_numeric_observations(backend):
    agent = make_agent(backend)
    with pytest.raises(TypeError, match="np.asarray"):
        agent.predict(np.array([["a", "b", "c", "d"]]))


def test_train_eval_modes_cover_every_model(backend):
    agent = make_agent(backend)
    agent.eval()
    assert agent.training is False
    assert not agent.alg.model.training and not agent.alg.target_model.training
    agent.train()
    assert agent.training is True and agent.alg.target_model.training


def test_full_checkpoint_resumes_training_exactly(backend, tmp_path):
    agent = make_agent(backend, seed=1)
    for i in range(5):
        agent.learn(*batch(i))
    path = tmp_path / "ckpt" / f"agent.{backend.ext}"
    agent.save(path)  # the model's state_dict at path, everything in path + ".state"
    assert set(backend.load(str(path))) == set(agent.alg.model.state_dict())
    expected = [agent.learn(*batch(i)) for i in range(5, 8)]

    fresh = make_agent(backend, seed=2)  # different initial weights, fresh Adam state
    fresh.restore(path)
    assert fresh.alg.learn_steps == 5
    resumed = [fresh.learn(*batch(i)) for i in range(5, 8)]
    assert resumed == expected  # bit-identical: weights, target net and Adam moments all restored
    for a, b in zip(agent.alg.target_model.get_weights().values(),
                    fresh.alg.target_model.get_weights().values(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_without_optimizer_state_the_next_loss_differs(backend, tmp_path):
    """Control for the test above: restoring only the model (PARL 2.x) does not resume Adam."""
    agent = make_agent(backend, seed=1)
    for i in range(5):
        agent.learn(*batch(i))
    agent.save(tmp_path / "model.ckpt", model=agent.alg.model)
    agent.learn(*batch(5))
    expected = agent.learn(*batch(6))
    fresh = make_agent(backend, seed=2)
    fresh.restore(tmp_path / "model.ckpt", model=fresh.alg.model)
    fresh.learn(*batch(5))
    assert fresh.learn(*batch(6)) != expected


def test_model_only_save_restore_parl_style(backend, tmp_path):
    agent = make_agent(backend, seed=1)
    path = tmp_path / "model.ckpt"
    agent.save(path, model=agent.alg.model)
    assert set(backend.load(str(path))) == set(agent.alg.model.state_dict())  # a plain state_dict
    fresh = make_agent(backend, seed=3)
    fresh.restore(path)  # no model given: loads into alg.model, as PARL
    np.testing.assert_array_equal(fresh.alg.model.get_weights()["fc1.weight"],
                                  agent.alg.model.get_weights()["fc1.weight"])
    other = make_agent(backend, seed=4)
    other.restore(path, model=other.alg.target_model)
    np.testing.assert_array_equal(other.alg.target_model.get_weights()["fc2.bias"],
                                  agent.alg.model.get_weights()["fc2.bias"])


def _agent_module(backend):
    """parl_core.torch.agent / parl_core.paddle.agent (CHECKPOINT_FORMAT, STATE_SUFFIX)."""
    return importlib.import_module(backend.core.Agent.__module__)


def test_main_file_is_parls_and_loads_without_the_agent(backend, tmp_path):
    """PARL user code (AlphaZero's submission, deployment) loads the file with the framework alone."""
    agent = make_agent(backend, seed=1)
    agent.learn(*batch(0))
    path = tmp_path / "model.ckpt"
    agent.save(path)
    assert (tmp_path / f"model.ckpt{_agent_module(backend).STATE_SUFFIX}").is_file()
    QNet, _ = make_classes(backend)
    backend.seed(5)
    net = QNet()
    backend.load_state_dict(net, backend.load(str(path)))  # torch.load + load_state_dict / paddle.load + set_state_dict
    for name, value in agent.alg.model.get_weights().items():
        np.testing.assert_array_equal(net.get_weights()[name], value)


def _learned(backend, seed=1, steps=5):
    agent = make_agent(backend, seed=seed)
    for i in range(steps):
        agent.learn(*batch(i))
    return agent


def test_stale_sidecar_loads_the_main_file_and_warns(backend, tmp_path):
    agent = _learned(backend)
    path = tmp_path / "model.ckpt"
    agent.save(path)
    other = make_agent(backend, seed=7)  # other code rewrites the main file (PARL's save, a conversion script)
    backend.save(other.alg.model.state_dict(), str(path))
    fresh = make_agent(backend, seed=2)
    with pytest.warns(UserWarning, match=r"not restored .*learn_steps, optimizer, target_model"):
        fresh.restore(path)
    assert fresh.alg.learn_steps == 0  # the sidecar's state was not applied
    for name, value in other.alg.model.get_weights().items():
        np.testing.assert_array_equal(fresh.alg.model.get_weights()[name], value)


def test_single_file_of_the_earlier_full_format_restores_everything(backend, tmp_path):
    agent = _learned(backend)
    path = tmp_path / "old.ckpt"  # what save(path) wrote before the sidecar
    old = {"format": _agent_module(backend).CHECKPOINT_FORMAT, "algorithm": "ToyDQN", "state": agent.alg.state_dict()}
    backend.save(old, str(path))
    expected = [agent.learn(*batch(i)) for i in range(5, 7)]
    fresh = make_agent(backend, seed=2)
    fresh.restore(path)
    assert fresh.alg.learn_steps == 5
    assert [fresh.learn(*batch(i)) for i in range(5, 7)] == expected  # Adam moments too
    with pytest.raises(ValueError, match="without model="):
        fresh.restore(path, model=fresh.alg.model)


def test_model_only_save_removes_an_earlier_sidecar(backend, tmp_path):
    agent = _learned(backend)
    path = tmp_path / "model.ckpt"
    agent.save(path)
    sidecar = tmp_path / f"model.ckpt{_agent_module(backend).STATE_SUFFIX}"
    assert sidecar.is_file()
    agent.save(path, model=agent.alg.target_model)
    assert not sidecar.exists()
    fresh = make_agent(backend, seed=2)
    fresh.restore(path)  # PARL: into alg.model, nothing else
    assert fresh.alg.learn_steps == 0
    np.testing.assert_array_equal(fresh.alg.model.get_weights()["fc1.weight"],
                                  agent.alg.target_model.get_weights()["fc1.weight"])


def test_algorithm_without_main_model_saves_one_full_file(backend, tmp_path):
    QNet, _ = make_classes(backend)

    def make(seed):
        backend.seed(seed)
        alg = backend.core.Algorithm(None)
        alg.actor, alg.critic = QNet(), QNet()
        return backend.core.Agent(alg)

    agent = make(1)
    path = tmp_path / "two.ckpt"
    agent.save(path)
    assert not (tmp_path / f"two.ckpt{_agent_module(backend).STATE_SUFFIX}").exists()
    fresh = make(2)
    fresh.restore(path)
    np.testing.assert_array_equal(fresh.alg.critic.get_weights()["fc2.weight"],
                                  agent.alg.critic.get_weights()["fc2.weight"])
    agent.save(tmp_path / "actor.ckpt", model=agent.alg.actor)
    with pytest.raises(ValueError, match="restore\\(path, model=agent.alg.<name>\\)"):
        fresh.restore(tmp_path / "actor.ckpt")
    fresh.restore(tmp_path / "actor.ckpt", model=fresh.alg.actor)


def test_restore_errors(backend, tmp_path):
    agent = make_agent(backend)
    with pytest.raises(FileNotFoundError, match="agent.save"):
        agent.restore(tmp_path / "missing.ckpt")
    agent.save(tmp_path / "full.ckpt")
    agent.restore(tmp_path / "full.ckpt", model=agent.alg.target_model)  # the main file is a model's state_dict
    sidecar = tmp_path / f"full.ckpt{_agent_module(backend).STATE_SUFFIX}"
    backend.save({"weights": 1}, str(sidecar))  # not what save writes there
    with pytest.raises(ValueError, match="is not the state file"):
        agent.restore(tmp_path / "full.ckpt")
    agent.save(tmp_path / "full.ckpt")
    QNet, _ = make_classes(backend)
    backend.seed(0)
    other = backend.core.Agent(backend.core.Algorithm(QNet()))
    with pytest.raises(ValueError, match="restore it into the agent that saved it"):
        other.restore(tmp_path / "full.ckpt")


def test_a_model_of_the_other_framework_is_a_type_error_naming_the_fix(backend):
    other = load_backend("paddle" if backend.name == "torch" else "torch")
    QNet, _ = make_classes(other)
    with pytest.raises(TypeError, match=f"got the {other.name} model QNet.*parl_core.{backend.name}.Model"):
        backend.core.Algorithm(QNet())


def make_user_agent(B):
    """A PARL 2.x user's agent: its own predict / sample / learn, converting with the framework itself."""
    seen = []

    class UserAgent(B.core.Agent):
        def predict(self, obs, scale=1.0):
            """Greedy action (the user's docstring)."""
            seen.append(("predict", B.grad_enabled()))
            return self.sample(obs) * scale  # a wrapped method called from a wrapped method

        def sample(self, obs):
            seen.append(("sample", B.grad_enabled()))
            return B.numpy(self.alg.sample(B.to_tensor(np.asarray(obs, np.float32))))

        def learn(self, obs, action, target):
            seen.append(("learn before predict", B.grad_enabled()))
            self.predict(obs)
            seen.append(("learn after predict", B.grad_enabled()))
            return super().learn(obs, action, target)

        def helper(self):
            seen.append(("helper", B.grad_enabled()))

    return UserAgent, seen


def test_a_subclass_predict_and_sample_run_without_grad_and_learn_keeps_it(backend):
    UserAgent, seen = make_user_agent(backend)
    _, ToyDQN = make_classes(backend)
    agent = UserAgent(ToyDQN(make_classes(backend)[0]()))
    obs = np.zeros((2, 4), np.float32)
    assert backend.grad_enabled()
    agent.predict(obs)
    agent.sample(obs)
    agent.helper()
    assert backend.grad_enabled()  # restored after each call
    assert seen == [("predict", False), ("sample", False), ("sample", False), ("helper", True)]
    seen.clear()
    loss = agent.learn(*batch(0))
    assert np.isfinite(loss) and backend.grad_enabled()
    assert seen == [("learn before predict", True), ("predict", False), ("sample", False),
                    ("learn after predict", True)]
    with backend.no_grad():  # a caller's no-grad region stays one after the wrapped method returns
        agent.helper()
        agent.sample(obs)
        agent.helper()
    assert seen[-3:] == [("helper", False), ("sample", False), ("helper", False)]


def test_grad_mode_is_restored_when_a_wrapped_method_raises(backend):
    class Failing(backend.core.Agent):
        def predict(self, obs):
            raise RuntimeError("boom")

    _, ToyDQN = make_classes(backend)
    agent = Failing(ToyDQN(make_classes(backend)[0]()))
    with pytest.raises(RuntimeError, match="boom"):
        agent.predict(np.zeros((1, 4), np.float32))
    assert backend.grad_enabled()


def test_wrapped_methods_keep_name_docstring_and_signature(backend):
    import inspect

    UserAgent, _ = make_user_agent(backend)
    assert UserAgent.predict.__name__ == "predict"
    assert UserAgent.predict.__doc__ == "Greedy action (the user's docstring)."
    assert UserAgent.predict.__qualname__.endswith("UserAgent.predict")
    assert list(inspect.signature(UserAgent.predict).parameters) == ["self", "obs", "scale"]
    assert inspect.signature(UserAgent.predict).parameters["scale"].default == 1.0
    assert UserAgent.predict.__wrapped__.__name__ == "predict"
    assert not hasattr(UserAgent.learn, "__wrapped__") and not hasattr(UserAgent.helper, "__wrapped__")


def test_no_grad_methods_opt_out_and_subclasses_of_subclasses(backend):
    UserAgent, seen = make_user_agent(backend)
    QNet, ToyDQN = make_classes(backend)
    obs = np.zeros((1, 4), np.float32)

    class KeepsGrad(UserAgent):  # opts out: the inherited wrapped methods run their originals
        no_grad_methods = ()

    class OwnSample(UserAgent):  # a subclass of a subclass defining its own sample: wrapped too
        def sample(self, obs):
            seen.append(("own sample", backend.grad_enabled()))
            return super().sample(obs)

    class OnlySample(UserAgent):
        no_grad_methods = ("sample",)

    class BackAgain(KeepsGrad):  # the default again, on methods inherited from an opted-out class
        no_grad_methods = ("predict", "sample")

    KeepsGrad(ToyDQN(QNet())).predict(obs)
    assert seen == [("predict", True), ("sample", True)]
    seen.clear()
    OwnSample(ToyDQN(QNet())).sample(obs)
    assert seen == [("own sample", False), ("sample", False)]
    seen.clear()
    OnlySample(ToyDQN(QNet())).predict(obs)
    assert seen == [("predict", True), ("sample", False)]
    seen.clear()
    BackAgain(ToyDQN(QNet())).predict(obs)
    assert seen == [("predict", False), ("sample", False)]
    assert backend.grad_enabled()
    assert UserAgent.predict is not KeepsGrad.predict and KeepsGrad.predict is UserAgent.predict.__wrapped__


def test_no_grad_methods_must_be_a_tuple_of_names(backend):
    with pytest.raises(TypeError, match=r"no_grad_methods must be a tuple of method names"):
        class Bad(backend.core.Agent):  # noqa: F841 - the class statement raises
            no_grad_methods = "predict"
