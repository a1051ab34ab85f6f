"""Hand-computed cases for the pure loss / target functions."""

import math

import pytest
import torch

from parl_algorithms.torch import functional as Fn


def t(*values):
    return torch.tensor(values, dtype=torch.float32)


def test_td_target():
    # 1 + 0.9 * 1 * 2 = 2.8 ; 0.5 + 0.9 * 0 * 4 = 0.5
    out = Fn.td_target(t(1.0, 0.5), t(2.0, 4.0), t(0.0, 1.0), 0.9)
    torch.testing.assert_close(out, t(2.8, 0.5))


def test_double_dqn_target_uses_online_argmax_and_target_value():
    online = torch.tensor([[1.0, 3.0, 2.0], [5.0, 0.0, 1.0]])
    target = torch.tensor([[10.0, 20.0, 30.0], [7.0, 8.0, 9.0]])
    # row 0: argmax online = 1 -> target 20 -> 1 + 0.5 * 20 = 11 ; row 1: terminal -> 2
    torch.testing.assert_close(Fn.double_dqn_target(t(1.0, 2.0), online, target, t(0.0, 1.0), 0.5), t(11.0, 2.0))


def test_clipped_double_q_and_sac_targets():
    torch.testing.assert_close(Fn.clipped_double_q_target(t(1.0), t(3.0), t(2.0), t(0.0), 0.5), t(2.0))
    # min(3, 2) - 0.2 * (-1.5) = 2.3 ; 1 + 0.5 * 2.3 = 2.15
    torch.testing.assert_close(Fn.sac_target(t(1.0), t(3.0), t(2.0), t(-1.5), t(0.0), 0.5, 0.2), t(2.15))
    torch.testing.assert_close(Fn.sac_target(t(1.0), t(3.0), t(2.0), t(-1.5), t(1.0), 0.5, 0.2), t(1.0))


def test_clipped_surrogate_loss():
    # ratios e^{log 1.5} = 1.5 and e^{log 0.5} = 0.5, clip 0.2
    log_prob = torch.log(t(1.5, 0.5))
    old = t(0.0, 0.0)
    # A = +2: min(1.5*2, 1.2*2) = 2.4 ; A = -1: min(0.5*-1, 0.8*-1) = -0.8 -> loss = -(2.4 - 0.8)/2 = -0.8
    assert float(Fn.clipped_surrogate_loss(log_prob, old, t(2.0, -1.0), 0.2)) == pytest.approx(-0.8, rel=1e-6)


def test_clipped_value_loss():
    value, old, ret = t(2.0, 0.0), t(1.0, 0.0), t(3.0, 1.0)
    # row 0: unclipped (2-3)^2 = 1, clipped 1 + 0.5 = 1.5 -> (1.5-3)^2 = 2.25 -> max 2.25 ; row 1: 1
    assert float(Fn.clipped_value_loss(value, old, ret, 0.5)) == pytest.approx(0.5 * (2.25 + 1.0) / 2)
    assert float(Fn.clipped_value_loss(value, old, ret, None)) == pytest.approx(0.5 * (1.0 + 1.0) / 2)


def test_approx_kl_and_clip_fraction():
    log_prob, old = torch.log(t(1.5, 1.0)), t(0.0, 0.0)
    expected = ((1.5 - 1) - math.log(1.5) + 0.0) / 2
    assert float(Fn.approx_kl(log_prob, old)) == pytest.approx(expected, rel=1e-6)
    assert float(Fn.clip_fraction(log_prob, old, 0.2)) == 0.5


def test_normalize_advantages():
    out = Fn.normalize_advantages(t(1.0, 2.0, 3.0))
    torch.testing.assert_close(out, t(-1.0, 0.0, 1.0), atol=1e-6, rtol=0)  # std (unbiased) = 1


def test_soft_update_in_place():
    target, source = [t(0.0, 10.0)], [t(1.0, 20.0)]
    Fn.soft_update_(target, source, 0.1)
    torch.testing.assert_close(target[0], t(0.1, 11.0))
    with pytest.raises(ValueError, match="tau"):
        Fn.soft_update_(target, source, 1.5)


