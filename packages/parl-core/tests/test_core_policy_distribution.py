"""PARL's policy distributions (parl.core.torch.policy_distribution) against torch.distributions and
hand-computed cases; the paddle ones (parl_core.paddle.policy_distribution) against the torch ones on the same
inputs (one test body per behaviour, backend as a parameter)."""

import importlib
import math

import numpy as np
import pytest
import torch
from backends import load_backend
from torch.distributions import Categorical, Normal, kl_divergence

from parl_core.torch.policy_distribution import (
    CategoricalDistribution,
    DiagGaussianDistribution,
    SoftCategoricalDistribution,
    SoftMultiCategoricalDistribution,
)


def test_categorical_matches_torch():
    torch.manual_seed(0)
    logits, other = torch.randn(5, 4) * 3, torch.randn(5, 4)
    dist, ref = CategoricalDistribution(logits), Categorical(logits=logits)
    actions = torch.tensor([0, 1, 2, 3, 0])
    torch.testing.assert_close(dist.entropy(), ref.entropy())
    torch.testing.assert_close(dist.logp(actions, eps=0.0), ref.log_prob(actions))
    torch.testing.assert_close(dist.kl(CategoricalDistribution(other)), kl_divergence(ref, Categorical(logits=other)))
    assert dist.sample().shape == (5,) and dist.sample().dtype == torch.int64


def test_categorical_hand_computed_and_large_logits():
    dist = CategoricalDistribution(torch.tensor([[0.0, 0.0], [1000.0, 0.0]]))  # no overflow
    torch.testing.assert_close(dist.entropy(), torch.tensor([math.log(2.0), 0.0]))
    torch.testing.assert_close(dist.logp(torch.tensor([1, 0])), torch.log(torch.tensor([0.5, 1.0]) + 1e-6))
    assert torch.equal(dist.sample()[1:], torch.tensor([0]))
    with pytest.raises(ValueError, match=r"\[B, num_actions\]"):
        CategoricalDistribution(torch.zeros(4))


def test_diag_gaussian_matches_torch():
    torch.manual_seed(1)
    mean, logstd = torch.randn(6, 3), torch.randn(6, 3) * 0.3
    mean2, logstd2 = torch.randn(6, 3), torch.randn(6, 3) * 0.3
    dist = DiagGaussianDistribution((mean, logstd))
    ref = Normal(mean, logstd.exp())
    actions = torch.randn(6, 3)
    torch.testing.assert_close(dist.logp(actions), ref.log_prob(actions).sum(1))
    torch.testing.assert_close(dist.entropy(), ref.entropy().sum(1))
    torch.testing.assert_close(dist.kl(DiagGaussianDistribution((mean2, logstd2))),
                               kl_divergence(ref, Normal(mean2, logstd2.exp())).sum(1))
    samples = DiagGaussianDistribution((torch.zeros(20000, 1), torch.full((20000, 1), math.log(2.0)))).sample()
    assert abs(float(samples.std()) - 2.0) < 0.05
    with pytest.raises(ValueError, match="one shape"):
        DiagGaussianDistribution((mean, logstd[:, :1]))
    with pytest.raises(TypeError, match="DiagGaussian"):
        dist.kl(CategoricalDistribution(mean))


def test_soft_categorical_sample_is_a_differentiable_relaxed_one_hot():
    torch.manual_seed(2)
    logits = torch.tensor([[5.0, 0.0, 0.0]] * 2000, requires_grad=True)
    sample = SoftCategoricalDistribution(logits).sample()
    assert sample.shape == (2000, 3)
    torch.testing.assert_close(sample.sum(1), torch.ones(2000))
    # the argmax of Gumbel-softmax samples follows softmax(logits): p(0) = e^5 / (e^5 + 2) ~ 0.987
    assert abs(float((sample.argmax(1) == 0).float().mean()) - math.exp(5) / (math.exp(5) + 2)) < 0.01
    sample[:, 0].sum().backward()
    assert logits.grad is not None and torch.all(torch.isfinite(logits.grad))


def test_soft_multi_categorical_splits_the_parts():
    torch.manual_seed(3)
    logits = torch.randn(4, 5)  # parts of 2 and 3 values
    dist = SoftMultiCategoricalDistribution(logits, low=[0, 1], high=[1, 3])
    sample = dist.sample()
    assert sample.shape == (4, 5)
    torch.testing.assert_close(sample[:, :2].sum(1), torch.ones(4))
    torch.testing.assert_close(sample[:, 2:].sum(1), torch.full((4,), 4.0))  # 1 + 3 entries shifted by low = 1
    expected = Categorical(logits=logits[:, :2]).entropy() + Categorical(logits=logits[:, 2:]).entropy()
    torch.testing.assert_close(dist.entropy(), expected)
    same = SoftMultiCategoricalDistribution(logits, low=[0, 1], high=[1, 3])
    torch.testing.assert_close(dist.kl(same), torch.zeros(4))
    with pytest.raises(ValueError, match="sum"):
        SoftMultiCategoricalDistribution(logits, low=[0], high=[1])


# -- both backends: the paddle distributions against the torch ones, on the same inputs ---------------------------

def _dist_module(backend):
    return importlib.import_module(f"parl_core.{backend.name}.policy_distribution")


def _tensor(backend, array, grad=False):
    if backend.name == "torch":
        return torch.tensor(array, requires_grad=grad)
    return backend.paddle.to_tensor(array, stop_gradient=not grad)


