"""MPE2Env's direct step path (one joint step on mpe2's raw env) against PettingZoo's ``parallel_env``: the same
observations, rewards, state, ends, infos and random stream over whole episodes, for every mpe2 scenario of the
layer, Discrete and Box actions, several seeds; MAenv and the vector env on top; the fallbacks."""

import importlib

import numpy as np
import pytest

from parl_core.env import MAenv, MultiAgentVectorEnv, make_multiagent_env
from parl_core.env._multiagent_families import MPE2_MODULES, _direct_step_unsupported
from parl_core.env.multiagent_env import SCENARIO_KWARGS

# (module, kwargs): every scenario of MPE2_MODULES, with local_ratio 0 and 0.5 where the scenario has it, PARL's
# settings, partial observability, curriculum, terminate_on_success, benchmark data and a short max_cycles
CASES = [
    ("simple_v3", {}),
    ("simple_spread_v3", {"N": 3, "local_ratio": 0.0}),
    ("simple_spread_v3", {"N": 3, "local_ratio": 0.5}),
    ("simple_spread_v3", {"N": 4, "local_ratio": 0.5, "num_agent_neighbors": 2, "num_landmark_neighbors": 2}),
    ("simple_spread_v3", {"N": 3, "local_ratio": 0.0, "curriculum": True, "terminate_on_success": True}),
    ("simple_spread_v3", {"N": 2, "local_ratio": 0.5, "benchmark_data": True, "max_cycles": 7}),
    ("simple_speaker_listener_v4", {}),
    ("simple_adversary_v3", {"N": 2}),
    ("simple_adversary_v3", {"N": 3, "num_agent_neighbors": 1}),
    ("simple_tag_v3", {}),
    ("simple_tag_v3", {"num_good": 2, "num_adversaries": 2, "num_obstacles": 1, "terminate_on_success": True}),
    ("simple_push_v3", {}),
    ("simple_crypto_v3", {}),
    ("simple_reference_v3", {"local_ratio": 0.0}),
    ("simple_reference_v3", {"local_ratio": 0.5}),
    ("simple_world_comm_v3", {}),
    ("simple_formation_v1", {"terminate_on_success": True}),
    ("simple_line_v1", {}),
    ("collect_treasure_v1", {}),
]
SEEDS = [0, 1, 7]


def test_the_cases_cover_every_mpe2_module_of_the_layer():
    assert {module for module, _ in CASES} == set(MPE2_MODULES.values())


def random_joint_action(env, rng):
    """Discrete: int [n_agents] below each agent's n; Box: float32 [n_agents, act_dim] in [0, 1] (padding 0)."""
    if env.discrete:
        return np.array([rng.integers(0, n) for n in env.act_dims])
    return rng.uniform(env.action_low, env.action_high).astype(np.float32)


def per_agent(env, actions):
    """The joint action as the parallel API takes it: {agent: int} or {agent: float32 [act_dims[i]]}."""
    if env.discrete:
        return {a: int(x) for a, x in zip(env.agents, actions, strict=True)}
    return {a: actions[i, :d].copy() for i, (a, d) in enumerate(zip(env.agents, env.act_dims, strict=True))}


def assert_obs_equal(env, obs, ref_obs):
    for i, (name, d) in enumerate(zip(env.agents, env.obs_dims, strict=True)):
        np.testing.assert_array_equal(obs[i, :d], ref_obs[name])
        np.testing.assert_array_equal(obs[i, d:], 0.0)


