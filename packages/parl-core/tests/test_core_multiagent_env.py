"""parl.env's multi-agent layer: make_multiagent_env / MultiAgentEnv on mpe2, LBF and RWARE, the serial
MultiAgentVectorEnv, and PARL's MAenv (parl.env.multiagent_env) on mpe2."""

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from parl_core.env import MAenv, MultiAgentEnv, MultiAgentVectorEnv, make_multiagent_env

SPREAD = "mpe2:simple_spread_v3"
LBF = "Foraging-8x8-2p-2f-coop-v3"
RWARE = "rware-tiny-2ag-v2"

# (id, kwargs) -> n_agents, obs_dims, state_dim, n_actions, episode_limit
FAMILIES = [
    (SPREAD, {"N": 3, "local_ratio": 0.0}, 3, [18, 18, 18], 54, 5, 25),
    ("mpe2:simple_speaker_listener_v4", {}, 2, [3, 11], 14, 5, 25),
    ("mpe2:simple_adversary_v3", {"N": 2}, 3, [8, 10, 10], 28, 5, 25),
    ("mpe2:simple_tag_v3", {}, 4, [16, 16, 16, 14], 62, 5, 25),
    ("mpe2:simple_reference_v3", {}, 2, [21, 21], 42, 50, 25),
    (LBF, {}, 2, [12, 12], 24, 6, 50),
    ("lbforaging:Foraging-15x15-4p-3f-v3", {}, 4, [21] * 4, 84, 6, 50),
    (RWARE, {}, 2, [71, 71], 142, 5, 500),
    ("rware:rware-small-4ag-v2", {}, 4, [71] * 4, 284, 5, 500),
]


def random_actions(env, info, rng):
    """A uniformly random available action per agent (int [n_agents]) or Box action [n_agents, act_dim]."""
    if env.discrete:
        return np.array([rng.choice(np.flatnonzero(mask)) for mask in info["avail_actions"]])
    return rng.uniform(env.action_low, env.action_high).astype(np.float32)


@pytest.mark.parametrize(("env_id", "kwargs", "n", "obs_dims", "state_dim", "n_actions", "limit"), FAMILIES)
def test_shapes_dtypes_and_the_episode_end_of_every_family(env_id, kwargs, n, obs_dims, state_dim, n_actions, limit):
    env = make_multiagent_env(env_id, **kwargs)
    assert isinstance(env, MultiAgentEnv)
    assert (env.n_agents, env.obs_dims, env.obs_dim, env.state_dim) == (n, obs_dims, max(obs_dims), state_dim)
    assert (env.discrete, env.n_actions, env.act_dim, env.episode_limit) == (True, n_actions, n_actions, limit)
    assert len(env.agents) == len(env.observation_spaces) == len(env.action_spaces) == n
    assert env.env_version.split()[0] in {"mpe2", "lbforaging", "rware"} and env.reward_unit
    obs, info = env.reset(seed=0)
    assert obs.shape == (n, max(obs_dims)) and obs.dtype == np.float32
    assert info["state"].shape == (state_dim,) and info["state"].dtype == np.float32
    assert info["avail_actions"].shape == (n, n_actions) and info["avail_actions"].dtype == bool
    rng = np.random.default_rng(0)
    for t in range(1, limit + 1):
        obs, reward, terminated, truncated, info = env.step(random_actions(env, info, rng))
        assert obs.shape == (n, max(obs_dims)) and obs.dtype == np.float32
        assert reward.shape == (n,) and reward.dtype == np.float32
        assert type(terminated) is bool and type(truncated) is bool and not (terminated and truncated)
        assert info["state"].shape == (state_dim,) and info["avail_actions"].shape == (n, n_actions)
        if terminated:
            break
        assert truncated == (t == limit)  # a time limit is a truncation, at exactly episode_limit steps
    with pytest.raises(RuntimeError, match=r"call reset\(\)"):
        env.step(random_actions(env, info, rng))
    env.close()


# ---------------------------------------------------------------------------------------------- mpe2
def test_spread_state_is_mpe2_state_and_the_concatenated_observations():
    env = make_multiagent_env(SPREAD, N=3, local_ratio=0.0)
    obs, info = env.reset(seed=1)
    np.testing.assert_array_equal(info["state"], env._env.state())
    np.testing.assert_array_equal(info["state"], obs.reshape(-1))
    for _ in range(3):
        obs, _, _, _, info = env.step(np.array([1, 2, 3]))
    np.testing.assert_array_equal(info["state"], env._env.state())
    np.testing.assert_array_equal(env.state(), obs.reshape(-1))
    assert env.agents == ["agent_0", "agent_1", "agent_2"]


