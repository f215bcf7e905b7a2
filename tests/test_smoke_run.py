"""End to end: real child processes run the fixture scripts on the emulated `neuron` device."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuron_migrate.smoke import render_text, report_findings, run_smoke
from neuron_migrate.smoke.command import smoke_command
from neuron_migrate.smoke.report import SmokeReport
from neuron_migrate.smoke.runner import SmokeOptions

pytestmark = pytest.mark.slow  # each test runs a script under smoke in child processes

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "fixtures" / "_smoke"


def marker_line(script: str, marker: str) -> int:
    """The 1-based line of `script` that carries the comment `# smoke: <marker>`."""
    lines = (SCRIPTS / script).read_text().splitlines()
    return next(i for i, text in enumerate(lines, start=1) if f"# smoke: {marker}" in text)


def smoke(script: str, *args: str, **options: object) -> SmokeReport:
    opts = SmokeOptions(**{"device": "emulate", "timeout_s": 120.0, "base_dir": ROOT, **options})  # type: ignore[arg-type]
    return run_smoke(SCRIPTS / script, args, opts)


def leftover_processes(marker: str) -> list[str]:
    """Command lines of live processes of this checkout (their cwd) that mention `marker`.

    Other checkouts on the same machine may be running smoke at the same time.
    """
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path("/proc", pid, "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = Path(os.readlink(Path("/proc", pid, "cwd")))
        except OSError:
            continue
        mine = cwd == Path.cwd() or cwd.is_relative_to(ROOT)
        if marker in cmdline and int(pid) != os.getpid() and mine:
            found.append(cmdline)
    return found


def test_training_script_runs_stops_and_matches_the_cpu_run() -> None:
    result = CliRunner().invoke(
        smoke_command,
        [
            str(SCRIPTS / "train.py"),
            "--device",
            "emulate",
            "--compare-cpu",
            "--output-format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["status"], data["device"], data["ok"]) == ("ok", "emulated", True)
    assert (data["steps"], data["backwards"]) == (2, 2)
    assert data["stop_reason"] == "stopped after 2 optimizer steps"
    assert data["parity"]["status"] == "ok" and data["parity"]["precision"] == "bf16/fp16"
    assert [s["label"] for s in data["parity"]["steps"]] == [
        "loss 1",
        "loss 2",
        "output",
    ]
    ops = {op["op"] for op in data["ops"]}
    assert {"aten::addmm", "aten::nll_loss_forward", "aten::_to_copy"} <= ops
    assert data["fallbacks"] == [] and data["events"] == []


def test_fft_and_linalg_get_predicted_fallbacks_at_their_lines() -> None:
    report = smoke("fft_linalg.py")
    assert report.status == "ok" and report.ok
    lines = {f.op: [s.line for s in f.sites] for f in report.fallbacks}
    assert lines == {
        "aten::_fft_r2c": [marker_line("fft_linalg.py", "fft")],
        "aten::linalg_qr": [marker_line("fft_linalg.py", "qr")],
    }
    assert all(not f.measured and "torchneuron-facts §8.3" in f.source for f in report.fallbacks)
    float64 = [e for e in report.events if e.kind == "float64"]
    assert marker_line("fft_linalg.py", "float64") in {e.site.line for e in float64 if e.site}
    codes = {(f.code, f.start.line) for f in report_findings(report)}
    assert ("NM701", marker_line("fft_linalg.py", "qr")) in codes
    assert ("NM703", marker_line("fft_linalg.py", "float64")) in codes
    text = render_text(report)
    assert "CPU fallbacks (predicted, not measured): 2\n" in text
    assert "  predicted from the 2.14 compat data, made from the April-2026" in text
    assert "    source: torch-neuronx native source, April-2026 snapshot" in text and "§" not in text


def test_a_tensor_left_on_the_cpu_is_device_mixing() -> None:
    report = smoke("device_mixing.py")
    assert report.status == "ok" and not report.ok  # computes on the CPU, fails on hardware
    mixing = [e for e in report.events if e.kind == "device-mixing"]
    assert [(e.op, e.site.line if e.site else 0) for e in mixing] == [
        ("aten::add", marker_line("device_mixing.py", "mixing"))
    ]
    finding = next(f for f in report_findings(report) if f.code == "NM704")
    assert finding.path == "fixtures/_smoke/device_mixing.py" and finding.severity.value == "error"


def test_a_raising_script_is_reported_with_its_own_line() -> None:
    result = CliRunner().invoke(smoke_command, [str(SCRIPTS / "raises.py"), "--device", "emulate"])
    assert result.exit_code == 1
    raise_line = marker_line("raises.py", "raise")
    assert f'raises.py", line {raise_line}, in check_batch' in result.stdout
    assert "error: ValueError: expected 3 rows, got 4" in result.stdout
    assert f"at fixtures/_smoke/raises.py:{raise_line}:" in result.stdout
    assert "bootstrap.py" not in result.stdout and "runpy" not in result.stdout


def test_a_training_loop_without_end_is_stopped_by_steps_and_auto_emulates() -> None:
    report = smoke("forever_train.py", steps=3, device="auto")  # no torch_neuronx here
    assert (report.status, report.steps, report.device) == ("ok", 3, "emulated")


def test_an_endless_loop_is_stopped_by_the_timeout() -> None:
    started = time.monotonic()
    report = smoke("forever_spin.py", timeout_s=8.0)  # time to reach the loop on a loaded machine
    assert time.monotonic() - started < 40
    assert report.status == "timeout" and report.failure is not None
    loop = {marker_line("forever_spin.py", m) for m in ("loop", "spin")}
    assert report.failure.site is not None and report.failure.site.line in loop  # either line
    assert [f.code for f in report_findings(report)] == ["NM707"]
    assert "forever_spin.py" in report.failure.traceback
    assert "site-packages" not in report.failure.traceback  # only user frames for a timeout


def test_a_script_that_ignores_the_alarm_is_killed_with_its_children() -> None:
    started = time.monotonic()
    report = smoke("hangs.py", timeout_s=2.0, kill_grace_s=1.0)
    assert time.monotonic() - started < 15
    assert report.status == "timeout"
    assert report.failure is not None and "killed after 2 s" in report.failure.message
    assert leftover_processes("smoke-hang-grandchild") == []
    assert leftover_processes("neuron-migrate-smoke-") == []


def test_an_inference_script_stops_after_n_forward_calls_and_gets_its_args() -> None:
    report = smoke("inference.py", "--batch-size", "2", steps=3)
    assert (report.status, report.forwards, report.steps) == ("ok", 3, 0)
    assert report.stop_reason == "stopped after 3 forward calls"
    bad = smoke("inference.py", "--batch-size", "many")
    assert bad.status == "failed" and bad.failure is not None
    assert "exited with status 2" in bad.failure.message


def collective_lines(report: SmokeReport) -> dict[str, set[int]]:
    return {c.op: {s.line for s in c.sites} for c in report.collectives}


def test_two_rank_ddp_runs_on_the_neuron_backend() -> None:
    report = smoke("ddp.py", nproc=2)
    assert report.status == "ok" and report.ok, report.failure
    assert (report.nproc, report.steps) == (2, 2)
    ops = {op.op: op.count for op in report.ops}
    assert ops["c10d::allreduce_"] >= 2 and ops["c10d::broadcast_"] >= 2
    # The gradient all-reduce belongs to `loss.backward()`, not to the `DDP(...)` line.
    lines = collective_lines(report)
    assert lines["c10d::allreduce_"] == {
        marker_line("ddp.py", "check"),
        marker_line("ddp.py", "backward"),
    }
    assert marker_line("ddp.py", "ddp") in lines["c10d::broadcast_"]  # DDP's initial broadcast
    assert marker_line("ddp.py", "gather") in lines["c10d::allgather_"]
    allreduce = next(op for op in report.ops if op.op == "c10d::allreduce_")
    assert marker_line("ddp.py", "ddp") not in {s.line for s in allreduce.sites}
    assert report.replicas is not None
    assert (report.replicas.status, report.replicas.compared) == ("agree", 4)
    assert leftover_processes("neuron-migrate-smoke-") == []


def test_two_rank_fsdp2_runs_on_the_neuron_backend() -> None:
    report = smoke("fsdp2.py", nproc=2)
    assert report.status == "ok" and report.ok, report.failure
    ops = {op.op for op in report.ops}
    assert {"c10d::_allgather_base_", "c10d::_reduce_scatter_base_"} <= ops, sorted(ops)
    forward, backward = (
        marker_line("fsdp2.py", "forward"),
        marker_line("fsdp2.py", "backward"),
    )
    lines = collective_lines(report)
    assert forward in lines["c10d::_allgather_base_"]  # unshard before the forward
    assert lines["c10d::_reduce_scatter_base_"] == {backward}  # gradients in the backward
    assert report.replicas is not None and report.replicas.status == "unchecked"
    assert report.replicas.sharded == 4  # every parameter is a sharded DTensor


@pytest.mark.parametrize(
    ("mode", "why", "line"),
    [
        ("none", "no collective exchanged a tensor", "step"),
        ("logged", "`weight` differs between rank 0 and rank 1", "step"),
        ("own_group", "no collective exchanged a tensor", "step"),
    ],
)
def test_ranks_that_trained_independently_fail_with_nm708(mode: str, why: str, line: str) -> None:
    report = smoke("independent.py", mode, nproc=2)
    assert report.status == "ok" and not report.ok
    assert report.problems == (f"2 ranks trained independently: {why}",)
    findings = [f for f in report_findings(report) if f.code == "NM708"]
    assert [f.start.line for f in findings] == [marker_line("independent.py", line)]
    assert "smoke FAILED" in render_text(report)


@pytest.mark.parametrize("mode", ["c10d", "functional"])
def test_gradients_all_reduced_by_hand_keep_the_replicas_in_step(mode: str) -> None:
    """Without DDP: `dist.all_reduce` or a functional collective (as compiled code uses)."""
    report = smoke("manual_allreduce.py", mode, nproc=2)
    assert report.ok, (report.problems, report.failure)
    assert collective_lines(report) == {
        {"c10d": "c10d::allreduce_", "functional": "_c10d_functional::all_reduce"}[mode]: {
            marker_line("manual_allreduce.py", mode)
        }
    }
    assert report.replicas is not None and report.replicas.status == "agree"


def test_one_rank_of_the_independent_script_passes() -> None:
    report = smoke("independent.py", "none")
    assert report.ok and report.replicas is None


def test_the_emulated_device_behaves_like_a_device() -> None:
    report = smoke("emulation_basics.py")
    assert report.status == "ok", report.failure
    assert report.ok


def test_an_xla_device_string_left_in_the_script_is_named_in_the_likely_cause() -> None:
    report = smoke("xla_device.py")
    assert report.status == "failed" and report.failure is not None
    assert report.failure.site is not None
    assert report.failure.site.line == marker_line("xla_device.py", "to")
    where = f"fixtures/_smoke/xla_device.py:{marker_line('xla_device.py', 'xla')}"
    assert report.failure.likely_cause == (
        f'The script still asks for the `xla` device ("xla" at {where}); use `torch.device("neuron")`'
    )
    assert f"likely cause: {report.failure.likely_cause}" in render_text(report)


def test_torchscript_compiles_under_the_emulation() -> None:
    """`torch.distributed.optim` scripts optimizers at import; smoke's `torch.tensor` must not break it."""
    report = smoke("torchscript.py")
    assert report.ok, (report.problems, report.failure)
    assert report.steps == 2 and report.ops


