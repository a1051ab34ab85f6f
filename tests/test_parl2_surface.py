"""PARL 2.x user code on the project's torch backend: the incompatibilities found by running PARL 2.2.1's
own benchmark/torch examples, each reproduced with code written here in PARL's style."""

import numpy as np
import pytest
import torch
import torch.nn as nn

import parl
from parl.algorithms import A2C, CQL, DDPG, DQN, PPO, SAC, TD3
from parl.env import ActionMappingWrapper, CompatWrapper

OBS_DIM, ACT_DIM, NUM_ACTIONS = 4, 2, 3


class QModel(parl.Model):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(OBS_DIM, 16), nn.Linear(16, NUM_ACTIONS)

    def forward(self, obs):
        return self.fc2(torch.relu(self.fc1(obs)))


class DQNAgent(parl.Agent):
    """PARL's agent habits: its own ``self.device``, one observation to ``alg.predict``, ``loss`` back."""

    def __init__(self, algorithm):
        super().__init__(algorithm)
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def predict(self, obs):
        obs = torch.tensor(obs, dtype=torch.float, device=self.device)
        pred_q = self.alg.predict(obs)
        return int(pred_q.argmax().item())

    def learn(self, obs, act, reward, next_obs, terminal):
        obs = torch.tensor(obs, dtype=torch.float, device=self.device)
        next_obs = torch.tensor(next_obs, dtype=torch.float, device=self.device)
        act = torch.tensor(np.expand_dims(act, -1), dtype=torch.long, device=self.device)
        reward = torch.tensor(np.expand_dims(reward, -1), dtype=torch.float, device=self.device)
        terminal = torch.tensor(np.expand_dims(terminal, -1), dtype=torch.float, device=self.device)
        return self.alg.learn(obs, act, reward, next_obs, terminal)


def test_user_agent_sets_its_own_device():
    agent = DQNAgent(DQN(QModel(), gamma=0.99, lr=1e-3))
    assert agent.device == torch.device("cpu")
    agent.device = "cpu"
    assert agent.device == torch.device("cpu")


def test_dqn_predicts_one_unbatched_obs_and_learn_returns_a_float():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    agent = DQNAgent(DQN(QModel(), gamma=0.99, lr=1e-3))
    assert agent.predict(np.zeros(OBS_DIM, np.float32)) in range(NUM_ACTIONS)
    losses = []
    for _ in range(3):
        batch = (rng.normal(size=(8, OBS_DIM)), rng.integers(0, NUM_ACTIONS, 8), rng.normal(size=8),
                 rng.normal(size=(8, OBS_DIM)), np.zeros(8))
        losses.append(agent.learn(*batch))
    assert all(isinstance(loss, float) for loss in losses)
    assert np.isfinite(np.mean(losses))  # PARL's examples average the returned losses with numpy


class ActorCritic(parl.Model):
    def __init__(self, gaussian=False, twin=False):
        super().__init__()
        self.gaussian, self.twin = gaussian, twin
        self.actor = nn.Linear(OBS_DIM, 2 * ACT_DIM if gaussian else ACT_DIM)
        self.q1, self.q2 = nn.Linear(OBS_DIM + ACT_DIM, 1), nn.Linear(OBS_DIM + ACT_DIM, 1)

    def policy(self, obs):
        out = self.actor(obs)
        if self.gaussian:
            mean, log_std = out.chunk(2, dim=-1)
            return mean, log_std.clamp(-5, 2)
        return torch.tanh(out)

    def value(self, obs, action):
        x = torch.cat([obs, action], -1)
        return (self.q1(x), self.q2(x)) if self.twin else self.q1(x)

    def Q1(self, obs, action):  # noqa: N802 - PARL's TD3 model method name
        return self.q1(torch.cat([obs, action], -1))

    def get_actor_params(self):
        return list(self.actor.parameters())

    def get_critic_params(self):
        return list(self.q1.parameters()) + list(self.q2.parameters())


class DiscreteAC(parl.Model):
    def __init__(self):
        super().__init__()
        self.pi, self.v = nn.Linear(OBS_DIM, NUM_ACTIONS), nn.Linear(OBS_DIM, 1)

    def policy(self, obs):
        return self.pi(obs)

    def value(self, obs):
        return self.v(obs)

    def policy_and_value(self, obs):
        return self.pi(obs), self.v(obs)


OFF_POLICY = {
    "DDPG": lambda: DDPG(ActorCritic(), gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3),
    "TD3": lambda: TD3(ActorCritic(twin=True), gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3),
    "SAC": lambda: SAC(ActorCritic(gaussian=True, twin=True), gamma=0.99, tau=0.005, alpha=0.2, actor_lr=1e-3,
                       critic_lr=1e-3),
    "CQL": lambda: CQL(ActorCritic(gaussian=True, twin=True), gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3),
}


