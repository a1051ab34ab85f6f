"""PARL's policy distributions (parl.core.torch.policy_distribution) against torch.distributions and
hand-computed cases."""

import math

import pytest
import torch
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
