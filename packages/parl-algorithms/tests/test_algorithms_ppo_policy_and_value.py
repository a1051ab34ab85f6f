"""torch PPO with a model that defines ``policy_and_value``: ``sample`` and ``learn`` call it once instead of
``policy`` and ``value``, with the same results as the two calls."""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from algo_models import NUM_ACTIONS, OBS_DIM, ppo_batch  # noqa: E402


def _models():
    from parl_algorithms.torch import nets
    from parl_core.torch import Model

    class Separate(Model):
        """Actor and critic hidden layers in one BatchedMLP body, read through policy and value only."""

        def __init__(self):
            super().__init__()
            actor = nets.orthogonal_init_(nets.MLP([OBS_DIM, 16, 16, NUM_ACTIONS], "tanh"), np.sqrt(2), 0.01)
            critic = nets.orthogonal_init_(nets.MLP([OBS_DIM, 16, 16, 1], "tanh"), np.sqrt(2), 1.0)
            self.body = nets.BatchedMLP.stack([actor, critic], num_layers=2, activate_output=True)
            self.actor_head, self.critic_head = actor.layers[-1], critic.layers[-1]
            self.joint_calls = 0

        def policy(self, obs):
            return self.actor_head(self.body(obs)[0])

        def value(self, obs):
            return self.critic_head(self.body(obs)[1])

    class Joint(Separate):
        def policy_and_value(self, obs):
            self.joint_calls += 1
            actor_features, critic_features = self.body(obs)
            return self.actor_head(actor_features), self.critic_head(critic_features)

    return Separate, Joint


def test_learn_and_sample_use_policy_and_value_with_the_same_results():
    from parl_algorithms.torch import PPO

    Separate, Joint = _models()
    torch.manual_seed(0)
    separate = Separate()
    joint = Joint()
    joint.load_state_dict(separate.state_dict())
    algs = [PPO(copy.deepcopy(m), initial_lr=1e-2, device="cpu") for m in (separate, joint)]
    rng = np.random.default_rng(0)
    for _ in range(5):
        batch = [torch.as_tensor(a) for a in ppo_batch(rng, True, 8)]
        results = [alg.learn(*batch) for alg in algs]
        np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-7)
    for a, b in zip(algs[0].model.parameters(), algs[1].model.parameters(), strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert algs[1].model.joint_calls == 5 and algs[0].model.joint_calls == 0
    obs = torch.as_tensor(rng.normal(size=(4, OBS_DIM)).astype(np.float32))
    outs = []
    for alg in algs:
        torch.manual_seed(1)
        with torch.no_grad():
            outs.append(alg.sample(obs))
    for a, b in zip(*outs, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
    assert algs[1].model.joint_calls == 6
    with torch.no_grad():
        np.testing.assert_allclose(algs[1].value(obs).numpy(), algs[0].value(obs).numpy(), rtol=1e-6)