def test_mpe2_terminates_where_the_scenario_has_a_terminal_state():
    env = make_multiagent_env(SPREAD, N=3, local_ratio=0.0, terminate_on_success=True)
    env.reset(seed=0)
    _, _, terminated, truncated, _ = env.step(np.zeros(3, np.int64))
    assert (terminated, truncated) == (False, False)
    world = env._env.unwrapped.world
    for agent, landmark in zip(world.agents, world.landmarks, strict=True):  # every landmark covered
        agent.state.p_pos, agent.state.p_vel = landmark.state.p_pos.copy(), np.zeros(2)
    _, _, terminated, truncated, _ = env.step(np.zeros(3, np.int64))
    assert (terminated, truncated) == (True, False)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        env.step(np.zeros(3, np.int64))


def test_heterogeneous_agents_are_zero_padded_and_their_missing_actions_masked():
    env = make_multiagent_env("mpe2:simple_speaker_listener_v4")
    assert env.agents == ["speaker_0", "listener_0"] and env.act_dims == [3, 5]
    np.testing.assert_array_equal(env.action_high, [2, 4])  # np.clip(actions, env.action_low, env.action_high)
    obs, info = env.reset(seed=0)
    raw = [env._env.unwrapped.observe(a) for a in env.agents]
    np.testing.assert_array_equal(obs[0, :3], raw[0])
    np.testing.assert_array_equal(obs[0, 3:], np.zeros(8, np.float32))  # speaker: 3 features, padded to 11
    np.testing.assert_array_equal(obs[1], raw[1])
    np.testing.assert_array_equal(info["state"], np.concatenate(raw))  # the state holds no padding: 3 + 11
    np.testing.assert_array_equal(info["avail_actions"], [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    with pytest.raises(ValueError, match=r"agent 0 \(speaker_0\) has 3 actions \(0..2\), got action 3"):
        env.step(np.array([3, 0]))
    env.step(np.array([2, 4]))  # the largest real actions pass

    adversary = make_multiagent_env("mpe2:simple_adversary_v3", N=2)
    obs, _ = adversary.reset(seed=0)
    assert adversary.obs_dims == [8, 10, 10]
    np.testing.assert_array_equal(obs[0, 8:], [0.0, 0.0])


def collide_agents_0_and_1(env):
    """Puts agent_1 0.05 from agent_0 (collision distance 0.3) at rest; agent_2 far from both."""
    world = env._env.unwrapped.world
    world.agents[0].state.p_pos = np.array([0.0, 0.0])
    world.agents[1].state.p_pos = np.array([0.05, 0.0])
    world.agents[2].state.p_pos = np.array([0.9, 0.9])
    for agent in world.agents:
        agent.state.p_vel = np.zeros(2)
    return world


@pytest.mark.parametrize("local_ratio", [0.0, 0.5])
def test_spread_reward_units_global_with_local_ratio_0_and_a_local_mix_otherwise(local_ratio):
    env = make_multiagent_env(SPREAD, N=3, local_ratio=local_ratio)
    env.reset(seed=0)
    world = collide_agents_0_and_1(env)
    _, reward, _, _, _ = env.step(np.zeros(3, np.int64))
    # hand-computed from the world after the step: global = -sum over landmarks of the closest agent's distance
    global_reward = -sum(
        min(np.linalg.norm(a.state.p_pos - lm.state.p_pos) for a in world.agents) for lm in world.landmarks
    )
    local = np.array([-1.0, -1.0, 0.0])  # agents 0 and 1 collide: -1 each
    expected = (1 - local_ratio) * global_reward + local_ratio * local
    np.testing.assert_allclose(reward, expected, rtol=1e-5)
    if local_ratio == 0.0:
        assert reward[0] == reward[1] == reward[2]  # one shared global reward
        assert env.reward_unit.startswith("shared, global")
    else:
        assert reward[2] - reward[0] == pytest.approx(0.5, rel=1e-5)
        assert env.reward_unit.startswith("per-agent mix")


def test_spread_global_reward_is_identical_for_all_agents_over_random_episodes():
    env = make_multiagent_env(SPREAD, N=3, local_ratio=0.0)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    for _ in range(50):
        _, reward, terminated, truncated, info = env.step(rng.integers(0, 5, 3))
        assert reward[0] == reward[1] == reward[2]
        if terminated or truncated:
            env.reset()


@pytest.mark.parametrize(
    ("env_id", "shared", "unit"),
    [
        ("mpe2:simple_speaker_listener_v4", True, "shared, global: both agents get the same reward"),
        ("mpe2:simple_reference_v3", False, "per-agent mix: (1 - 0.5) x the global reward + 0.5 x"),
    ],
)
def test_reward_unit_of_other_mpe2_scenarios(env_id, shared, unit):
    env = make_multiagent_env(env_id)
    assert env.reward_unit.startswith(unit)
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    rewards = np.stack([env.step(random_actions(env, info, rng))[1] for _ in range(25)])
    assert (rewards == rewards[:, :1]).all() == shared


def test_simple_tag_rewards_are_per_team():
    env = make_multiagent_env("mpe2:simple_tag_v3")
    assert env.agents == ["adversary_0", "adversary_1", "adversary_2", "agent_0"]
    assert env.reward_unit.startswith("per-agent, two teams: every adversary gets +10")
    env.reset(seed=0)
    world = env._env.unwrapped.world
    positions = [(0.02, 0.0), (0.5, 0.5), (-0.5, 0.5), (0.0, 0.0)]  # adversary_0 touches the good agent
    for entity, pos in zip(world.agents + world.landmarks, positions + [(0.8, -0.8), (-0.8, -0.8)], strict=True):
        entity.state.p_pos, entity.state.p_vel = np.array(pos), np.zeros(2)
    _, reward, _, _, _ = env.step(np.zeros(4, np.int64))
    np.testing.assert_array_equal(reward, [10.0, 10.0, 10.0, -10.0])  # one catch: +10 each adversary, -10 prey


def test_mpe2_continuous_actions_in_the_box_and_out_of_it():
    env = make_multiagent_env("mpe2:simple_speaker_listener_v4", continuous_actions=True)
    assert (env.discrete, env.act_dims, env.act_dim, env.n_actions) == (False, [3, 5], 5, 5)
    np.testing.assert_array_equal(env.action_low, np.zeros((2, 5)))
    np.testing.assert_array_equal(env.action_high, [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])  # speaker: 3 dims
    _, info = env.reset(seed=0)
    assert info["avail_actions"].all()
    actions = np.array([[0.0, 1.0, 0.0, 7.0, 7.0], [0.5, 0.0, 1.0, 0.25, 0.0]], np.float32)  # speaker's padding ignored
    env.step(actions)
    listener = env._env.unwrapped.world.agents[1]
    np.testing.assert_allclose(listener.action.u, [(1.0 - 0.0) * 5, (0.0 - 0.25) * 5])  # u = (a2 - a1, a4 - a3) x 5
    with pytest.raises(ValueError, match=r"np.clip\(actions, env.action_low, env.action_high\)"):
        env.step(np.array([[0, 0, 0, 0, 0], [0, 0, 1.5, 0, 0]], np.float32))
    with pytest.raises(ValueError, match=r"shape \(2, 5\) \[n_agents, act_dim\], got shape \(2, 3\)"):
        env.step(np.zeros((2, 3), np.float32))


# ---------------------------------------------------------------------------------------------- LBF
def place_players_beside_the_food(env):
    """Puts both players next to the single food (north and south of it); returns (levels, food level)."""
    core = env._core
    (frow,), (fcol,) = np.nonzero(core.field)
    core.players[0].position = (frow - 1, fcol)
    core.players[1].position = (frow + 1, fcol)
    core._gen_valid_moves()
    return [p.level for p in core.players], int(core.field[frow, fcol])


def test_lbf_terminates_when_all_food_is_eaten_with_the_per_agent_rewards():
    env = make_multiagent_env("Foraging-5x5-2p-1f-coop-v3")
    env.reset(seed=0)
    levels, food = place_players_beside_the_food(env)
    assert food == sum(levels)  # -coop: the food needs both players
    LOAD = 5
    assert env.avail_actions()[:, LOAD].all()
    _, reward, terminated, truncated, info = env.step(np.array([LOAD, LOAD]))
    assert (terminated, truncated) == (True, False)
    # reward_i = level_i * food / (sum of loaders' levels * food spawned), food spawned = food
    np.testing.assert_allclose(reward, [levels[0] / sum(levels), levels[1] / sum(levels)], rtol=1e-6)
    assert reward.sum() == pytest.approx(1.0)  # the team return of an episode with all food eaten


def test_lbf_truncates_at_50_steps_with_food_left():
    env = make_multiagent_env(LBF)
    env.reset(seed=0)
    for t in range(1, 51):
        _, reward, terminated, truncated, _ = env.step(np.zeros(2, np.int64))  # NONE: nobody eats
        assert not terminated and truncated == (t == 50)
        np.testing.assert_array_equal(reward, [0.0, 0.0])
    assert env._core.field.sum() > 0


def test_lbf_available_actions_are_the_env_valid_moves():
    env = make_multiagent_env("Foraging-5x5-2p-1f-coop-v3")
    env.reset(seed=0)
    core = env._core
    (frow,), (fcol,) = np.nonzero(core.field)
    core.players[0].position = (0, 0)  # a corner: no NORTH, no WEST
    core.players[1].position = (frow, fcol + 1)  # east of the food: no WEST (food), LOAD allowed
    core._gen_valid_moves()
    mask = env.avail_actions()
    #                 NONE NORTH SOUTH WEST EAST LOAD
    expected_0 = [True, False, True, False, True, False]
    expected_1 = [True, frow > 0, frow < 4, False, fcol + 1 < 4, True]
    np.testing.assert_array_equal(mask, [expected_0, expected_1])
    _, info = env.reset(seed=1)
    for i, player in enumerate(core.players):
        assert set(np.flatnonzero(info["avail_actions"][i])) == {a.value for a in core._valid_actions[player]}


# ---------------------------------------------------------------------------------------------- RWARE
def test_rware_individual_reward_goes_to_the_delivering_agent_only():
    env = make_multiagent_env(RWARE)
    env.reset(seed=0)
    core = env._core
    carrier, other = core.agents
    goal_x, goal_y = core.goals[0]
    assert (other.x, other.y) != (goal_x, goal_y)
    shelf = core.request_queue[0]
    carrier.x, carrier.y, carrier.carrying_shelf = goal_x, goal_y, shelf
    shelf.x, shelf.y = goal_x, goal_y
    core._recalc_grid()
    _, reward, terminated, truncated, _ = env.step(np.zeros(2, np.int64))  # NOOP: the shelf is at the goal
    np.testing.assert_array_equal(reward, [1.0, 0.0])
    assert (terminated, truncated) == (False, False)
    assert env.reward_unit.startswith("per-agent, local")


# ---------------------------------------------------------------------------------------------- seeding
@pytest.mark.parametrize("env_id", [SPREAD, LBF, RWARE])
def test_seeded_resets_reproduce_episodes(env_id):
    def rollout(env, seed):
        rng = np.random.default_rng(5)
        obs, info = env.reset(seed=seed)
        trace = [obs]
        for _ in range(20):
            obs, reward, _, _, info = env.step(random_actions(env, info, rng))
            trace += [obs, reward]
        return trace

    a, b = make_multiagent_env(env_id), make_multiagent_env(env_id)
    for x, y in zip(rollout(a, 7), rollout(b, 7), strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(rollout(a, 7)[0], rollout(a, 8)[0])
    np.testing.assert_array_equal(a.reset(seed=np.int64(7))[0], rollout(b, 7)[0])  # numpy integers too
    with pytest.raises(TypeError, match=r"reset\(seed=...\) takes an int or None, got 7.0"):
        a.reset(seed=7.0)


# ---------------------------------------------------------------------------------------------- vector env
def test_vector_env_auto_resets_on_the_same_step_like_single_envs_with_the_same_seeds():
    make = lambda: make_multiagent_env("Foraging-5x5-2p-1f-v3", max_episode_steps=9)  # noqa: E731
    E, steps = 3, 40
    vec = MultiAgentVectorEnv([make] * E)
    assert (vec.num_envs, vec.n_agents, vec.obs_dim, vec.state_dim, vec.n_actions) == (3, 2, 9, 18, 6)
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 6, (steps, E, 2))
    vobs, vinfo = vec.reset(seed=10)
    assert vobs.shape == (E, 2, 9) and vinfo["state"].shape == (E, 18) and vinfo["avail_actions"].shape == (E, 2, 6)
    singles = [make() for _ in range(E)]
    sobs = [env.reset(seed=10 + e)[0] for e, env in enumerate(singles)]
    np.testing.assert_array_equal(vobs, np.stack(sobs))
    returns, lengths, ends = np.zeros((E, 2)), np.zeros(E, int), {"terminated": 0, "truncated": 0}
    for t in range(steps):
        vobs, vrew, vterm, vtrunc, vinfo = vec.step(actions[t])
        assert vrew.shape == (E, 2) and vterm.dtype == bool and vtrunc.dtype == bool
        for e, env in enumerate(singles):
            obs, reward, terminated, truncated, info = env.step(actions[t, e])
            np.testing.assert_array_equal(vrew[e], reward)
            returns[e] += reward
            lengths[e] += 1
            assert (vterm[e], vtrunc[e]) == (terminated, truncated)
            if terminated or truncated:
                ends["terminated" if terminated else "truncated"] += 1
                np.testing.assert_array_equal(vinfo["final_obs"][e], obs)
                np.testing.assert_array_equal(vinfo["final_state"][e], info["state"])
                np.testing.assert_array_equal(vinfo["final_avail_actions"][e], info["avail_actions"])
                np.testing.assert_allclose(vinfo["episode_return"][e], returns[e], rtol=1e-6)
                assert vinfo["episode_length"][e] == lengths[e]
                returns[e], lengths[e] = 0, 0
                obs, info = env.reset()
            else:
                np.testing.assert_array_equal(vinfo["final_obs"][e], 0)
                assert vinfo["episode_length"][e] == 0
            np.testing.assert_array_equal(vobs[e], obs)  # already the next episode's first obs where one ended
            np.testing.assert_array_equal(vinfo["state"][e], info["state"])
            np.testing.assert_array_equal(vinfo["avail_actions"][e], info["avail_actions"])
    assert ends["truncated"] >= 3  # each env reached its 9-step limit at least once
    assert ends["terminated"] >= 1  # and random players ate the lone food in some episode


def test_vector_env_with_box_actions():
    vec = MultiAgentVectorEnv([lambda: make_multiagent_env(SPREAD, continuous_actions=True, max_cycles=3)] * 2)
    assert (vec.discrete, vec.act_dim, vec.reward_unit) == (False, 5, make_multiagent_env(SPREAD).reward_unit)
    obs, info = vec.reset(seed=0)
    assert obs.shape == (2, 3, 18) and info["avail_actions"].shape == (2, 3, 5) and info["avail_actions"].all()
    for t in range(1, 4):
        obs, reward, terminated, truncated, info = vec.step(np.full((2, 3, 5), 0.5, np.float32))
        assert reward.shape == (2, 3) and truncated.tolist() == [t == 3] * 2 and not terminated.any()
    np.testing.assert_array_equal(info["episode_length"], [3, 3])


def test_vector_env_checks():
    with pytest.raises(ValueError, match="at least one env"):
        MultiAgentVectorEnv([])
    with pytest.raises(ValueError, match=r"env 1 has n_agents=4 but env 0 has 2; make every env with the same id"):
        MultiAgentVectorEnv([lambda: make_multiagent_env(RWARE), lambda: make_multiagent_env("rware-tiny-4ag-v2")])
    vec = MultiAgentVectorEnv([lambda: make_multiagent_env(RWARE)] * 2)
    with pytest.raises(ValueError, match="reset got 3 seeds for 2 envs"):
        vec.reset(seed=[1, 2, 3])
    vec.reset(seed=[1, 2])
    with pytest.raises(ValueError, match="got actions for 3 envs, expected 2"):
        vec.step(np.zeros((3, 2), np.int64))


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("env_id", "fix"),
    [
        ("simple_spread_v2", "mpe2:simple_spread_v3"),
        ("pettingzoo.mpe.simple_spread_v2", "mpe2:simple_spread_v3"),
        ("simple_speaker_listener_v3", "mpe2:simple_speaker_listener_v4"),
        ("mpe2:simple_speaker_listener_v3", "mpe2:simple_speaker_listener_v4"),
        ("simple_spread_v3", "mpe2:simple_spread_v3"),
    ],
)
def test_old_mpe_names_name_the_mpe2_id(env_id, fix):
    with pytest.raises(ValueError, match=rf"use make_multiagent_env\('{fix}'\)"):
        make_multiagent_env(env_id)


@pytest.mark.parametrize(
    ("env_id", "message"),
    [
        ("CartPole-v1", "unknown multi-agent env id 'CartPole-v1'; use 'mpe2:<module>'"),
        ("mpe2:simple_nothing_v1", "mpe2 has no scenario 'simple_nothing_v1'; use one of"),
        ("Foraging-8x8-2p-9f-v3", "'Foraging-8x8-2p-9f-v3' is not a registered id; use an id such as 'Foraging-8x8"),
        ("rware-huge-2ag-v2", "'rware-huge-2ag-v2' is not a registered id; use an id such as 'rware-tiny-2ag-v2'"),
    ],
)
def test_unknown_ids(env_id, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_multiagent_env(env_id)


def test_bad_discrete_actions_name_the_fix():
    env = make_multiagent_env(RWARE)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"one integer action per agent, shape \(2,\), got shape \(3,\)"):
        env.step(np.zeros(3, np.int64))
    with pytest.raises(ValueError, match=r"shape \(2,\), got shape \(2, 5\); pass e.g. q.argmax\(-1\)"):
        env.step(np.zeros((2, 5), np.int64))
    with pytest.raises(TypeError, match=r"must be integers, got dtype float32; pass actions.astype\(np.int64\)"):
        env.step(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"agent 1 \(agent_1\) has 5 actions \(0..4\), got action -1"):
        env.step(np.array([0, -1]))
    with pytest.raises(ValueError, match="pass max_steps=500"):
        make_multiagent_env(RWARE, max_steps=None)


def test_a_missing_env_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "rware", None)  # `import rware` raises ImportError
    with pytest.raises(ImportError, match=r"needs the rware package: pip install 'parl-core\[marl\]'"):
        make_multiagent_env(RWARE)
    monkeypatch.setitem(sys.modules, "mpe2", None)
    with pytest.raises(ImportError, match=r"needs the mpe2 package: pip install 'parl-core\[marl\]'"):
        MAenv("simple_spread")


