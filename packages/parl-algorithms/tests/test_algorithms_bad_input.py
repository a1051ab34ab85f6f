"""Bad models, hyperparameters, shapes and action-space mismatches raise errors that name the fix (both backends)."""

import numpy as np
import pytest
from algo_models import ACT_DIM, NUM_ACTIONS, OBS_DIM, models


def z(*shape):
    return np.zeros(shape, dtype=np.float32)


def _empty(M):
    class Empty(M.ops.Model):
        def __init__(self):
            super().__init__()
            self.fc = M.ops.nn.Linear(OBS_DIM, 2)

    return Empty


def _no_actor_params(M):
    class NoActorParams(M.SACModel):
        get_actor_params = None

    return NoActorParams()


@pytest.mark.parametrize("build, missing", [
    (lambda M: M.algs.DQN(_empty(M)(), gamma=0.9, lr=1e-3), "forward"),
    (lambda M: M.algs.DDQN(_empty(M)(), gamma=0.9, lr=1e-3), "forward"),
    (lambda M: M.algs.PPO(_empty(M)()), "value"),
    (lambda M: M.algs.A2C(_empty(M)()), "value"),
    (lambda M: M.algs.DDPG(_empty(M)(), gamma=0.9, tau=0.01, actor_lr=1e-3, critic_lr=1e-3), "value"),
    (lambda M: M.algs.TD3(M.SACModel.__new__(_empty(M)), 0.9, 0.01, 1e-3, 1e-3), "value"),
    (lambda M: M.algs.SAC(_no_actor_params(M), 0.9, 0.01, 0.2, 1e-3, 1e-3), "get_actor_params"),
    (lambda M: M.algs.CQL(_no_actor_params(M), 0.9, 0.01, 1e-3, 1e-3), "get_actor_params"),
])
def test_missing_model_method_is_named(build, missing, M):
    with pytest.raises(ValueError, match=missing):
        build(M)


def test_td3_needs_q1(M):
    class NoQ1(M.TwinCriticModel):
        Q1 = None

    with pytest.raises(ValueError, match="Q1"):
        M.algs.TD3(NoQ1(), gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3)


def test_not_a_model(M):
    with pytest.raises(TypeError, match="parl.Model"):
        M.algs.DQN(M.ops.nn.Linear(2, 2), gamma=0.9, lr=1e-3)


def test_a_model_of_the_other_framework_names_the_fix(M):
    other = models("paddle" if M.ops.name == "torch" else "torch")
    with pytest.raises(TypeError, match=f"got the {other.ops.name} model QModel.*parl_algorithms.{other.ops.name}"):
        M.algs.DQN(other.QModel(), gamma=0.9, lr=1e-3)


@pytest.mark.parametrize("build, name", [
    (lambda M: M.algs.DQN(M.QModel(), lr=1e-3), "gamma"),
    (lambda M: M.algs.DQN(M.QModel(), gamma=1.5, lr=1e-3), "gamma"),
    (lambda M: M.algs.DQN(M.QModel(), gamma=0.9), "lr"),
    (lambda M: M.algs.DQN(M.QModel(), gamma=0.9, lr=1e-3, loss_type="l1"), "loss_type"),
    (lambda M: M.algs.SAC(M.SACModel(), gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3), "alpha"),
    (lambda M: M.algs.DDPG(M.TwinCriticModel(), gamma=0.99, actor_lr=1e-3, critic_lr=1e-3), "tau"),
    (lambda M: M.algs.TD3(M.TwinCriticModel(), 0.99, 0.005, 1e-3, 1e-3, policy_freq=0), "policy_freq"),
    (lambda M: M.algs.PPO(M.DiscreteACModel(), clip_param=-0.1), "clip_param"),
    (lambda M: M.algs.CQL(M.SACModel(), 0.99, 0.005, 1e-3, 1e-3, min_q_version=1), "min_q_version"),
])
def test_bad_hyperparameters(build, name, M):
    with pytest.raises(ValueError, match=name):
        build(M)


def test_discrete_algorithm_given_continuous_actions(M):
    obs = z(4, OBS_DIM)
    dqn = M.algs.DQN(M.QModel(), gamma=0.9, lr=1e-3)
    with pytest.raises(ValueError, match="continuous"):
        dqn.learn(obs, np.full((4, 1), 0.3, dtype=np.float32), z(4), obs, z(4))
    with pytest.raises(ValueError, match="continuous"):
        dqn.learn(obs, np.zeros((4, ACT_DIM), dtype=np.int64), z(4), obs, z(4))
    ppo = M.algs.PPO(M.DiscreteACModel())
    with pytest.raises(ValueError, match="continuous"):
        ppo.learn(obs, np.ones((4, ACT_DIM), dtype=np.float32) * 0.5, *[z(4)] * 4)
    with pytest.raises(ValueError, match="continuous_action=True"):
        M.algs.PPO(M.PPOGaussianModel()).sample(obs)


