"""``device=`` on every torch algorithm: where models, target models, optimizer state and the algorithm's own
tensors live; numpy / CPU-tensor inputs; checkpoints across devices; host <-> device traffic per learn step.

Every test that takes the ``device`` parameter runs on the CPU, on a ``torch.device`` and, where torch sees a
GPU, on ``"cuda"`` (skipped here with the reason "CUDA not available", never silently on a GPU machine).
"""

import contextlib
import functools
import inspect
import os
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from algo_models import OBS_DIM, models  # noqa: E402
from test_algorithms_smoke import CASES  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import parl_algorithms.torch as algs  # noqa: E402
from parl_core.torch import Agent, Algorithm, resolve_device  # noqa: E402

# the zoo's names that are not algorithms: MAPPO's value normaliser, exported beside it as PARL does
NOT_ALGORITHMS = {"PopArt"}
ALGORITHMS = {name: getattr(algs, name) for name in algs.__all__ if name not in NOT_ALGORITHMS}  # loaded lazily

NO_CUDA = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="CUDA not available"
    + (" to this torch, though this machine has a GPU (/dev/nvidia0): constraints.txt pins the CPU wheel; install "
       "a CUDA build of torch to run these" if os.path.exists("/dev/nvidia0") else ""),
)  # fmt: skip
DEVICES = ["cpu", pytest.param(torch.device("cpu"), id="torch.device(cpu)"),
           pytest.param("cuda", marks=[pytest.mark.cuda, NO_CUDA], id="cuda")]


def _on(device):
    """The torch test models with every algorithm class bound to ``device=device``."""
    M = models("torch")
    bound = {name: functools.partial(cls, device=device) for name, cls in ALGORITHMS.items()}
    return SimpleNamespace(**{**vars(M), "algs": SimpleNamespace(**bound)})


def _tensors(alg):
    """Every tensor the algorithm holds: parameters and buffers of its models, optimizer state, tensor attributes."""
    for model in alg.models().values():
        yield from model.parameters()
        yield from model.buffers()
    for value in alg.state_dict().values():
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, dict) and "state" in value:  # an optimizer's state_dict
            for per_param in value["state"].values():
                yield from (t for t in per_param.values() if isinstance(t, torch.Tensor) and t.ndim)


def _same(device, tensor):
    want = resolve_device(device)
    return tensor.device.type == want.type and (want.index is None or tensor.device.index == want.index)


def test_every_torch_algorithm_takes_device():
    assert all(inspect.isclass(cls) and issubclass(cls, Algorithm) for cls in ALGORITHMS.values())
    missing = [name for name, cls in ALGORITHMS.items() if "device" not in inspect.signature(cls).parameters]
    assert missing == []


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_models_optimizer_state_and_tensors_live_on_device(name, device):
    build, batch, pred_shape = CASES[name]
    M = _on(device)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    alg = build(M)
    assert alg.device == resolve_device(device)
    agent = Agent(alg)
    assert agent.device == alg.device
    for _ in range(2):
        agent.learn(*batch(rng))  # numpy in
    alg.learn(*(torch.as_tensor(x) for x in batch(rng)))  # CPU tensors in, straight to the algorithm
    held = list(_tensors(alg))
    assert held and all(_same(device, t) for t in held), {t.device for t in held}
    obs = rng.normal(size=(8, OBS_DIM)).astype(np.float32)
    out = agent.predict(obs)
    assert isinstance(out, np.ndarray) and out.shape == pred_shape
    np.testing.assert_array_equal(M.ops.numpy(alg.predict(torch.as_tensor(obs))), out)
    weights = alg.get_weights()
    assert all(isinstance(w, np.ndarray) for w in weights.values())


@contextlib.contextmanager
def _default_device(device):
    torch.set_default_device(device)
    try:
        yield
    finally:
        torch.set_default_device(None)


@pytest.mark.parametrize("name", sorted(CASES))
def test_learn_creates_no_tensor_without_an_explicit_device(name):
    # With "meta" as torch's default device, any tensor an algorithm makes without device=... lands on meta and
    # the next op mixing it with the CPU model fails: on a GPU that tensor would have been made on the host.
    build, batch, _ = CASES[name]
    M = _on("cpu")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    alg = build(M)
    data = [torch.as_tensor(x) for x in batch(rng)]
    alg.learn(*data)
    before = alg.model.get_weights()
    with _default_device("meta"):
        alg.learn(*data)
        out = alg.predict(data[0])
    after = alg.model.get_weights()
    assert out.device.type == "cpu" and any(not np.array_equal(after[k], before[k]) for k in before)


class _HostCopies(TorchDispatchMode):
    """Counts the points where a GPU learner would copy device -> host: ``item()`` / ``float()`` / ``int()``
    (``aten._local_scalar_dense``) and ``tolist()`` / ``cpu()`` / ``numpy()`` (patched, as on the CPU those
    dispatch nothing)."""

    METHODS = ("tolist", "cpu", "numpy")

    def __enter__(self):
        self.count = 0
        self._saved = {m: getattr(torch.Tensor, m) for m in self.METHODS}
        for method, original in self._saved.items():
            setattr(torch.Tensor, method, self._counting(original))
        return super().__enter__()

    def __exit__(self, *exc):
        for method, original in self._saved.items():
            setattr(torch.Tensor, method, original)
        return super().__exit__(*exc)

    def _counting(self, original):
        def method(tensor, *args, **kwargs):
            self.count += 1
            return original(tensor, *args, **kwargs)
        return method

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            self.count += 1
        return func(*args, **(kwargs or {}))


