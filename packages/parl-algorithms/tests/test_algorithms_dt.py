"""DecisionTransformer (Chen et al. 2021) on both backends (backend a pytest parameter): the masked action
MSE, the warm-up, PARL's rtg of K + 1 steps, bad input; the example (torch) at a tiny budget. The
paddle-vs-torch update is in test_algorithms_equivalence.py."""

import numpy as np
import pytest
from algo_models import dt_segments
from test_algorithms_examples import check_summary, run_example

B, K, OBS_DIM, ACT_DIM = 4, 5, 3, 2


def _to(M, array):
    import importlib

    fw = importlib.import_module(M.ops.name)
    return fw.as_tensor(array) if M.ops.name == "torch" else fw.to_tensor(array)


def segments(M, seed=0):
    """(states, actions, rewards, dones, rtg [B, K + 1, 1], timesteps, attention_mask) as the backend's tensors."""
    return [_to(M, x) for x in dt_segments(np.random.default_rng(seed), B, K, OBS_DIM, ACT_DIM)]


def _no_get_action(M):
    class NoGetAction(M.ops.Model):
        def forward(self, states):
            return states

    return NoGetAction()


def make(M, model=None, **kwargs):
    args = {"learning_rate": 1e-2, "warmup_steps": 4, "weight_decay": 1e-4, **kwargs}
    return M.algs.DecisionTransformer(model or M.DTStepModel(), **args)


def test_loss_is_the_mse_over_real_steps_only(M):
    M.ops.seed(0)
    alg = make(M)
    batch = segments(M)
    preds = M.ops.numpy(alg.model(*batch[:2], batch[2], batch[4][:, :K], batch[5])[1])
    real = M.ops.numpy(batch[6]) > 0
    expected = float(((preds - M.ops.numpy(batch[1])) ** 2)[real].mean())
    shifted = list(batch)
    actions = M.ops.numpy(batch[1]).copy()
    actions[0, :2] = 100.0  # targets under padding do not count
    shifted[1] = _to(M, actions)
    fresh = make(M, M.DTStepModel())
    fresh.model.set_weights(alg.model.get_weights())
    assert float(M.ops.numpy(alg.learn(*batch))) == pytest.approx(expected, rel=1e-5)
    assert float(M.ops.numpy(fresh.learn(*shifted))) == pytest.approx(expected, rel=1e-5)


def test_numpy_segments_give_the_tensors_loss(M):
    M.ops.seed(0)
    alg, twin = make(M), make(M)
    twin.model.set_weights(alg.model.get_weights())
    arrays = dt_segments(np.random.default_rng(0), B, K, OBS_DIM, ACT_DIM)
    got = float(M.ops.numpy(alg.learn(*arrays)))
    assert got == pytest.approx(float(M.ops.numpy(twin.learn(*segments(M)))), rel=1e-6) and got > 0


def test_save_restore_resumes_exactly(M, tmp_path):
    M.ops.seed(1)
    rng = np.random.default_rng(1)
    agent = M.Agent(make(M, warmup_steps=6))
    for _ in range(3):  # mid warm-up: the scheduler's step count is part of the checkpoint
        agent.learn(*dt_segments(rng, B, K, OBS_DIM, ACT_DIM))
    agent.save(tmp_path / "dt.ckpt")
    later = [dt_segments(rng, B, K, OBS_DIM, ACT_DIM) for _ in range(4)]
    expected = [agent.learn(*b) for b in later]
    expected_w = agent.alg.model.get_weights()
    M.ops.seed(2)
    fresh = M.Agent(make(M, warmup_steps=6))
    fresh.restore(tmp_path / "dt.ckpt")
    got = [fresh.learn(*b) for b in later]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    for name, value in fresh.alg.model.get_weights().items():
        np.testing.assert_allclose(value, expected_w[name], rtol=1e-6, atol=1e-7)
    assert _lr(M, fresh.alg) == pytest.approx(1e-2)  # 7 steps: past the warm-up


def _lr(M, alg):
    return alg.optimizer.param_groups[0]["lr"] if M.ops.name == "torch" else alg.optimizer.get_lr()


def test_warm_up_and_learning(M):
    M.ops.seed(0)
    alg = make(M, warmup_steps=4)
    batch = segments(M)
    lrs, losses = [], []
    for _ in range(200):
        lrs.append(_lr(M, alg))
        losses.append(float(M.ops.numpy(alg.learn(*batch))))
    assert lrs[:5] == pytest.approx([1e-2 * k / 4 for k in (1, 2, 3, 4, 4)])
    assert losses[-1] < 0.5 * losses[0]
    assert tuple(alg.predict(batch[0], batch[1], None, batch[4][:, :K], batch[5]).shape) == (B, ACT_DIM)


def test_bad_input(M):
    alg = make(M)
    batch = segments(M)
    with pytest.raises(ValueError, match="attention_mask selects no step"):
        alg.learn(*batch[:6], _to(M, np.zeros((B, K), np.float32)))
    with pytest.raises(ValueError, match=r"rtg must have K or K \+ 1"):
        alg.learn(*batch[:4], _to(M, np.zeros((B, K + 3, 1), np.float32)), *batch[5:])
    with pytest.raises(ValueError, match=r"actions must be a tensor \[B, K, act_dim\]"):
        alg.learn(batch[0], batch[1][:, :-1], *batch[2:])
    with pytest.raises(ValueError, match=r"states must be a tensor \[B, K, obs_dim\]"):
        alg.learn(np.zeros((B, K), np.float32), *batch[1:])
    with pytest.raises(ValueError, match="warmup_steps"):
        make(M, warmup_steps=0)
    with pytest.raises(ValueError, match="weight_decay"):
        make(M, weight_decay=-1.0)
    with pytest.raises(ValueError, match="learning_rate"):
        make(M, learning_rate=None)
    with pytest.raises(ValueError, match="get_action"):
        make(M, _no_get_action(M))


def test_example_tiny_budget(tmp_path):
    result = run_example("dt", tmp_path, "--collect-steps", "400",
                         "--learning-starts", "300",
                         "--gradient-steps", "20",
                         "--eval-every", "10",
                         "--target-return", "1e9")
    check_summary(result, 400)
    assert result["gradient_steps"] == 20 and result["episodes"] == 2 and result["reached"] is False
    assert -2000.0 <= result["eval_return_mean"] <= 0.0
    assert [step for step, _ in result["evals"]] == [10, 20]
    assert any(p.name.startswith("events.out.tfevents") for p in tmp_path.iterdir())