def _same_inputs():
    rng = np.random.default_rng(0)
    f32 = lambda *shape, scale=1.0: (rng.normal(size=shape) * scale).astype(np.float32)  # noqa: E731
    return dict(logits=f32(5, 4, scale=3.0), other=f32(5, 4), actions=np.array([0, 1, 2, 3, 0]),
                mean=f32(6, 3), logstd=f32(6, 3, scale=0.3), mean2=f32(6, 3), logstd2=f32(6, 3, scale=0.3),
                gauss_actions=f32(6, 3), multi=f32(4, 5))


def _outputs(backend, x):
    """Every deterministic output of the four distributions on the inputs ``x``, as numpy."""
    pd, t, np_ = _dist_module(backend), (lambda a: _tensor(backend, a)), backend.numpy
    cat, cat2 = pd.CategoricalDistribution(t(x["logits"])), pd.CategoricalDistribution(t(x["other"]))
    gauss = pd.DiagGaussianDistribution((t(x["mean"]), t(x["logstd"])))
    gauss2 = pd.DiagGaussianDistribution((t(x["mean2"]), t(x["logstd2"])))
    soft = pd.SoftCategoricalDistribution(t(x["logits"]))
    multi = pd.SoftMultiCategoricalDistribution(t(x["multi"]), low=[0, 1], high=[1, 3])
    multi2 = pd.SoftMultiCategoricalDistribution(t(x["multi"][::-1].copy()), low=[0, 1], high=[1, 3])
    return {"cat.entropy": np_(cat.entropy()), "cat.logp": np_(cat.logp(t(x["actions"]))),
            "cat.logp_eps0": np_(cat.logp(t(x["actions"]), eps=0.0)), "cat.kl": np_(cat.kl(cat2)),
            "gauss.entropy": np_(gauss.entropy()), "gauss.logp": np_(gauss.logp(t(x["gauss_actions"]))),
            "gauss.kl": np_(gauss.kl(gauss2)), "soft.entropy": np_(soft.entropy()),
            "soft.kl": np_(soft.kl(cat2)), "multi.entropy": np_(multi.entropy()), "multi.kl": np_(multi.kl(multi2))}


def test_distributions_agree_across_backends_on_the_same_inputs(backend):
    x = _same_inputs()
    got = _outputs(backend, x)
    reference = _outputs(load_backend("torch"), x)  # the torch module, tested above against torch.distributions
    assert got.keys() == reference.keys()
    for key, value in got.items():
        assert value.dtype == np.float32 and value.shape == reference[key].shape, key
        np.testing.assert_allclose(value, reference[key], rtol=1e-5, atol=1e-6, err_msg=key)
    # hand-computed: uniform logits have entropy log(2); huge logits do not overflow
    pd = _dist_module(backend)
    big = pd.CategoricalDistribution(_tensor(backend, np.array([[0.0, 0.0], [1000.0, 0.0]], np.float32)))
    np.testing.assert_allclose(backend.numpy(big.entropy()), [math.log(2.0), 0.0], atol=1e-6)
    assert backend.numpy(big.sample())[1] == 0


def test_distribution_samples_on_both_backends(backend):
    pd = _dist_module(backend)
    backend.seed(0)
    cat = pd.CategoricalDistribution(_tensor(backend, np.zeros((7, 3), np.float32)))
    action = backend.numpy(cat.sample())
    assert action.shape == (7,) and action.dtype == np.int64 and set(action.tolist()) <= {0, 1, 2}
    n = 20000
    gauss = pd.DiagGaussianDistribution((_tensor(backend, np.zeros((n, 1), np.float32)),
                                         _tensor(backend, np.full((n, 1), math.log(2.0), np.float32))))
    assert abs(float(backend.numpy(gauss.sample()).std()) - 2.0) < 0.05
    logits = _tensor(backend, np.array([[5.0, 0.0, 0.0]] * 2000, np.float32), grad=True)
    sample = pd.SoftCategoricalDistribution(logits).sample()
    s = backend.numpy(sample)
    assert s.shape == (2000, 3)
    np.testing.assert_allclose(s.sum(1), 1.0, rtol=1e-5)
    # the argmax of Gumbel-softmax samples follows softmax(logits): p(0) = e^5 / (e^5 + 2) ~ 0.987
    assert abs(float((s.argmax(1) == 0).mean()) - math.exp(5) / (math.exp(5) + 2)) < 0.01
    sample[:, 0].sum().backward()
    assert np.isfinite(backend.numpy(logits.grad)).all() and np.abs(backend.numpy(logits.grad)).sum() > 0
    multi = pd.SoftMultiCategoricalDistribution(_tensor(backend, np.zeros((4, 5), np.float32)), low=[0, 1],
                                                high=[1, 3]).sample()
    m = backend.numpy(multi)
    np.testing.assert_allclose(m[:, :2].sum(1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(m[:, 2:].sum(1), 4.0, rtol=1e-5)  # 1 + 3 entries shifted by low = 1


def test_distribution_bad_input_on_both_backends(backend):
    pd = _dist_module(backend)
    zeros = lambda *shape: _tensor(backend, np.zeros(shape, np.float32))  # noqa: E731
    with pytest.raises(ValueError, match=r"\[B, num_actions\]"):
        pd.CategoricalDistribution(zeros(4))
    with pytest.raises(ValueError, match="one shape"):
        pd.DiagGaussianDistribution((zeros(6, 3), zeros(6, 1)))
    with pytest.raises(TypeError, match="DiagGaussian"):
        pd.DiagGaussianDistribution((zeros(6, 3), zeros(6, 3))).kl(pd.CategoricalDistribution(zeros(6, 3)))
    with pytest.raises(ValueError, match="sum"):
        pd.SoftMultiCategoricalDistribution(zeros(4, 5), low=[0], high=[1])