def test_tanh_gaussian_log_prob():
    # u = 0, mean 0, std 1: log N(0) = -0.5 log(2 pi); tanh'(0) = 1 -> per-dim -0.9189; 2 dims
    out = Fn.tanh_gaussian_log_prob(torch.zeros(1, 2), torch.zeros(1, 2), torch.zeros(1, 2))
    assert float(out) == pytest.approx(-math.log(2 * math.pi), rel=1e-5)
    assert out.shape == (1,)


def _tanh_gaussian_reference(mean, log_std, noise):
    pre_tanh = mean + log_std.exp() * noise
    return torch.tanh(pre_tanh), Fn.tanh_gaussian_log_prob(pre_tanh, mean, log_std)


@pytest.mark.parametrize("state_independent_std", [False, True])
def test_sac_fused_tanh_gaussian_sample_matches_autograd(state_independent_std):
    # torch SAC samples through one autograd node: the same forward values to the bit as the plain formula
    # (so the same actions and log-probs), and the same gradients up to float rounding
    from parl_algorithms.torch.sac import _TanhGaussianSample

    gen = torch.Generator().manual_seed(0)
    shape = (256, 3)
    mean = (2.0 * torch.randn(shape, generator=gen)).requires_grad_()
    log_std = torch.randn(shape[1:] if state_independent_std else shape, generator=gen).clamp(-5, 2).requires_grad_()
    noise, weight = torch.randn(shape, generator=gen), torch.randn(shape, generator=gen)
    grads = []
    for fn in (_tanh_gaussian_reference, lambda m, s, n: _TanhGaussianSample.apply(m, s, n, 1e-6)):
        action, log_prob = fn(mean, log_std.expand(shape), noise)
        grads.append(torch.autograd.grad((action * weight).sum() + 1.3 * log_prob.sum(), (mean, log_std)))
        grads[-1] += (action.detach(), log_prob.detach())
    ref, fused = grads
    assert torch.equal(fused[2], ref[2]) and torch.equal(fused[3], ref[3])  # action, log_prob: bit-identical
    assert fused[3].shape == (256,)
    torch.testing.assert_close(fused[0], ref[0], rtol=1e-4, atol=1e-3)  # d/d mean
    torch.testing.assert_close(fused[1], ref[1], rtol=1e-4, atol=2e-3)  # d/d log_std
    # float64: the analytic backward is the exact gradient (fixed inputs: where tanh saturates, the finite
    # differences of log(1 - tanh^2 + 1e-6) are not the gradient, whatever the backward)
    m64, s64, n64 = (torch.randn(5, 2, dtype=torch.float64, generator=gen) for _ in range(3))
    m64.requires_grad_(), s64.requires_grad_()
    assert torch.autograd.gradcheck(lambda m, s: _TanhGaussianSample.apply(m, s, n64, 1e-6), (m64, s64))
    # no graph and nothing saved under no_grad (the target path)
    with torch.no_grad():
        action, log_prob = _TanhGaussianSample.apply(mean, log_std.expand(shape), noise, 1e-6)
    assert torch.equal(action, ref[2]) and log_prob.grad_fn is None
    # SAC's path without a graph (acting, the target) calls the forward's values directly
    values = _TanhGaussianSample.values(mean.detach(), log_std.detach().expand(shape), noise, 1e-6)
    assert torch.equal(values[0], ref[2]) and torch.equal(values[1], ref[3])


def test_cql_penalty():
    q_data = t(1.0)
    q_sampled = torch.tensor([[0.0, math.log(3.0)]])  # logsumexp = log(1 + 3) = log 4
    assert float(Fn.cql_penalty(q_data, q_sampled)) == pytest.approx(math.log(4.0) - 1.0, rel=1e-6)
    # temperature 2: 2 * log(e^0 + e^{log3 / 2}) - 1
    expected = 2 * math.log(1 + math.sqrt(3.0)) - 1.0
    assert float(Fn.cql_penalty(q_data, q_sampled, temperature=2.0)) == pytest.approx(expected, rel=1e-6)


def test_target_policy_smoothing_bounds():
    torch.manual_seed(0)
    out = Fn.target_policy_smoothing(torch.full((1000, 2), 0.9), policy_noise=1.0, noise_clip=0.5)
    assert float(out.max()) <= 1.0 and float(out.min()) >= 0.4 - 1e-6