@pytest.mark.parametrize("args", [(), ("infer",)])
def test_a_run_that_never_used_neuron_fails_with_nm709(args: tuple[str, ...]) -> None:
    report = smoke("cpu_only.py", *args)
    assert report.status == "ok" and report.ops == () and report.device_unused
    assert report.problems == ("the run never used the `neuron` device: no op ran on it",)
    assert [f.code for f in report_findings(report)] == ["NM709"]


def test_a_caught_torch_xla_import_fails_with_nm710_even_on_neuron() -> None:
    line = marker_line("xla_probe.py", "probe")
    on_neuron = smoke("xla_probe.py", "neuron")
    assert on_neuron.status == "ok" and on_neuron.ops and not on_neuron.device_unused
    assert [(f.code, f.path, f.start.line) for f in report_findings(on_neuron)] == [
        ("NM710", "fixtures/_smoke/xla_probe.py", line)
    ]
    on_cpu = smoke("xla_probe.py", "cpu")
    assert sorted(f.code for f in report_findings(on_cpu)) == ["NM709", "NM710"]
    assert not on_cpu.ok


def test_an_optimizer_wrapper_is_counted_instead_of_the_shard_optimizer_inside_it() -> None:
    report = smoke("zero.py", nproc=2)
    assert report.ok, (report.problems, report.failure)
    assert report.steps == 2 and report.step_site is not None
    assert report.step_site.line == marker_line("zero.py", "step")
    assert report.replicas is not None and (report.replicas.status, report.replicas.compared) == ("agree", 4)
