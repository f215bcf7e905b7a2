"""The helpers fixes write into migrated files: each compiles and does what torch_xla's API did.

Without a process group they act on one rank, as torch_xla did in a single process; the
two-rank behaviour is checked by tests/e2e (programs/collectives.py under `smoke --nproc 2`).
"""

from __future__ import annotations

import copy
import io
from contextlib import redirect_stdout
from types import SimpleNamespace
from typing import Any

import pytest

from neuron_migrate.checks.helpers import HELPER_NAMES
from neuron_migrate.checks.helpers import HELPER_TEMPLATES as HELPERS
from neuron_migrate.checks.helpers import HELPERS as ALL_HELPERS


def load(name: str, **names: Any) -> Any:
    namespace: dict[str, Any] = dict(names)
    code = compile(HELPERS[name].replace("{torch}", "torch"), name, "exec")
    exec(code, namespace)  # our own helper templates, as a migrated file would run them
    return namespace[HELPER_NAMES[name]]


def test_every_helper_compiles_and_defines_its_name() -> None:
    for name, template in HELPERS.items():
        module = ALL_HELPERS[name][2]  # the module its `{...}` names: torch, or torch.distributed.optim's alias
        code = compile(template.replace("{" + module + "}", module), name, "exec")
        assert HELPER_NAMES[name] in code.co_names
        assert ALL_HELPERS[name] == (template, HELPER_NAMES[name], module)  # what fixes write
        assert module in ("torch", "dist_optim")


def test_rate_tracker_reports_rates_like_torch_xla() -> None:
    tracker = load("rate_tracker")()
    clock = iter([10.0, 12.0, 14.0])
    tracker._clock = lambda: next(clock)
    tracker._start_time = tracker._partial_time = 8.0
    tracker.add(8)
    assert tracker.rate() == 8 / 2  # 8 samples in the 2 s since the last report
    tracker.add(4)
    assert tracker.rate() == pytest.approx(0.6 * 2 + 0.4 * 4)  # smoothed with the last rate
    assert tracker.global_rate() == 12 / 6


def test_print_helpers_print_torch_xla_lines_and_feed_a_writer() -> None:
    scalars: list[tuple[str, float, object]] = []
    writer = SimpleNamespace(add_scalar=lambda *a: scalars.append(a))
    out = io.StringIO()
    with redirect_stdout(out):
        load("training_update")("neuron:0", 3, 0.25, 10.0, 9.5, epoch=1, summary_writer=writer)
        load("test_update")("neuron:0", 97.5, epoch=1)
    train, test = out.getvalue().splitlines()
    assert train.startswith("| Training Device=neuron:0 Epoch=1 Step=3 Loss=0.25000 Rate=10.00 GlobalRate=9.50 Time=")
    assert test.startswith("| Test Device=neuron:0 Epoch=1 Accuracy=97.50 Time=")
    assert scalars == [
        ("examples/sec", 10.0, None),
        ("average_examples/sec", 9.5, None),
    ]


def test_summary_helpers_write_close_and_skip_a_missing_writer() -> None:
    calls: list[tuple[object, ...]] = []
    writer = SimpleNamespace(
        add_scalar=lambda *a: calls.append(("add", *a)),
        flush=lambda: calls.append(("flush",)),
        close=lambda: calls.append(("close",)),
    )
    write, close = load("write_to_summary"), load("close_summary_writer")
    write(writer, 5, dict_to_write={"loss": 0.5})
    write(None, 5, dict_to_write={"loss": 0.5})
    close(writer)
    close(None)
    assert calls == [("add", "loss", 0.5, 5), ("flush",), ("close",)]
    assert load("get_summary_writer")(None) is None


