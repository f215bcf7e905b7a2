"""Report assembly, parity, likely causes, rendering and NM7xx findings, on hand-built data."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from neuron_migrate.model import Severity
from neuron_migrate.smoke import compat, parity
from neuron_migrate.smoke.assemble import (
    Launch,
    RankOutcome,
    ReportContext,
    build_report,
)
from neuron_migrate.smoke.causes import likely_cause
from neuron_migrate.smoke.findings import RULES, report_findings
from neuron_migrate.smoke.render import render_json, render_text
from neuron_migrate.smoke.report import (
    Event,
    Failure,
    Fallback,
    OpRecord,
    Parity,
    ParityStep,
    SmokeReport,
    XlaImport,
)
from neuron_migrate.smoke.sites import Site

SCRIPT = "/work/proj/train.py"


def site(line: int, code: str = "y = f(x)") -> dict[str, object]:
    return {
        "path": SCRIPT,
        "line": line,
        "function": "<module>",
        "column": 5,
        "code": code,
    }


def rank_data(**overrides: object) -> dict[str, object]:
    data: dict[str, object] = {
        "status": "ok",
        "steps": 2,
        "forwards": 2,
        "backwards": 2,
        "stop_reason": "stopped after 2 optimizer steps",
        "ops": [
            {
                "op": "aten::linalg_qr",
                "count": 2,
                "sites": [site(11, "q, r = torch.linalg.qr(w)")],
            },
            {"op": "aten::addmm", "count": 4, "sites": [site(9)]},
            {"op": "aten::weird_op", "count": 1, "sites": []},
        ],
        "events": [
            {
                "kind": "device-mixing",
                "op": "aten::add",
                "detail": "d",
                "count": 2,
                "site": site(12, "z = y + b"),
            },
            {
                "kind": "float64",
                "op": "aten::ones",
                "detail": "d",
                "count": 1,
                "site": site(13),
            },
        ],
        "losses": [{"value": 1.0, "site": site(15)}, {"value": 0.5, "site": site(15)}],
        "output": {"values": [0.1, 0.2], "dtypes": ["torch.float32"], "site": site(9)},
        "low_precision": False,
        "measured": None,
        "notes": [],
        "failure": None,
    }
    data.update(overrides)
    return data


def ctx(device: str = "emulated", nproc: int = 1) -> ReportContext:
    return ReportContext(Path(SCRIPT), device, "2.14", nproc, 300.0, base_dir=Path("/work/proj"))


def launch(*datas: dict[str, object] | None, killed: bool = False) -> Launch:
    ranks = tuple(
        RankOutcome(
            rank,
            0 if d is not None and d["status"] == "ok" else 1,
            d,
            f"log of rank {rank}",
        )
        for rank, d in enumerate(datas)
    )
    return Launch(ranks, killed, 1.234)


def test_emulated_report_predicts_fallbacks_from_compat_data() -> None:
    report = build_report(ctx(), launch(rank_data()), None)
    assert report.script == "train.py"  # made relative to base_dir
    assert [f.op for f in report.fallbacks] == ["aten::linalg_qr"]
    fallback = report.fallbacks[0]
    assert not fallback.measured and fallback.status == "cpu-fallback"
    assert fallback.sites[0].path == "train.py" and fallback.sites[0].line == 11
    assert {op.op: op.status for op in report.ops} == {
        "aten::addmm": "native",
        "aten::linalg_qr": "cpu-fallback",
        "aten::weird_op": "unknown",
    }


def test_neuron_report_uses_measured_fallbacks_with_recorded_sites() -> None:
    measured = {
        "fallback_ops": ["aten::linalg_qr.default", "aten::only_measured"],
        "executed_ops": [],
    }
    report = build_report(ctx("neuron"), launch(rank_data(measured=measured)), None)
    by_op = {f.op: f for f in report.fallbacks}
    assert set(by_op) == {"aten::linalg_qr", "aten::only_measured"}
    assert all(f.measured for f in report.fallbacks)
    assert by_op["aten::linalg_qr"].sites[0].line == 11
    assert by_op["aten::only_measured"].sites == ()
    assert report.measured_executed_ops == ()


def test_ranks_are_merged_and_the_root_cause_rank_is_reported() -> None:
    peer_lost = {
        "type": "RuntimeError",
        "message": "Connection closed by peer [127.0.0.1]:1",
        "traceback": "",
        "site": site(20),
    }
    real = {
        "type": "ValueError",
        "message": "bad shape",
        "traceback": "tb",
        "site": site(7),
    }
    report = build_report(
        ctx(nproc=2),
        launch(
            rank_data(status="failed", failure=peer_lost),
            rank_data(status="failed", failure=real),
        ),
        None,
    )
    assert report.status == "failed"
    assert report.failure is not None and report.failure.message == "bad shape" and report.failure.rank == 1
    assert {op.op: op.count for op in report.ops}["aten::addmm"] == 8
    mixing = [e for e in report.events if e.kind == "device-mixing"]
    assert len(mixing) == 1 and mixing[0].count == 4


def test_a_rank_without_report_is_a_failure_with_its_log() -> None:
    report = build_report(ctx(nproc=2), launch(rank_data(), None), None)
    assert report.status == "failed"
    assert report.failure is not None and "rank 1 exited with code 1 without a report" in report.failure.message
    assert report.output_tail == "log of rank 1"


def test_a_killed_run_is_a_timeout() -> None:
    report = build_report(ctx(), launch(None, killed=True), None)
    assert report.status == "timeout"
    assert report.failure is not None and "killed after 300 s" in report.failure.message


def test_parity_ok_within_fp32_tolerance() -> None:
    result = parity.compare(
        rank_data(),
        rank_data(losses=[{"value": 1.0000001, "site": None}, {"value": 0.5, "site": None}]),
    )
    assert result.status == "ok" and result.precision == "fp32"
    assert [s.label for s in result.steps] == ["loss 1", "loss 2", "output"]
    assert result.steps[0].max_abs_diff == pytest.approx(1e-7)


def test_parity_mismatch_reports_the_largest_difference_per_step() -> None:
    ref = rank_data(output={"values": [0.1, 0.9], "dtypes": [], "site": None})
    result = parity.compare(rank_data(), ref)
    assert result.status == "mismatch"
    output = result.steps[-1]
    assert not output.ok and output.max_abs_diff == pytest.approx(0.7)
    assert all(s.ok for s in result.steps[:-1])


def test_parity_uses_bf16_tolerance_for_low_precision_runs() -> None:
    ours = rank_data(low_precision=True, losses=[{"value": 1.0, "site": None}])
    theirs = rank_data(losses=[{"value": 1.02, "site": None}])
    assert parity.compare(ours, theirs).status == "ok"
    assert parity.compare(rank_data(losses=[{"value": 1.0, "site": None}]), theirs).status == "mismatch"


def test_parity_flags_a_different_number_of_losses_and_a_failed_reference() -> None:
    short = parity.compare(rank_data(), rank_data(losses=[{"value": 1.0, "site": None}]))
    assert short.status == "mismatch" and "2 and 1 losses" in short.message
    failed = parity.compare(
        rank_data(),
        rank_data(status="failed", failure={"type": "E", "message": "boom"}),
    )
    assert failed.status == "skipped" and "failed: E: boom" in failed.message
    empty = parity.compare(rank_data(losses=[], output=None), rank_data(losses=[], output=None))
    assert empty.status == "skipped"


@pytest.mark.parametrize(
    ("exc_type", "message", "expected"),
    [
        ("ModuleNotFoundError", "No module named 'torch_xla'", "neuron-migrate --fix"),
        (
            "RuntimeError",
            "Expected all tensors to be on the same device, but found cpu",
            "move it",
        ),
        ("AssertionError", "Torch not compiled with CUDA enabled", "CUDA"),
        ("ValueError", "Unknown c10d backend type XLA", "init_process_group"),
        ("RunTimeout", "still running after 3 s", "--timeout"),
        ("ValueError", "expected 3 rows", "see its traceback"),
    ],
)
def test_likely_cause(exc_type: str, message: str, expected: str) -> None:
    assert expected in likely_cause(exc_type, message)


def full_report(**overrides: object) -> SmokeReport:
    qr = Site("train.py", 11, "<module>", 5, "q, r = torch.linalg.qr(w)")
    values: dict[str, object] = {
        "script": "train.py",
        "status": "ok",
        "device": "emulated",
        "target_version": "2.14",
        "nproc": 1,
        "steps": 2,
        "forwards": 2,
        "backwards": 2,
        "stop_reason": "stopped after 2 optimizer steps",
        "wall_time_s": 1.5,
        "ops": (OpRecord("aten::linalg_qr", 2, "cpu-fallback", (qr,)),),
        "fallbacks": (
            Fallback(
                "aten::linalg_qr",
                False,
                "cpu-fallback",
                "torchneuron-facts §8.3",
                2,
                (qr,),
            ),
        ),
        "events": (
            Event(
                "float64",
                "aten::ones",
                "d",
                1,
                Site("train.py", 13, "<module>", 5, "s = torch.ones(1)"),
            ),
            Event(
                "device-mixing",
                "aten::add",
                "d",
                2,
                Site("train.py", 12, "<module>", 5, "z = y + b"),
            ),
        ),
        "parity": Parity(
            "mismatch",
            "fp32",
            1e-3,
            1e-5,
            (
                ParityStep(
                    "loss 2",
                    1.0,
                    2.0,
                    1.0,
                    False,
                    Site("train.py", 15, "<module>", 5, "loss.backward()"),
                ),
            ),
        ),
    }
    values.update(overrides)
    return SmokeReport(**values)  # type: ignore[arg-type]


def test_findings_have_stable_codes_severities_and_positions() -> None:
    findings = report_findings(full_report())
    assert [(f.code, f.start.line) for f in findings] == [
        ("NM701", 11),
        ("NM704", 12),
        ("NM703", 13),
        ("NM705", 15),
    ]
    assert all(f.category == "smoke" for f in findings)
    severities = {f.code: f.severity for f in findings}
    assert severities == {
        "NM701": Severity.WARNING,
        "NM703": Severity.WARNING,
        "NM704": Severity.ERROR,
        "NM705": Severity.ERROR,
    }
    qr = findings[0]
    assert (qr.path, qr.start.column, qr.end.column) == (
        "train.py",
        5,
        5 + len("q, r = torch.linalg.qr(w)"),
    )
    assert qr.snippet == "q, r = torch.linalg.qr(w)"


@pytest.mark.parametrize(
    ("status", "exc_type", "code", "text"),
    [
        (
            "failed",
            "ValueError",
            "NM706",
            "Fix the `ValueError` raised here: expected 3 rows",
        ),
        (
            "timeout",
            "RunTimeout",
            "NM707",
            "Stop the loop or raise `--timeout`; the script was still running",
        ),
    ],
)
def test_failure_findings(status: str, exc_type: str, code: str, text: str) -> None:
    message = "expected 3 rows" if status == "failed" else "still running after 3 s"
    failure = Failure(
        exc_type,
        message,
        "tb",
        "cause",
        Site("raises.py", 9, "f", 9, "raise ValueError()"),
    )
    findings = report_findings(full_report(status=status, failure=failure, events=(), fallbacks=(), parity=None))
    assert [(f.code, f.path, f.start.line) for f in findings] == [(code, "raises.py", 9)]
    assert findings[0].message.startswith(text)


def test_finding_messages_follow_the_style_guide() -> None:
    findings = report_findings(full_report())
    probe = XlaImport("torch_xla", Site("train.py", 3, "<module>", 5, "import torch_xla"))
    findings += report_findings(full_report(ops=(), events=(), parity=None, xla_imports=(probe,)))
    measured = Fallback("aten::_fft_r2c", True, "cpu-fallback", "torch_neuronx.get_fallback_ops()")
    findings += report_findings(full_report(fallbacks=(measured,), events=(), parity=None))
    assert {r.code for r in RULES} == {f"NM7{i:02}" for i in range(1, 12)}
    for finding in findings:
        message = finding.message
        assert "\n" not in message and not message.endswith(".")
        assert message[0].isupper() and "`" in message
        assert not re.search(r"\b(please|should|consider)\b", message, re.IGNORECASE)
        assert len(message) <= 100, message
    assert any(f.code == "NM702" and f.path == "train.py" and f.start.line == 1 for f in findings)


def test_render_text_shows_every_section_and_the_verdict() -> None:
    text = render_text(full_report())
    assert text.splitlines()[0].startswith("smoke FAILED: train.py: device mixing at 1 place, an error on real")
    assert "CPU fallbacks (predicted, not measured): 1" in text
    assert "train.py:11: q, r = torch.linalg.qr(w)" in text
    assert "train.py:12 aten::add x2: z = y + b" in text
    assert "parity with the CPU: mismatch" in text and "loss 2: max |diff| 1.000e+00 MISMATCH" in text
    assert [line for line in text.splitlines() if line.startswith("smoke ")] == [text.splitlines()[0]]


def test_the_verdict_comes_first_and_no_line_contradicts_it() -> None:
    """Issue 39: `status: ok` above `smoke FAILED` read both ways; counts said "1 forward calls"."""
    report = full_report(steps=1, forwards=1, backwards=1, stop_reason="stopped after 1 optimizer steps")
    lines = render_text(report).splitlines()
    assert lines[0].startswith("smoke FAILED: train.py: ")
    assert not [line for line in lines if line.startswith("status:")]
    (run,) = [i for i, line in enumerate(lines) if line.startswith("run: ")]
    assert lines[run].startswith("run: 1 optimizer step, 1 forward call, 1 backward call, ")
    assert lines[run + 1].startswith("end: ")
    assert max(map(len, lines)) <= 160, max(lines, key=len)


def test_unknown_ops_are_counted_where_the_report_says_none() -> None:
    """Issue 20: "fallbacks: none" while ops were `[unknown]` hid what the data does not know."""
    unknown = tuple(OpRecord(f"aten::mystery_{i}", 1, "unknown", ()) for i in range(5))
    report = full_report(ops=(OpRecord("aten::add", 3, "native", ()), *unknown), fallbacks=(), events=(), parity=None)
    text = render_text(report)
    assert "ops on `neuron`: 6 distinct, 8 calls; 5 not in the compat data" in text
    assert "CPU fallbacks (predicted, not measured): none\n" in text
    assert "  not in that data, so not predicted: 5 ops (aten::mystery_0, " in text
    assert "none known" not in text
    assert text.splitlines()[0] == "smoke PASSED: train.py (5 ops of unknown compat status)"
    data = json.loads(render_json(report))
    assert data["unknown_ops"] == 5
    from neuron_migrate.report.model import fallback_text
    from neuron_migrate.report.plan import _smoke_summary

    assert fallback_text(_smoke_summary(report)) == (  # `report --smoke`
        "none predicted; 5 ops are not in the compat data, so whether they fall back is not known"
    )
    one = full_report(ops=unknown[:1], fallbacks=(), events=(), parity=None)
    assert render_text(one).splitlines()[0] == "smoke PASSED: train.py (1 op of unknown compat status)"


def test_the_compat_data_is_labelled_with_what_it_was_made_from() -> None:
    made = compat.made_from("2.14")
    assert "snapshot" in made and "torch ~2.10" in made and "2.14 install" in made
    text = render_text(full_report(compat_made_from=made))
    assert f"predicted from the 2.14 compat data, made from {made}" in text


def test_sources_are_public_titles_and_urls_never_internal_tags() -> None:
    """Issue 39: a fallback's source read `torchneuron-facts §8.3, S24`, notes no user can open."""
    tagged = "torchneuron-facts §8.3, S24 python_ops/cpu_fallback_registrations.py [C-old]"
    qr = Fallback("aten::linalg_qr", False, "cpu-fallback", tagged, 1, ())
    report = full_report(fallbacks=(qr,))
    for text in (render_text(report), render_json(report)):
        assert not re.search(r"\[[A-D](-[a-z]+)?\]|torchneuron-facts|§|\bS\d+\b", text), text
    assert compat.citation(tagged) == (
        "torch-neuronx native source, April-2026 snapshot (a public mirror, commit 98154b8), "
        "python_ops/cpu_fallback_registrations.py: https://github.com/parmoham-aws/test-repo-parmoham"
    )
    assert compat.citation("torch_neuronx.get_fallback_ops()") == "torch_neuronx.get_fallback_ops()"
    for version in compat.available_versions():  # every source the data can put in a report
        for entry in compat.load_ops(version).values():
            cited = compat.citation(entry.source)
            assert "https://" in cited and not re.search(r"\[|§|\bS\d+\b|torchneuron-facts", cited), cited


