"""PARL 2.2.1's PPO contract as its own examples use it (``examples/PPO`` on paddle, ``benchmark/torch/ppo`` on
torch), found by running PARL's paddle PPO example against this package (see packages/parl/README.md):

- a continuous policy returns ``(mean, std)``, the std as ``exp(log_std)`` of a ``[1, act_dim]`` parameter
  (paddle's created with ``paddle.static.create_parameter``, as PARL's ``MujocoModel`` does);
- the paddle PPO's ``sample`` draws ``dist.sample([1])``: action and log-prob carry a leading axis of 1, which
  PARL's paddle agent removes with ``[0]`` (one action per env).

The models below are written in PARL's style for these tests, not copied from PARL.
"""

import importlib
import math

import numpy as np

B, OBS_DIM, ACT_DIM = 5, 3, 2


def _parl_style_model(M):
    """Tanh MLP actor-critic whose ``policy`` returns (mean, std) with std = exp(fc_pi_std), fc_pi_std [1, act_dim]
    initialised to 0, created the way PARL's examples create it on each framework."""
    nn = M.ops.nn

    class MujocoStyleModel(M.ops.Model):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(OBS_DIM, 16)
            self.fc_value = nn.Linear(16, 1)
            self.fc_policy = nn.Linear(16, ACT_DIM)
            if M.ops.name == "paddle":
                import paddle

                self.fc_pi_std = paddle.static.create_parameter(
                    [1, ACT_DIM], dtype="float32", default_initializer=nn.initializer.Constant(value=0))
            else:
                import torch

                self.fc_pi_std = torch.nn.Parameter(torch.zeros(1, ACT_DIM))

        def value(self, obs):
            return self.fc_value(M.ops.tanh(self.fc1(obs)))

        def policy(self, obs):
            mean = self.fc_policy(M.ops.tanh(self.fc1(obs)))
            return mean, self.fc_pi_std.exp()

    return MujocoStyleModel()


def _tensor(M, array):
    return importlib.import_module(f"parl_algorithms.{M.ops.name}.ops").tensor(array)


def _obs(seed=0):
    return np.random.default_rng(seed).normal(size=(B, OBS_DIM)).astype(np.float32)


def test_continuous_policy_output_is_the_std_not_its_log(M):
    M.ops.seed(0)
    model = _parl_style_model(M)
    alg = M.algs.PPO(model, continuous_action=True)
    obs = _obs()
    _, action, logp, entropy = alg.sample(obs)
    mean = M.ops.numpy(model.policy(_tensor(M, obs))[0])
    a = M.ops.numpy(action).reshape(B, ACT_DIM)
    # std = exp(0) = 1: log N(a; mean, 1) summed over the action dimensions (PARL: Normal(mean, std))
    expected = (-0.5 * (a - mean) ** 2 - 0.5 * math.log(2 * math.pi)).sum(-1)
    np.testing.assert_allclose(M.ops.numpy(logp).reshape(B), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(M.ops.numpy(entropy).reshape(-1), ACT_DIM * 0.5 * math.log(2 * math.pi * math.e),
                               rtol=1e-5)
    assert 0.3 < float(np.std(a - mean)) < 3.0  # drawn with std 1 (not exp(1) = 2.7 nor exp(exp(0)))


def test_paddle_sample_has_parls_leading_axis_that_its_agent_indexes_away(M):
    M.ops.seed(0)
    alg = M.algs.PPO(_parl_style_model(M), continuous_action=True)
    value, action, logp, _ = alg.sample(_obs())
    if M.ops.name == "paddle":
        # PARL's paddle PPOAgent.sample: action.detach().numpy()[0], action_log_probs.detach().numpy()[0]
        assert action.detach().numpy()[0].shape == (B, ACT_DIM) and logp.detach().numpy()[0].shape == (B,)
    else:
        # PARL's torch PPO samples dist.sample(): no leading axis
        assert tuple(action.shape) == (B, ACT_DIM) and tuple(logp.shape) == (B,)
    assert tuple(value.shape) == (B, 1)


def test_std_parameter_created_parls_way_is_trained(M):
    M.ops.seed(0)
    model = _parl_style_model(M)
    alg = M.algs.PPO(model, continuous_action=True, initial_lr=1e-2)
    obs = _obs()
    _, action, logp, _ = alg.sample(obs)
    rng = np.random.default_rng(1)
    batch = [obs, M.ops.numpy(action).reshape(B, ACT_DIM), rng.normal(size=B).astype(np.float32),
             rng.normal(size=B).astype(np.float32), M.ops.numpy(logp).reshape(B).copy(),
             rng.normal(size=B).astype(np.float32)]
    assert any(p is model.fc_pi_std for p in model.parameters())
    before = M.ops.numpy(model.fc_pi_std).copy()
    alg.learn(*(_tensor(M, x) for x in batch))
    assert not np.array_equal(M.ops.numpy(model.fc_pi_std), before)
