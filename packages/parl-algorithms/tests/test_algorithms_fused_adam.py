"""FusedAdam (the algorithms' optimizer) computes exactly what torch.optim.Adam(fused=True) computes."""

from __future__ import annotations

import copy

import torch

from parl_algorithms.torch._common import FusedAdam, adam


def _train(net: torch.nn.Module, opt: torch.optim.Optimizer, steps: int) -> None:
    gen = torch.Generator().manual_seed(1)
    for i in range(steps):
        x = torch.randn(32, 4, generator=gen)
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        opt.step()
        if i == steps // 2:
            opt.param_groups[0]["lr"] = 5e-4  # a schedule changes lr through param_groups


def test_fused_adam_matches_torch_adam_with_lr_change():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    ref = copy.deepcopy(net)
    opt = adam(net.parameters(), lr=1e-3, eps=1e-5)
    assert isinstance(opt, FusedAdam)
    _train(net, opt, 12)
    _train(ref, torch.optim.Adam(ref.parameters(), lr=1e-3, eps=1e-5, fused=True), 12)
    for a, b in zip(net.parameters(), ref.parameters(), strict=True):
        assert torch.equal(a, b)
    assert float(opt.state_dict()["state"][0]["step"]) == 12.0
    assert float(net[0].weight.sum()) != 0.0


def test_fused_adam_runs_step_hooks():
    net = torch.nn.Linear(3, 1)
    opt = adam(net.parameters(), lr=1e-2)
    calls = []
    opt.register_step_post_hook(lambda *_: calls.append(1))
    before = net.weight.detach().clone()
    for _ in range(3):
        opt.zero_grad()
        net(torch.ones(2, 3)).sum().backward()
        opt.step()
    assert calls == [1, 1, 1]
    assert not torch.equal(before, net.weight)
