"""`--parity` on hand-built rank reports: N ranks against 1, each rank or their mean, NM711."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from neuron_migrate.smoke.assemble import Launch, RankOutcome, ReportContext, build_report
from neuron_migrate.smoke.findings import report_findings
from neuron_migrate.smoke.rank_parity import EACH, MEAN, ParityRequest, compare_ranks
from neuron_migrate.smoke.render import render_json, render_text

SCRIPT = "/work/proj/train.py"
BACKWARD = {"path": SCRIPT, "line": 19, "function": "<module>", "column": 5, "code": "loss.backward()"}
STEP = {"path": SCRIPT, "line": 20, "function": "<module>", "column": 5, "code": "opt.step()"}


def rank(losses: list[float], output: list[float] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "status": "ok", "steps": len(losses), "forwards": len(losses), "backwards": len(losses),
        "ops": [{"op": "aten::addmm", "count": 2, "sites": []}], "events": [], "notes": [], "failure": None,
        "collectives": [{"op": "_c10d_functional::all_reduce", "count": 2, "sites": [BACKWARD]}],
        "losses": [{"value": v, "site": BACKWARD} for v in losses],
        "output": {"values": output, "site": None} if output is not None else None,
        "checksums": None, "step_site": STEP, **extra,
    }  # fmt: skip


def parity(multi: list[dict[str, Any] | None], single: dict[str, Any] | None, **request: Any) -> Any:
    return compare_ranks(multi, single, ParityRequest(**request))


def test_every_rank_equal_to_one_rank_within_fp32_tolerance_is_ok() -> None:
    result = parity([rank([1.0, 0.5], [0.1, 0.2]), rank([1.0, 0.50000001], [0.1, 0.2])], rank([1.0, 0.5], [0.1, 0.2]))
    assert (result.status, result.precision, result.rtol, result.atol) == ("ok", "fp32", 1e-4, 1e-6)
    assert [s.label for s in result.steps] == ["loss 1", "loss 2", "output"]
    assert result.problem == ""


def test_one_rank_off_fails_on_the_first_step_it_differs() -> None:
    result = parity([rank([1.0, 0.5]), rank([1.0, 0.6])], rank([1.0, 0.5]))
    assert result.status == "mismatch"
    assert [(s.label, s.ok, s.rank) for s in result.steps] == [("loss 1", True, 0), ("loss 2", False, 1)]
    assert (
        result.problem == "2 ranks disagree with 1 rank: loss 2 differs by 1.00e-01 on rank 1 (rtol=0.0001, atol=1e-06)"
    )


def test_mean_compares_the_ranks_average_and_not_the_outputs() -> None:
    halves = [rank([0.8, 0.4], [9.0]), rank([1.2, 0.6], [7.0])]
    result = parity(halves, rank([1.0, 0.5], [1.0]), ranks=MEAN)
    assert result.status == "ok" and [s.label for s in result.steps] == ["loss 1", "loss 2"]
    assert all(s.rank is None for s in result.steps)
    assert parity(halves, rank([1.0, 0.5], [1.0]), ranks=EACH).status == "mismatch"


def test_bf16_runs_get_the_low_precision_tolerance_and_flags_override_it() -> None:
    result = parity([rank([1.0]), rank([1.02])], rank([1.0], low_precision=True))
    assert (result.status, result.precision, result.rtol) == ("ok", "bf16/fp16", 5e-2)
    assert parity([rank([1.0]), rank([1.02])], rank([1.0]), rtol=0.0, atol=0.03).status == "ok"
    assert parity([rank([1.0]), rank([1.02])], rank([1.0])).status == "mismatch"


def test_runs_that_cannot_be_compared_are_unproved_or_a_mismatch() -> None:
    failed = rank([], failure={"type": "AssertionError", "message": "needs 2 ranks"}, status="failed")
    assert parity([rank([1.0]), rank([1.0])], failed).message == "the 1-rank run failed (AssertionError: needs 2 ranks)"
    assert parity([rank([1.0]), None], rank([1.0])).message == "the 2-rank run did not finish"
    nothing = parity([rank([]), rank([])], rank([]))
    assert nothing.status == "unproved" and nothing.message.startswith("nothing to compare")
    short = parity([rank([1.0]), rank([1.0])], rank([1.0, 2.0]))
    assert short.status == "mismatch"
    assert short.message == "the runs differ in length: the 1-rank run gave 2 values, rank 0 of the 2-rank run 1 values"


def test_a_named_value_is_compared_step_by_step() -> None:
    named = {"values": [[1.0, 2.0], [3.0, 4.0]], "problem": ""}
    off = {"values": [[1.0, 2.0], [3.0, 4.5]], "problem": ""}
    ok = parity([rank([1.0], named=named), rank([9.0], named=named)], rank([1.0], named=named), value="metrics.loss")
    assert ok.status == "ok" and [s.label for s in ok.steps] == ["`metrics.loss` at step 1", "`metrics.loss` at step 2"]
    assert ok.value == "`metrics.loss` at each optimizer step"
    bad = parity([rank([1.0], named=named), rank([1.0], named=off)], rank([1.0], named=named), value="metrics.loss")
    assert (bad.status, bad.steps[1].rank, bad.steps[1].max_abs_diff) == ("mismatch", 1, 0.5)
    missing = {"values": [], "problem": "no user frame defines `metrics` where the optimizer steps"}
    gone = parity([rank([1.0], named=missing)] * 2, rank([1.0], named=missing), value="metrics.loss")
    assert (gone.status, gone.message) == ("unproved", missing["problem"])


def report(multi: list[dict[str, Any]], single: dict[str, Any] | None, **request: Any) -> Any:
    context = ReportContext(Path(SCRIPT), "emulated", "2.14", len(multi), 300.0, Path("/work/proj"))
    main = Launch(tuple(RankOutcome(i, 0, d) for i, d in enumerate(multi)), False, 1.0)
    alone = Launch((RankOutcome(0, 0, single),), False, 1.0) if single is not None else None
    return build_report(context, main, None, alone, ParityRequest(**request))


def test_a_mismatch_fails_the_run_with_nm711_at_the_line_of_the_loss() -> None:
    result = report([rank([1.0, 0.5]), rank([1.0, 0.5])], rank([1.0, 0.7]))
    assert not result.ok
    text = render_text(result)
    assert "parity with 1 rank: mismatch (every one of 2 ranks;" in text
    assert "loss 2: max |diff| 2.000e-01 MISMATCH (rank 0 0.5, 1 rank 0.7)" in text
    (finding,) = report_findings(result)
    assert (finding.code, finding.name, finding.path, finding.start.line) == (
        "NM711", "rank_parity_mismatch", "train.py", 19,
    )  # fmt: skip
    assert finding.message == "Fix the parallel plan; `--parity`: loss 2 on rank 0 differs from 1 rank by 2.0e-01"
    assert '"rank_parity": {' in render_json(result)


def test_parity_that_could_not_run_fails_the_smoke_run() -> None:
    result = report([rank([1.0]), rank([1.0])], None)
    assert not result.ok
    assert result.problems == ("parity of 2 ranks with 1 rank is not proved: the 1-rank run did not run",)
    (finding,) = report_findings(result)
    assert (finding.code, finding.start.line) == ("NM711", 20)


def test_without_parity_nothing_changes() -> None:
    context = ReportContext(Path(SCRIPT), "emulated", "2.14", 2, 300.0, Path("/work/proj"))
    main = Launch((RankOutcome(0, 0, rank([1.0])), RankOutcome(1, 0, rank([1.0]))), False, 1.0)
    result = build_report(context, main, None)
    assert result.rank_parity is None and "parity with 1 rank" not in render_text(result)