def test_render_text_puts_the_verdict_then_the_failure() -> None:
    failure = Failure(
        "ValueError",
        "boom",
        "Traceback ...\nValueError: boom",
        "The script raised",
        Site("a.py", 3, "f", 1, "raise"),
    )
    text = render_text(full_report(status="failed", failure=failure, events=(), parity=None))
    lines = text.splitlines()
    assert lines[0] == "smoke FAILED: train.py: the script raised `ValueError` at a.py:3"
    assert "end: the script failed with `ValueError` (below)" in lines
    assert lines.index("error: ValueError: boom") < lines.index("    Traceback ...")
    assert "  at a.py:3: raise" in text and "likely cause: The script raised" in text


def test_render_json_is_complete_and_deterministic() -> None:
    report = full_report()
    data = json.loads(render_json(report))
    assert render_json(report) == render_json(full_report())
    assert data["ok"] is False and data["fallbacks_kind"] == "predicted"
    assert data["fallbacks"][0]["sites"][0]["line"] == 11
    assert data["parity"]["steps"][0]["max_abs_diff"] == 1.0
    assert {
        "status",
        "device",
        "steps",
        "wall_time_s",
        "ops",
        "events",
        "failure",
    } <= set(data)


def probe(line: int = 4) -> dict[str, object]:
    return {"module": "torch_xla", "site": site(line, "import torch_xla.core.xla_model as xm")}