@pytest.mark.parametrize("call", [
    lambda: Fn.td_target(t(1.0, 2.0), t(1.0), t(0.0, 0.0), 0.9),
    lambda: Fn.td_target(t(1.0), t(1.0), t(0.0), 1.5),
    lambda: Fn.double_dqn_target(t(1.0), torch.zeros(1, 2), torch.zeros(1, 3), t(0.0), 0.9),
    lambda: Fn.clipped_surrogate_loss(t(0.0), t(0.0), t(1.0), 0.0),
    lambda: Fn.clipped_value_loss(t(0.0, 1.0), t(0.0), t(1.0), 0.2),
    lambda: Fn.cql_penalty(t(1.0, 2.0), torch.zeros(1, 3)),
    lambda: Fn.normalize_advantages(torch.zeros(2, 2)),
])
def test_shape_and_range_errors(call):
    with pytest.raises(ValueError):
        call()


def test_categorical_log_prob_entropy_matches_torch_distributions():
    logits = torch.tensor([[0.0, math.log(3.0)], [1.0, 1.0]])
    action = torch.tensor([1, 0])
    log_prob, entropy = Fn.categorical_log_prob_entropy(logits, action)
    # row 0: probs (1/4, 3/4) -> log 3/4 ; H = -(1/4 log 1/4 + 3/4 log 3/4)
    assert float(log_prob[0]) == pytest.approx(math.log(0.75), rel=1e-6)
    assert float(entropy[0]) == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)), rel=1e-6)
    dist = torch.distributions.Categorical(logits=logits)
    torch.testing.assert_close(log_prob, dist.log_prob(action))
    torch.testing.assert_close(entropy, dist.entropy())


def test_categorical_sample_draws_what_torch_multinomial_draws():
    # same actions and the same generator state afterwards as torch.multinomial(probs, 1) (PPO's trajectories
    # are unchanged by the faster path), for small and large batches / action counts
    for batch, num_actions in ((8, 2), (1, 2), (5, 7), (300, 3)):
        probs = torch.softmax(torch.randn(batch, num_actions, generator=torch.Generator().manual_seed(batch)) * 3, -1)
        for seed in range(20):
            torch.manual_seed(seed)
            expected, expected_next = torch.multinomial(probs, 1).squeeze(1), torch.rand(2)
            torch.manual_seed(seed)
            got, got_next = Fn.categorical_sample(probs), torch.rand(2)
            assert got.dtype == torch.int64 and torch.equal(got, expected) and torch.equal(got_next, expected_next)
    # frequencies follow the probabilities; an explicit generator is used
    probs = torch.tensor([[0.1, 0.6, 0.3]]).expand(20_000, 3)
    counts = torch.bincount(Fn.categorical_sample(probs, torch.Generator().manual_seed(0)), minlength=3)
    torch.testing.assert_close(counts / 20_000.0, probs[0], atol=0.015, rtol=0.0)
    with pytest.raises(ValueError, match="num_actions"):
        Fn.categorical_sample(torch.tensor([0.5, 0.5]))


def test_gaussian_log_prob_entropy_matches_torch_distributions():
    mean, log_std = torch.tensor([[0.0, 1.0]]), torch.tensor([0.0, math.log(2.0)])
    action = torch.tensor([[1.0, 1.0]])
    log_prob, entropy = Fn.gaussian_log_prob_entropy(mean, log_std, action)
    # dim 0: N(0,1) at 1 -> -0.5 - 0.5 log 2pi ; dim 1: N(1,2) at 1 -> -log 2 - 0.5 log 2pi
    expected = -0.5 - math.log(2.0) - math.log(2 * math.pi)
    assert float(log_prob) == pytest.approx(expected, rel=1e-6)
    dist = torch.distributions.Normal(mean, log_std.exp().expand_as(mean))
    torch.testing.assert_close(log_prob, dist.log_prob(action).sum(-1))
    torch.testing.assert_close(entropy, dist.entropy().sum(-1))
    with pytest.raises(ValueError):
        Fn.gaussian_log_prob_entropy(mean, log_std, torch.zeros(1, 3))