@pytest.mark.parametrize("name", sorted(OFF_POLICY))
def test_continuous_predict_takes_one_unbatched_obs(name):
    alg = OFF_POLICY[name]()
    one, batch = torch.zeros(OBS_DIM), torch.zeros(5, OBS_DIM)
    assert alg.predict(one).shape == (ACT_DIM,)
    assert alg.predict(batch).shape == (5, ACT_DIM)
    torch.testing.assert_close(alg.predict(one), alg.predict(batch)[0])


def test_discrete_actor_critics_take_one_unbatched_obs():
    obs = torch.zeros(OBS_DIM)
    a2c = A2C(DiscreteAC())
    action, value = a2c.sample(obs)
    assert action.shape == () and value.shape == ()
    assert a2c.predict(obs).shape == ()
    ppo = PPO(DiscreteAC())
    value, action, logp, entropy = ppo.sample(obs)
    assert value.shape == (1,) and action.shape == () and logp.shape == ()
    assert ppo.value(obs).shape == (1,)


class ES(parl.Algorithm):
    """PARL's ES example sets ``self.model`` without calling ``Algorithm.__init__``."""

    def __init__(self, model):
        self.model = model

    def predict(self, obs):
        return self.model(obs)


def test_agent_weights_are_parls_flat_dict_of_the_model():
    agent = parl.Agent(ES(QModel()))
    weights = agent.get_weights()
    assert list(weights) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert all(isinstance(w, np.ndarray) for w in weights.values())
    flat = np.concatenate([w.ravel() for w in weights.values()])  # as ES's get_flat_weights does
    agent.set_weights({name: np.zeros_like(w) for name, w in weights.items()})
    assert not np.any(agent.alg.model.fc1.weight.detach().numpy())
    agent.set_weights(weights)
    np.testing.assert_array_equal(np.concatenate([w.ravel() for w in agent.get_weights().values()]), flat)


def test_algorithm_keeps_every_model_in_get_all_weights():
    alg = DQN(QModel(), gamma=0.99, lr=1e-3)
    assert set(alg.get_weights()) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}  # target not included
    everything = alg.get_all_weights()
    assert set(everything) == {"model", "target_model"}
    with torch.no_grad():
        alg.target_model.fc1.bias.fill_(7.0)
    other = DQN(QModel(), gamma=0.99, lr=1e-3)
    other.set_weights(alg.get_all_weights())
    assert torch.all(other.target_model.fc1.bias == 7.0)


def test_parl_example_env_setup_runs_on_the_old_api(old_gym):
    # as PARL's ddpg / td3 / sac examples build their env
    env = ActionMappingWrapper(CompatWrapper(old_gym.make("Pendulum-v0")))
    env.seed(0)
    obs = env.reset()
    assert obs.shape == (3,) and env._max_episode_steps == 200
    steps, done = 0, False
    while not done:
        obs, reward, done, _ = env.step(np.zeros(1, np.float32))
        steps += 1
    assert steps == env._max_episode_steps
    env.seed(0)
    np.testing.assert_array_equal(env.reset(), CompatWrapper(old_gym.make("Pendulum-v1")).reset(seed=0))


def test_parl_module_paths_resolve_to_the_implementations():
    import parl_core.env as core_env
    import parl_core.utils as core_utils
    from parl.core.torch.policy_distribution import CategoricalDistribution
    from parl.env.compat_wrappers import CompatWrapper as PathCompatWrapper
    from parl.env.continuous_wrappers import ActionMappingWrapper as PathActionMappingWrapper
    from parl.env.mujoco_wrappers import wrap_rms
    from parl.env.vector_env import VectorEnv
    from parl.utils.csv_logger import CSVLogger
    from parl.utils.machine_info import get_port_from_range, is_xpu_available
    from parl.utils.rl_utils import calc_discount_sum_rewards, calc_gae
    from parl.utils.time_stat import TimeStat
    from parl.utils.window_stat import WindowStat
    from parl_core.torch import policy_distribution

    assert (PathCompatWrapper, PathActionMappingWrapper) == (CompatWrapper, ActionMappingWrapper)
    assert (wrap_rms, VectorEnv) == (core_env.wrap_rms, core_env.VectorEnv)
    assert (CSVLogger, TimeStat, WindowStat) == (core_utils.CSVLogger, core_utils.TimeStat, core_utils.WindowStat)
    assert (calc_gae, calc_discount_sum_rewards) == (core_utils.calc_gae, core_utils.calc_discount_sum_rewards)
    assert (get_port_from_range, is_xpu_available) == (core_utils.get_port_from_range, core_utils.is_xpu_available)
    assert CategoricalDistribution is policy_distribution.CategoricalDistribution
    window = WindowStat(2)
    for value in (1.0, 2.0, 6.0):
        window.add(value)
    assert (window.mean, window.min, window.max) == (4.0, 2.0, 6.0)