@pytest.mark.parametrize(
    ("counts", "unused"),
    [
        ({"steps": 2, "forwards": 2, "backwards": 2}, True),  # training
        ({"steps": 0, "forwards": 2, "backwards": 0}, True),  # inference
        ({"steps": 0, "forwards": 0, "backwards": 1}, True),  # a backward without a step
        ({"steps": 0, "forwards": 0, "backwards": 0}, False),  # neither: nothing to judge
    ],
)
def test_a_run_without_a_single_op_on_neuron_fails_with_nm709(counts: dict[str, int], unused: bool) -> None:
    report = build_report(ctx(), launch(rank_data(ops=[], events=[], **counts)), None)
    assert report.status == "ok" and report.device_unused is unused
    assert ("the run never used the `neuron` device: no op ran on it" in report.problems) is unused
    assert report.ok is not unused
    assert [f.code for f in report_findings(report)] == (["NM709"] if unused else [])
    if unused:
        assert "smoke FAILED: train.py: the run never used the `neuron` device" in render_text(report)


def test_a_run_with_ops_on_neuron_on_any_rank_used_the_device() -> None:
    busy, idle = rank_data(events=[]), rank_data(ops=[], events=[])
    report = build_report(ctx(nproc=2), launch(idle, busy), None)
    assert not report.device_unused
    measured = {"fallback_ops": [], "executed_ops": ["aten::addmm"]}
    on_hardware = build_report(ctx("neuron"), launch(rank_data(ops=[], events=[], measured=measured)), None)
    assert not on_hardware.device_unused


