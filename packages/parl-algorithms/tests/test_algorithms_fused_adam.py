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
    assert float(net[0].weight.detach().sum()) != 0.0


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


def test_clip_grad_norm_matches_torch():
    from parl_algorithms.torch._common import clip_grad_norm

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    ref = copy.deepcopy(net)
    x = torch.randn(8, 4)
    for model in (net, ref):
        (model(x) * 100).pow(2).mean().backward()
    total = clip_grad_norm(net.parameters(), 0.5)
    ref_total = torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
    assert float(total) > 0.5  # the clipping is active
    assert torch.equal(total, ref_total)
    for a, b in zip(net.parameters(), ref.parameters(), strict=True):
        assert torch.equal(a.grad, b.grad)
    new_norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in net.parameters()]))
    assert abs(float(new_norm) - 0.5) < 1e-4


def test_fused_adam_zero_grad():
    net = torch.nn.Linear(3, 2)
    opt = adam(net.parameters(), lr=1e-2)
    net(torch.ones(4, 3)).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert torch.equal(net.weight.grad, torch.zeros(2, 3))
    net(torch.ones(4, 3)).sum().backward()
    assert float(net.weight.grad.abs().sum()) == 24.0
    opt.zero_grad()
    assert net.weight.grad is None and net.bias.grad is None


def test_adam_uses_public_torch_adam_when_internals_are_not_vetted(monkeypatch):
    from parl_algorithms.torch import _common

    params = list(torch.nn.Linear(3, 2).parameters())
    assert type(_common.adam(params, lr=1e-3)) is _common.FusedAdam  # the vetted torch 2.13 pin
    monkeypatch.setattr(_common, "_FAST_ADAM", False)
    optimizer = _common.adam(params, lr=1e-3)
    assert type(optimizer) is torch.optim.Adam
    assert optimizer.param_groups[0]["lr"] == 1e-3


def test_fused_adam_first_step_state_equals_torch_adam_state():
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 3)
    ref = copy.deepcopy(net)
    opt = adam(net.parameters(), lr=1e-3)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=1e-3, fused=True)
    for model, optimizer in ((net, opt), (ref, ref_opt)):
        model(torch.ones(2, 4)).pow(2).sum().backward()
        optimizer.step()
    ours, theirs = opt.state_dict(), ref_opt.state_dict()
    assert ours["param_groups"] == theirs["param_groups"]
    assert ours["state"].keys() == theirs["state"].keys() == {0, 1}
    for i in (0, 1):
        for key in ("step", "exp_avg", "exp_avg_sq"):
            a, b = ours["state"][i][key], theirs["state"][i][key]
            assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), (i, key)
    # a checkpoint of torch's Adam resumes in FusedAdam and the next steps are identical
    resumed = adam(copy.deepcopy(ref).parameters(), lr=1e-3)
    resumed.load_state_dict(ref_opt.state_dict())
    assert float(resumed.state_dict()["state"][0]["step"]) == 1.0


def test_fused_adam_does_not_import_dynamo():
    # Optimizer.add_param_group and Optimizer.step import torch._dynamo (~1 s of start-up) on first use
    import subprocess
    import sys

    code = ("import sys, torch\nfrom parl_algorithms.torch._common import adam\n"
            "net = torch.nn.Linear(4, 2)\nopt = adam(net.parameters(), lr=1e-3)\n"
            "for _ in range(2):\n    opt.zero_grad(); net(torch.ones(3, 4)).sum().backward(); opt.step()\n"
            "print('torch._dynamo' in sys.modules, float(opt.state_dict()['state'][0]['step']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "2.0"]


def test_fused_adam_step_counters_are_views_of_one_tensor_and_survive_a_reload():
    # the counters of a group are counted with one add_ on a shared tensor; values, dtype and shape stay
    # torch's, and replaced counters (load_state_dict) are picked up at the next step
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ref = copy.deepcopy(net)
    opt = adam(net.parameters(), lr=1e-3)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=1e-3, fused=True)
    _train(net, opt, 3)
    _train(ref, ref_opt, 3)
    steps = [opt.state[p]["step"] for p in net.parameters()]
    assert all(s.shape == () and s.dtype == torch.float32 and float(s) == 3.0 for s in steps)
    assert len({s.untyped_storage().data_ptr() for s in steps}) == 1  # one shared tensor
    resumed_net = copy.deepcopy(net)
    resumed = adam(resumed_net.parameters(), lr=1e-3)
    resumed.load_state_dict(copy.deepcopy(ref_opt.state_dict()))  # fresh counters, not views of resumed's tensor
    for model, optimizer in ((resumed_net, resumed), (ref, ref_opt)):
        _train(model, optimizer, 2)
    assert [float(resumed.state[p]["step"]) for p in resumed_net.parameters()] == [5.0] * 4
    for a, b in zip(resumed_net.parameters(), ref.parameters(), strict=True):
        assert torch.equal(a, b)
    # a parameter without a gradient keeps its counter; the others count on
    opt.zero_grad()
    net[2](torch.ones(1, 8)).sum().backward()  # only the last layer gets gradients
    opt.step()
    assert [float(opt.state[p]["step"]) for p in net.parameters()] == [3.0, 3.0, 4.0, 4.0]