# ---------------------------------------------------------------------------------------------- MAenv (PARL)
def test_maenv_has_parl_attributes_and_list_returns():
    env = MAenv("simple_spread")
    assert (env.n, env.obs_shape_n, env.act_shape_n) == (3, [18, 18, 18], [5, 5, 5])
    assert env.agents_name == ["agent_0", "agent_1", "agent_2"]
    assert all(isinstance(s, gym.spaces.Box) and s.shape == (18,) for s in env.observation_space)
    assert env.action_space == [gym.spaces.Discrete(5)] * 3
    assert env.possible_agents == env.agents_name and env.unwrapped.max_cycles == 25  # forwarded to the PettingZoo env
    obs_n = env.reset()
    assert isinstance(obs_n, list) and [o.shape for o in obs_n] == [(18,)] * 3 and obs_n[0].dtype == np.float32
    for t in range(1, 26):
        obs_n, reward_n, done_n, info_n = env.step([np.eye(5)[1]] * 3)
        assert isinstance(reward_n, list) and len(reward_n) == 3 and isinstance(reward_n[0], float)
        assert reward_n[0] == reward_n[1] == reward_n[2]  # PARL's spread: local_ratio=0, one global reward
        assert done_n == [t == 25] * 3 and info_n == [{}, {}, {}]