def test_a_caught_torch_xla_import_fails_the_run_with_nm710_at_its_line() -> None:
    report = build_report(
        ctx(nproc=2), launch(rank_data(xla_imports=[probe()]), rank_data(xla_imports=[probe()])), None
    )
    assert report.xla_imports == (
        XlaImport("torch_xla", Site("train.py", 4, "<module>", 5, "import torch_xla.core.xla_model as xm")),
    )
    assert "the script looked for `torch_xla` at train.py:4, found none and ran its fallback" in report.problems
    nm710 = [f for f in report_findings(report) if f.code == "NM710"]
    assert [(f.path, f.start.line, f.snippet) for f in nm710] == [
        ("train.py", 4, "import torch_xla.core.xla_model as xm")
    ]
    assert nm710[0].message.startswith("Remove the `torch_xla` import probe")
    assert "  train.py:4: import torch_xla.core.xla_model as xm" in render_text(report)


def test_the_torch_xla_import_a_run_died_of_is_its_failure_not_nm710() -> None:
    died = {"type": "ModuleNotFoundError", "message": "No module named 'torch_xla'", "traceback": "tb", "site": site(4)}
    report = build_report(ctx(), launch(rank_data(status="failed", failure=died, xla_imports=[probe()])), None)
    assert report.caught_xla_imports == ()
    assert [f.code for f in report_findings(report) if f.code in ("NM706", "NM710")] == ["NM706"]
    elsewhere = {**died, "type": "ValueError", "message": "bad", "site": site(20)}
    later = build_report(ctx(), launch(rank_data(status="failed", failure=elsewhere, xla_imports=[probe()])), None)
    assert [i.site.line for i in later.caught_xla_imports] == [4]