def test_collective_helpers_act_on_one_rank_without_a_process_group() -> None:
    torch = pytest.importorskip("torch")
    value = torch.tensor([1.0, 2.0])
    reduced = load("all_reduce", torch=torch)("sum", value, scale=0.5)
    assert reduced.tolist() == [0.5, 1.0] and value.tolist() == [
        1.0,
        2.0,
    ]  # a new tensor
    grads = [torch.ones(2)]
    assert load("all_reduce", torch=torch)("sum", grads, scale=2.0) is grads and grads[0].tolist() == [2.0, 2.0]
    out = torch.zeros(1, 2)
    assert load("all_gather", torch=torch)(value.reshape(1, 2), dim=1, output=out) is out and out.tolist() == [
        [1.0, 2.0]
    ]
    assert load("reduce_scatter", torch=torch)("sum", value, 3.0, 0, 1).tolist() == [
        3.0,
        6.0,
    ]
    assert load("mesh_reduce", torch=torch)(torch.tensor(4.0), lambda xs: [x.device.type for x in xs]) == ["cpu"]
    model = torch.nn.Linear(2, 1)
    before = [p.clone() for p in model.parameters()]
    load("broadcast_master_param", torch=torch)(model)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_fully_shard_wraps_the_children_torch_xla_s_recursive_wrap_would() -> None:
    """Size policy at 100 parameters: the block's big inner layer is wrapped, and the block itself is
    not (6 parameters are left unwrapped in it), nor the small head; in one process nothing is
    sharded, but compute_dtype casts the buffers."""
    torch = pytest.importorskip("torch")
    import functools

    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

    fully_shard = load("fully_shard", torch=torch)
    big = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.Linear(2, 2))  # 110 + 6 parameters
    model = torch.nn.Sequential(big, torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))  # head: 12
    wrapped: list[tuple[int, dict[str, Any]]] = []

    def wrapper(module: Any, **options: Any) -> Any:
        wrapped.append((sum(p.numel() for p in module.parameters()), options))
        return module

    policy = functools.partial(size_based_auto_wrap_policy, min_num_params=100)
    out = fully_shard(model, compute_dtype=torch.bfloat16, auto_wrap_policy=policy, auto_wrapper_callable=wrapper)
    assert out is model
    assert [n for n, _ in wrapped] == [110]  # the inner Linear(10, 10) only
    assert wrapped[0][1]["compute_dtype"] is torch.bfloat16 and "auto_wrap_policy" not in wrapped[0][1]
    assert model[2].running_mean.dtype == torch.bfloat16 and model[0][0].weight.dtype == torch.float32
    with pytest.raises(NotImplementedError, match="sharding_groups"):
        fully_shard(torch.nn.Linear(1, 1), sharding_groups=[[0, 1]])


def test_fully_shard_raises_on_ranks_without_a_process_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under torchrun without a process group, skipping the sharding would train one model per
    rank: the helper raises; one process (no WORLD_SIZE) keeps the module whole, as one rank did."""
    torch = pytest.importorskip("torch")
    fully_shard = load("fully_shard", torch=torch)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(RuntimeError, match="process group"):
        fully_shard(torch.nn.Linear(1, 1))
    monkeypatch.delenv("WORLD_SIZE")
    model = torch.nn.Linear(1, 1)
    assert fully_shard(model) is model


def test_checkpoint_module_patches_forward_in_place_and_keeps_the_gradients() -> None:
    """As torch_xla's: the same module comes back (its state dict keys unchanged), its forward is
    recomputed in the backward pass, and the gradients equal an unchecked module's."""
    torch = pytest.importorskip("torch")
    checkpoint_module = load("checkpoint_module", torch=torch)
    torch.manual_seed(0)
    plain = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    checked = copy.deepcopy(plain)
    keys = list(checked.state_dict())
    assert checkpoint_module(checked) is checked and list(checked.state_dict()) == keys
    x = torch.randn(5, 3, requires_grad=True)
    plain(x).sum().backward()
    calls = []
    checked[0].register_forward_hook(lambda *a: calls.append(1))
    checked(x).sum().backward()
    assert len(calls) == 2  # run again in the backward pass
    assert all(torch.allclose(a.grad, b.grad) for a, b in zip(plain.parameters(), checked.parameters()))
    frozen = torch.randn(5, 3)
    assert torch.allclose(checked(frozen), plain(frozen))  # no input needs a gradient: a plain call