def test_maenv_parl_scenario_settings():
    expected = {
        "simple": (1, [4], [5]),
        "simple_adversary": (3, [8, 10, 10], [5, 5, 5]),
        "simple_crypto": (3, [4, 8, 8], [4, 4, 4]),  # eve, bob, alice
        "simple_push": (2, [8, 19], [5, 5]),
        "simple_reference": (2, [21, 21], [50, 50]),
        "simple_speaker_listener": (2, [3, 11], [3, 5]),
        "simple_tag": (4, [16, 16, 16, 14], [5, 5, 5, 5]),
        "simple_world_comm": (6, [34, 34, 34, 34, 28, 28], [20, 5, 5, 5, 5, 5]),
    }
    for name, (n, obs_shape_n, act_shape_n) in expected.items():
        env = MAenv(name)
        assert (env.n, env.obs_shape_n, env.act_shape_n) == (n, obs_shape_n, act_shape_n), name
        assert [o.shape[0] for o in env.reset()] == obs_shape_n  # unpadded, as PARL returns them


def test_maenv_discrete_actions_argmax_vectors_or_ints():
    env = MAenv("simple_spread")
    env.reset()
    world = env.env.unwrapped.world
    env.step([np.array([0.1, 0.2, 0.9, 0.0, 0.0]), 3, np.int64(0)])  # argmax 2 (right), int 3 (down), no-op
    np.testing.assert_allclose([a.action.u for a in world.agents], [[5.0, 0.0], [0.0, -5.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match=r"has 3 agents, got 2 actions"):
        env.step([0, 0])
    with pytest.raises(
        ValueError, match=r"pass a vector of 5 scores \(its argmax is taken\) or an int, got shape \(4,\)"
    ):
        env.step([np.zeros(4), 0, 0])


def test_maenv_continuous_actions_map_minus_one_one_onto_the_box():
    env = MAenv("simple_spread", continuous_actions=True)
    assert all(isinstance(s, gym.spaces.Box) and s.shape == (5,) for s in env.action_space)
    assert env.act_shape_n == [5, 5, 5]
    env.reset()
    world = env.env.unwrapped.world
    # [-1, 1] -> [0, 1]: -1 -> 0, 0 -> 0.5, 1 -> 1; u = (a2 - a1, a4 - a3) x sensitivity 5
    act = np.array([-1.0, -1.0, 1.0, 0.0, 0.5])
    env.step([act, np.zeros(5), np.full(5, 1.0005)])  # PARL's 1e-3 tolerance, then clipped to the box
    np.testing.assert_allclose(world.agents[0].action.u, [(1.0 - 0.0) * 5, (0.75 - 0.5) * 5], rtol=1e-6)
    np.testing.assert_allclose(world.agents[1].action.u, [0.0, 0.0], atol=1e-7)
    with pytest.raises(ValueError, match=r"should be in range \[-1.0, 1.0\], but got .*np.clip\(act, -1, 1\)"):
        env.step([np.full(5, 1.01), np.zeros(5), np.zeros(5)])


@pytest.mark.parametrize(
    ("name", "fix"),
    [
        ("simple_spread_v2", "simple_spread"),
        ("pettingzoo.mpe.simple_tag_v2", "simple_tag"),
        ("simple_speaker_listener_v3", "simple_speaker_listener"),
    ],
)
def test_maenv_old_names_name_parl_scenario(name, fix):
    with pytest.raises(ValueError, match=rf"use MAenv\('{fix}'\)"):
        MAenv(name)
    with pytest.raises(ValueError, match="not found; valid scenarios"):
        MAenv("simple_nothing")


def test_maenv_render_takes_the_old_gym_mode(monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    env = MAenv("simple_spread")
    env.reset()
    frame = env.render(mode="rgb_array")
    assert frame.shape == (700, 700, 3) and frame.dtype == np.uint8 and frame.std() > 0
    env.close()


def test_maenv_seeding():
    a, b = MAenv("simple_spread"), MAenv("simple_spread")
    a.seed(3)
    obs_a = a.reset()
    obs_b = b.reset(seed=3)
    for x, y in zip(obs_a, obs_b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.reset()[0], obs_a[0])  # the seed applies to one reset only


def test_import_env_stays_cheap_and_maenv_imports_without_mpe2():
    # `parl.env` re-exports these; that facade is tested in packages/parl/tests (parl-core's tests run without it)
    code = (
        "import sys, parl_core.env\n"
        "from parl_core.env.multiagent_env import MAenv\n"
        "from parl_core.env import make_multiagent_env, MultiAgentVectorEnv\n"
        "import parl_core.env.multiagent\n"
        "assert parl_core.env.MAenv is MAenv\n"
        "assert parl_core.env.multiagent.make_multiagent_env is make_multiagent_env\n"
        "heavy = ('mpe2', 'pettingzoo', 'lbforaging', 'rware', 'torch', 'paddle')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("env_id", [SPREAD, LBF, RWARE])
def test_np_random_is_the_generator_the_episodes_are_drawn_from(env_id):
    """Restoring ``np_random``'s state (what a checkpoint saves) replays the next episode's start exactly."""
    env = make_multiagent_env(env_id)
    env.reset(seed=3)
    assert isinstance(env.np_random, np.random.Generator)
    saved = env.np_random.bit_generator.state
    first = env.reset()[0]
    assert not np.array_equal(env.reset()[0], first)  # each reset draws a new start
    env.np_random.bit_generator.state = saved
    np.testing.assert_array_equal(env.reset()[0], first)
    env.close()