# device -> host copies one learn() needs, and why: PARL's DQN / PPO return Python floats (one copy, PPO's three
# losses stacked); discrete actions are range-checked (min and max in one copy); PPO's early stop on target_kl
# is a host decision; A3C / IMPALA take learning_rate and entropy_coeff as learn() arguments, tensors here (as
# Agent.learn passes them), read on the host (two copies) besides the action range check. Diagnostics
# (last_info) stay on the device until read.
HOST_COPIES = {"DQN": 2, "DDQN": 2, "PPO-discrete": 2, "PPO-continuous": 1, "A2C": 1, "PolicyGradient": 1,
               "A3C": 3, "IMPALA": 3}


@pytest.mark.parametrize("name", sorted(CASES))
def test_learn_copies_nothing_to_the_host_beyond_its_return_value(name):
    build, batch, _ = CASES[name]
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    alg = build(_on("cpu"))
    alg.learn(*batch(rng))
    data = [torch.as_tensor(x) for x in batch(rng)]
    with _HostCopies() as copies:
        alg.learn(*data)
    assert copies.count == HOST_COPIES.get(name, 0)
    if hasattr(type(alg), "last_info"):
        with _HostCopies() as copies:
            info = alg.last_info
        assert info and all(isinstance(v, float) for v in info.values()) and copies.count <= 1


def test_cuda_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    M = models("torch")
    for device in ("cuda", "cuda:1", torch.device("cuda")):
        with pytest.raises(ValueError, match=r"CUDA is not available.*device='cpu'"):
            algs.DQN(M.QModel(), gamma=0.9, lr=1e-3, device=device)
    assert algs.DQN(M.QModel(), gamma=0.9, lr=1e-3).device == torch.device("cpu")  # the default falls back


def test_bad_device_values_name_the_fix():
    M = models("torch")
    with pytest.raises(ValueError, match="device='cpu'"):
        algs.DQN(M.QModel(), gamma=0.9, lr=1e-3, device="gpu0")
    with pytest.raises(TypeError, match="device='cpu'"):
        algs.DQN(M.QModel(), gamma=0.9, lr=1e-3, device=0)


@pytest.mark.cuda
@NO_CUDA
def test_cuda_index_past_the_last_gpu_is_a_clear_error():
    with pytest.raises(ValueError, match="visible CUDA device"):
        resolve_device(f"cuda:{torch.cuda.device_count()}")


def _checkpoint_round_trip(tmp_path, save_device, load_device, map_location):
    build, batch, _ = CASES["SAC-auto-alpha"]
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    saver = Agent(build(_on(save_device)))
    for _ in range(2):
        saver.learn(*batch(rng))
    saver.save(tmp_path / "ckpt.pt")
    loader = Agent(build(_on(load_device)))
    loader.restore(tmp_path / "ckpt.pt", map_location=map_location)
    assert all(_same(load_device, t) for t in _tensors(loader.alg))
    for key, weights in saver.alg.get_all_weights().items():
        for name, value in weights.items():
            np.testing.assert_array_equal(loader.alg.get_all_weights()[key][name], value)
    obs = batch(rng)[0]
    np.testing.assert_allclose(loader.predict(obs), saver.predict(obs), rtol=1e-5, atol=1e-6)
    if resolve_device(save_device) == resolve_device(load_device):  # (the RNG streams of two devices differ)
        next_batch = batch(rng)
        torch.manual_seed(3)
        expected = [float(x) for x in saver.learn(*next_batch)]
        torch.manual_seed(3)
        assert [float(x) for x in loader.learn(*next_batch)] == expected


@pytest.mark.parametrize("map_location", [None, "cpu", torch.device("cpu")])
def test_checkpoint_restores_with_any_map_location(tmp_path, map_location):
    _checkpoint_round_trip(tmp_path, "cpu", torch.device("cpu"), map_location)


@pytest.mark.cuda
@NO_CUDA
@pytest.mark.parametrize(("save_device", "load_device"), [("cuda", "cpu"), ("cpu", "cuda")])
def test_checkpoint_moves_between_gpu_and_cpu(tmp_path, save_device, load_device):
    _checkpoint_round_trip(tmp_path, save_device, load_device, None)


def test_paddle_algorithms_take_device():
    M = models("paddle")  # skipped where paddle is not installed
    import paddle

    import parl_algorithms.paddle as paddle_algs

    available = [name for name in paddle_algs.__all__ if name not in NOT_ALGORITHMS and _paddle_has(paddle_algs, name)]
    assert "DQN" in available
    assert [n for n in available if "device" not in inspect.signature(getattr(paddle_algs, n)).parameters] == []
    before = paddle.get_device()
    try:
        alg = M.algs.DQN(M.QModel(), gamma=0.9, lr=1e-3, device="cpu")
        assert alg.device == "cpu" and paddle.get_device() == "cpu"
        rng = np.random.default_rng(0)
        loss = alg.learn(*(paddle.to_tensor(x) for x in CASES["DQN"][1](rng)))
        assert np.isfinite(float(loss))
        assert all(p.place.is_cpu_place() for p in alg.model.parameters())
        if not paddle.device.is_compiled_with_cuda():
            with pytest.raises(ValueError, match="device='cpu'"):
                M.algs.DQN(M.QModel(), gamma=0.9, lr=1e-3, device="cuda")
        with pytest.raises(ValueError, match="not a paddle device"):
            M.algs.DQN(M.QModel(), gamma=0.9, lr=1e-3, device="tpu")
        with pytest.raises(TypeError, match="device='cpu'"):
            M.algs.DQN(M.QModel(), gamma=0.9, lr=1e-3, device=0)
    finally:
        paddle.set_device(before)


def _paddle_has(module, name):
    try:
        getattr(module, name)
    except ImportError:  # an algorithm with no paddle implementation
        return False
    return True
