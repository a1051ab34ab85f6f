"""DecisionTransformer (Chen et al. 2021): the masked action MSE, the warm-up, PARL's rtg of K + 1 steps,
bad input, and the example at a tiny budget."""

import pytest
import torch
import torch.nn as nn
from test_algorithms_examples import check_summary, run_example

from parl_algorithms.torch import DecisionTransformer
from parl_core.torch import Model

B, K, OBS_DIM, ACT_DIM = 4, 5, 3, 2


class StepModel(Model):
    """A per-step model (PARL's DT model contract without the transformer): action = tanh(W s + v R)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(OBS_DIM + 1, ACT_DIM)

    def forward(self, states, actions, rewards, returns_to_go, timesteps, attention_mask=None):
        return None, torch.tanh(self.fc(torch.cat([states, returns_to_go], -1))), None

    def get_action(self, states, actions, rewards, returns_to_go, timesteps):
        return self(states, actions, rewards, returns_to_go, timesteps)[1][:, -1]


class NoGetAction(Model):
    def forward(self, states):
        return states


def segments(seed=0):
    gen = torch.Generator().manual_seed(seed)
    mask = torch.ones(B, K)
    mask[0, :2] = 0  # the first segment is left-padded by two steps
    return (torch.randn(B, K, OBS_DIM, generator=gen), torch.rand(B, K, ACT_DIM, generator=gen) - 0.5,
            torch.zeros(B, K, 1), torch.zeros(B, K), torch.randn(B, K + 1, 1, generator=gen),
            torch.arange(K).repeat(B, 1), mask)


def make(model=None, **kwargs):
    args = {"learning_rate": 1e-2, "warmup_steps": 4, "weight_decay": 1e-4, **kwargs}
    return DecisionTransformer(model or StepModel(), **args)


def test_loss_is_the_mse_over_real_steps_only():
    torch.manual_seed(0)
    alg = make()
    batch = segments()
    with torch.no_grad():
        _, preds, _ = alg.model(*batch[:2], batch[2], batch[4][:, :K], batch[5])
        real = batch[6] > 0
        expected = ((preds - batch[1]) ** 2)[real].mean()
    shifted = list(batch)
    shifted[1] = batch[1].clone()
    shifted[1][0, :2] = 100.0  # targets under padding do not count
    fresh = make(StepModel())
    fresh.model.set_weights(alg.model.get_weights())
    torch.testing.assert_close(alg.learn(*batch), expected)
    torch.testing.assert_close(fresh.learn(*shifted), expected)


def test_warm_up_and_learning():
    torch.manual_seed(0)
    alg = make(warmup_steps=4)
    batch = segments()
    lrs, losses = [], []
    for _ in range(200):
        lrs.append(alg.optimizer.param_groups[0]["lr"])
        losses.append(alg.learn(*batch).item())
    assert lrs[:5] == pytest.approx([1e-2 * k / 4 for k in (1, 2, 3, 4, 4)])
    assert losses[-1] < 0.5 * losses[0]
    assert alg.predict(batch[0], batch[1], None, batch[4][:, :K], batch[5]).shape == (B, ACT_DIM)


def test_bad_input():
    alg = make()
    batch = list(segments())
    with pytest.raises(ValueError, match="attention_mask selects no step"):
        alg.learn(*batch[:6], torch.zeros(B, K))
    with pytest.raises(ValueError, match=r"rtg must have K or K \+ 1"):
        alg.learn(*batch[:4], torch.zeros(B, K + 3, 1), *batch[5:])
    with pytest.raises(ValueError, match=r"actions must be a tensor \[B, K, act_dim\]"):
        alg.learn(batch[0], batch[1][:, :-1], *batch[2:])
    with pytest.raises(ValueError, match="warmup_steps"):
        make(warmup_steps=0)
    with pytest.raises(ValueError, match="weight_decay"):
        make(weight_decay=-1.0)
    with pytest.raises(ValueError, match="learning_rate"):
        make(learning_rate=None)
    with pytest.raises(ValueError, match="get_action"):
        make(NoGetAction())


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