def test_continuous_algorithm_given_discrete_actions(M):
    obs = z(4, OBS_DIM)
    sac = M.algs.SAC(M.SACModel(), gamma=0.99, tau=0.005, alpha=0.2, actor_lr=1e-3, critic_lr=1e-3)
    with pytest.raises(ValueError, match="Discrete"):
        sac.learn(obs, np.zeros(4, dtype=np.int64), z(4), obs, z(4))
    ppo = M.algs.PPO(M.PPOGaussianModel(), continuous_action=True)
    with pytest.raises(ValueError, match="Discrete"):
        ppo.learn(obs, np.zeros(4, dtype=np.int64), *[z(4)] * 4)
    with pytest.raises(ValueError, match="continuous_action=False"):
        M.algs.PPO(M.DiscreteACModel(), continuous_action=True).sample(obs)


def test_wrong_shapes(M):
    dqn = M.algs.DQN(M.QModel(), gamma=0.9, lr=1e-3)
    obs = z(4, OBS_DIM)
    assert tuple(dqn.predict(z(OBS_DIM)).shape) == (NUM_ACTIONS,)  # one unbatched obs, as PARL accepts
    with pytest.raises(ValueError, match="reward"):
        dqn.learn(obs, np.zeros(4, dtype=np.int64), z(3), obs, z(4))
    with pytest.raises(ValueError, match="next_obs"):
        dqn.learn(obs, np.zeros(4, dtype=np.int64), z(4), z(4, 5), z(4))
    with pytest.raises(ValueError, match=rf"\[0, {NUM_ACTIONS}\)"):
        dqn.learn(obs, np.full((4,), NUM_ACTIONS), z(4), obs, z(4))
    with pytest.raises(ValueError, match=r"DQN.predict: the model rejected inputs of shapes \[\(4, 5\)\]"):
        dqn.predict(z(4, OBS_DIM + 1))
    sac = M.algs.SAC(M.SACModel(), gamma=0.99, tau=0.005, alpha=0.2, actor_lr=1e-3, critic_lr=1e-3)
    with pytest.raises(ValueError, match="obs_shape"):
        sac.learn(z(4, OBS_DIM + 2), z(4, ACT_DIM), z(4), z(4, OBS_DIM + 2),
                  z(4))
    with pytest.raises(ValueError, match="obs_shape"):  # wrong action size reaches the critic
        sac.learn(obs, z(4, ACT_DIM + 1), z(4), obs, z(4))
    with pytest.raises(TypeError, match="numeric"):
        dqn.predict(np.array([["a"] * OBS_DIM]))


@pytest.mark.parametrize("build, method", [
    (lambda M: M.algs.PolicyGradient(M.PGModel(), lr=1e-3), "predict"),
    (lambda M: M.algs.DDPG(M.DeterministicACModel(), 0.9, 0.01, 1e-3, 1e-3), "predict"),
    (lambda M: M.algs.DDPG(M.DeterministicACModel(), 0.9, 0.01, 1e-3, 1e-3), "sample"),
    (lambda M: M.algs.TD3(M.TwinCriticModel(), 0.9, 0.01, 1e-3, 1e-3), "predict"),
    (lambda M: M.algs.SAC(M.SACModel(), 0.9, 0.01, 0.2, 1e-3, 1e-3), "sample"),
])
def test_acting_methods_name_the_rejected_obs_shape(build, method, M):
    """predict / sample of one batch of obs of the wrong width: the error names the algorithm, the method
    (``sample`` of DDPG / TD3 is ``predict``) and the input shape, as every other method's does."""
    alg = build(M)
    name = type(alg).__name__
    with pytest.raises(ValueError, match=rf"{name}\.(predict|sample): the model rejected inputs of shapes "
                                         rf"\[\(4, {OBS_DIM + 1}\)\]"):
        getattr(alg, method)(z(4, OBS_DIM + 1))
    with pytest.raises(TypeError, match="numeric"):
        getattr(alg, method)(np.array([["a"] * OBS_DIM]))
    out = getattr(alg, method)(z(4, OBS_DIM))
    out = out[0] if isinstance(out, tuple) else out
    assert tuple(out.shape)[0] == 4


def test_ppo_continuous_actions_of_another_act_dim(M):
    # one check on both backends (paddle's PPO once took any width and failed inside the Gaussian log-prob)
    alg = M.algs.PPO(M.PPOGaussianModel(), continuous_action=True)
    with pytest.raises(ValueError, match=rf"action must be float32 \[B=4, act_dim={ACT_DIM}\]"):
        alg.learn(z(4, OBS_DIM), z(4, ACT_DIM + 1), z(4), z(4), z(4), z(4))


@pytest.mark.parametrize("build", [
    lambda M: M.algs.DQN(M.QModel(), gamma=0.9, lr=1e-3),
    lambda M: M.algs.A2C(M.DiscreteACModel(), vf_loss_coeff=0.5),
    lambda M: M.algs.PPO(M.DiscreteACModel()),
    lambda M: M.algs.DDPG(M.DeterministicACModel(), gamma=0.9, tau=0.1, actor_lr=1e-3, critic_lr=1e-3),
])
def test_one_unbatched_observation_on_both_backends(build, M):
    # PARL code passes one observation [obs_dim]: the algorithms written once take it on both backends
    alg = build(M)
    assert tuple(alg.predict(z(OBS_DIM)).shape) == tuple(alg.predict(z(1, OBS_DIM)).shape)[1:]
    alg.sample(z(OBS_DIM))