def assert_same_episodes(env, ref, seed, n_episodes=2, teleport=None):
    """Plays ``n_episodes`` whole episodes (the first seeded, the next continuing the stream) on ``env`` and on
    the parallel env ``ref`` with the same random actions; everything either gives back must be identical.
    ``teleport(world)``, called on both worlds before step 3, sets up a terminal state."""
    core, ref_core = env._env.unwrapped, ref.unwrapped
    rng = np.random.default_rng(seed)
    steps = 0
    for episode in range(n_episodes):
        episode_seed = seed if episode == 0 else None
        obs, info = env.reset(seed=episode_seed)
        ref_obs, ref_infos = ref.reset(seed=episode_seed)
        assert_obs_equal(env, obs, ref_obs)
        np.testing.assert_array_equal(info["state"], ref.state())
        for t in range(1, env.episode_limit + 1):
            if teleport is not None and t == 3:
                teleport(core.world)
                teleport(ref_core.world)
            actions = random_joint_action(env, rng)
            obs, reward, terminated, truncated, info = env.step(actions)
            ref_obs, ref_reward, ref_term, ref_trunc, ref_infos = ref.step(per_agent(env, actions))
            steps += 1
            assert_obs_equal(env, obs, ref_obs)
            np.testing.assert_array_equal(reward, np.array([ref_reward[a] for a in env.agents], np.float32))
            np.testing.assert_array_equal(info["state"], ref.state())
            terminated_ref = any(ref_term.values())
            assert (terminated, truncated) == (terminated_ref, not terminated_ref and any(ref_trunc.values()))
            assert env.agent_infos == ref_infos
            # the AEC bookkeeping the direct path keeps: float64 rewards, step count, agents left at the end
            assert core._cumulative_rewards == ref_core._cumulative_rewards
            assert core.rewards == ref_core.rewards and core.steps == ref_core.steps
            assert env._env.agents == ref.agents and core.agents == ref_core.agents
            if terminated or truncated:
                break
        assert env._env.agents == [] == ref.agents  # the parallel API empties agents at the end
    assert core.np_random.bit_generator.state == ref_core.np_random.bit_generator.state
    return steps


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize(("module", "kwargs"), CASES, ids=[f"{m}-{kw}" for m, kw in CASES])
def test_direct_step_equals_the_pettingzoo_parallel_env(module, kwargs, continuous):
    parallel_env = importlib.import_module(f"mpe2.{module}").parallel_env
    for seed in SEEDS:
        env = make_multiagent_env(f"mpe2:{module}", continuous_actions=continuous, **kwargs)
        assert env.direct_step and env.fallback_reason is None
        ref = parallel_env(continuous_actions=continuous, **kwargs)
        steps = assert_same_episodes(env, ref, seed)
        assert steps == 2 * env.episode_limit or kwargs.get("terminate_on_success")


def spread_cover_landmarks(world):
    for agent, landmark in zip(world.agents, world.landmarks, strict=True):
        agent.state.p_pos, agent.state.p_vel = landmark.state.p_pos.copy(), np.zeros(2)


def tag_catch_every_prey(world):
    adversaries = [a for a in world.agents if a.adversary]
    prey = [a for a in world.agents if not a.adversary]
    for i, agent in enumerate(prey):
        agent.state.p_pos, agent.state.p_vel = np.array([0.6 * i - 0.3, 0.0]), np.zeros(2)
        adversaries[i].state.p_pos, adversaries[i].state.p_vel = np.array([0.6 * i - 0.3, 0.01]), np.zeros(2)


@pytest.mark.parametrize(
    ("module", "kwargs", "teleport"),
    [
        ("simple_spread_v3", {"N": 3, "local_ratio": 0.0}, spread_cover_landmarks),
        ("simple_tag_v3", {"num_good": 2, "num_adversaries": 2, "num_obstacles": 0}, tag_catch_every_prey),
    ],
)
@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
def test_direct_step_terminates_as_the_parallel_env(module, kwargs, teleport, continuous):
    parallel_env = importlib.import_module(f"mpe2.{module}").parallel_env
    for seed in SEEDS:
        env = make_multiagent_env(f"mpe2:{module}", continuous_actions=continuous, terminate_on_success=True, **kwargs)
        ref = parallel_env(continuous_actions=continuous, terminate_on_success=True, **kwargs)
        # each episode ends by termination at its 3rd step (teleported into a terminal state before it), not at 25
        assert assert_same_episodes(env, ref, seed, n_episodes=2, teleport=teleport) == 2 * 3
        env.reset(seed=seed)
        teleport(env._env.unwrapped.world)
        obs, _, terminated, truncated, _ = env.step(random_joint_action(env, np.random.default_rng(seed)))
        assert (terminated, truncated) == (True, False)


def test_a_time_limit_wins_over_a_terminal_state_on_the_same_step():
    env = make_multiagent_env("mpe2:simple_spread_v3", N=3, max_cycles=3, terminate_on_success=True)
    ref = importlib.import_module("mpe2.simple_spread_v3").parallel_env(N=3, max_cycles=3, terminate_on_success=True)
    # teleported before step 3 = max_cycles: mpe2 checks the time limit first, so the episode is truncated
    assert assert_same_episodes(env, ref, 0, n_episodes=1, teleport=spread_cover_landmarks) == 3
    env.reset(seed=0)
    env.step(np.zeros(3, np.int64))
    env.step(np.zeros(3, np.int64))
    spread_cover_landmarks(env._env.unwrapped.world)
    assert env.step(np.zeros(3, np.int64))[2:4] == (False, True)


def forced_generic(env):
    """The same env with the direct path switched off (the pre-direct-path behaviour)."""
    env._structure_unsupported = "switched off by the test"
    return env


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize("scenario", sorted(SCENARIO_KWARGS))
def test_maenv_on_the_direct_path_equals_maenv_on_the_parallel_env(scenario, continuous):
    direct = MAenv(scenario, continuous_actions=continuous)
    generic = MAenv(scenario, continuous_actions=continuous)
    forced_generic(generic._ma)
    assert direct._ma.direct_step and not generic._ma.direct_step
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        direct.seed(seed)
        generic.seed(seed)
        for _ in range(2):  # two whole episodes: 25 steps each, then done
            for a, b in zip(direct.reset(), generic.reset(), strict=True):
                np.testing.assert_array_equal(a, b)
            for t in range(1, 26):
                if continuous:  # PARL's actions in [-1, 1]
                    actions = [rng.uniform(-1, 1, d).astype(np.float32) for d in direct.act_shape_n]
                else:  # PARL's action vectors (its argmax is taken)
                    actions = [rng.dirichlet(np.ones(d)) for d in direct.act_shape_n]
                obs, reward, done, info = direct.step(actions)
                ref_obs, ref_reward, ref_done, ref_info = generic.step(actions)
                for a, b in zip(obs, ref_obs, strict=True):
                    np.testing.assert_array_equal(a, b)
                assert reward == ref_reward and done == ref_done == [t == 25] * direct.n and info == ref_info
            assert direct.env.agents == generic.env.agents == []


def test_vector_env_on_the_direct_path_equals_it_on_the_parallel_env():
    def spread():
        return make_multiagent_env("mpe2:simple_spread_v3", N=3, local_ratio=0.5, max_cycles=10)

    direct = MultiAgentVectorEnv([spread, spread])
    generic = MultiAgentVectorEnv([lambda: forced_generic(spread()), lambda: forced_generic(spread())])
    obs, info = direct.reset(seed=3)
    ref_obs, ref_info = generic.reset(seed=3)
    np.testing.assert_array_equal(obs, ref_obs)
    rng = np.random.default_rng(3)
    ended = 0
    for _ in range(35):  # three auto-resets per env
        actions = rng.integers(0, 5, (2, 3))
        out, ref = direct.step(actions), generic.step(actions)
        for a, b in zip(out[:4], ref[:4], strict=True):
            np.testing.assert_array_equal(a, b)
        assert out[4].keys() == ref[4].keys()
        for key in out[4]:
            np.testing.assert_array_equal(out[4][key], ref[4][key])
        ended += int(out[3].sum())
    assert ended == 2 * 3


def test_the_generic_path_is_taken_for_human_rendering_and_for_envs_the_direct_path_does_not_know():
    env = make_multiagent_env("mpe2:simple_spread_v3")
    assert env.direct_step and env.fallback_reason is None
    env._env.unwrapped.render_mode = "human"  # as MAenv.render("human") sets it on an env made without one
    assert not env.direct_step
    assert env.fallback_reason.startswith("render_mode='human': mpe2 draws a frame after every agent's turn")

    from mpe2 import simple_spread_v3
    from pettingzoo.utils import wrappers
    from pettingzoo.utils.conversions import aec_to_parallel_wrapper

    class OwnObserve(simple_spread_v3.raw_env):
        def observe(self, agent):
            return super().observe(agent) * 2

    own = aec_to_parallel_wrapper(wrappers.OrderEnforcingWrapper(OwnObserve()))
    assert _direct_step_unsupported(own) == "OwnObserve overrides SimpleEnv.observe"
    class Logged(wrappers.BaseWrapper):  # a wrapper whose step may do anything
        pass

    logged = aec_to_parallel_wrapper(Logged(simple_spread_v3.raw_env()))
    assert _direct_step_unsupported(logged) == "the AEC env has a Logged wrapper"
    assert _direct_step_unsupported(simple_spread_v3.env()) == (
        "the parallel env is a OrderEnforcingWrapper, not PettingZoo's aec_to_parallel_wrapper"
    )


def test_the_generic_path_still_equals_the_parallel_env():
    for continuous in (False, True):
        env = forced_generic(make_multiagent_env("mpe2:simple_reference_v3", continuous_actions=continuous))
        ref = importlib.import_module("mpe2.simple_reference_v3").parallel_env(continuous_actions=continuous)
        assert assert_same_episodes(env, ref, 5) == 2 * 25
