"""Multi-rank checks on hand-built rank reports: collectives seen, replicas compared, NM708."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from neuron_migrate.smoke.assemble import (
    Launch,
    RankOutcome,
    ReportContext,
    build_report,
)
from neuron_migrate.smoke.findings import report_findings
from neuron_migrate.smoke.ranks import compare_replicas
from neuron_migrate.smoke.render import render_text

SCRIPT = "/work/proj/train.py"
STEP = {
    "path": SCRIPT,
    "line": 20,
    "function": "<module>",
    "column": 5,
    "code": "opt.step()",
}
BACKWARD = {
    "path": SCRIPT,
    "line": 19,
    "function": "<module>",
    "column": 5,
    "code": "loss.backward()",
}
ALLREDUCE = {"op": "c10d::allreduce_", "count": 2, "sites": [BACKWARD]}


def checksums(weight: float, *, sharded: bool = False) -> list[dict[str, Any]]:
    if sharded:
        return [{"name": "0.weight", "sharded": True}]
    return [
        {"name": "0.weight", "sum": weight, "abs": abs(weight)},
        {"name": "0.bias", "sum": 0.5, "abs": 0.5},
    ]


def rank(collectives: list[dict[str, Any]], sums: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {
        "status": "ok", "steps": 2, "forwards": 2, "backwards": 2, "events": [],
        "ops": [{"op": "aten::addmm", "count": 2, "sites": []}],  # it ran on `neuron` (else NM709)
        "losses": [], "notes": [], "failure": None, "collectives": collectives,
        "checksums": sums, "step_site": STEP,
    }  # fmt: skip


def report(*datas: dict[str, Any]) -> Any:
    ranks = tuple(RankOutcome(i, 0, d) for i, d in enumerate(datas))
    context = ReportContext(Path(SCRIPT), "emulated", "2.14", len(datas), 300.0, Path("/work/proj"))
    return build_report(context, Launch(ranks, False, 1.0), None)


def test_replicas_that_agree_pass_and_show_where_collectives_ran() -> None:
    result = report(rank([ALLREDUCE], checksums(1.25)), rank([ALLREDUCE], checksums(1.25)))
    assert result.ok and result.independent == ""
    assert result.replicas is not None and (
        result.replicas.status,
        result.replicas.compared,
    ) == ("agree", 2)
    assert [(c.op, c.count, c.sites[0].line) for c in result.collectives] == [("c10d::allreduce_", 4, 19)]
    text = render_text(result)
    assert "c10d::allreduce_ x4 at train.py:19" in text
    assert "replicas after the steps: agree (2 parameters compared, 0 sharded)" in text
    assert not [f for f in report_findings(result) if f.code == "NM708"]


def test_no_collective_at_all_is_nm708_at_the_first_step() -> None:
    result = report(rank([], checksums(1.25)), rank([], checksums(1.25)))
    assert not result.ok
    assert result.problems == ("2 ranks trained independently: no collective exchanged a tensor",)
    (finding,) = report_findings(result)
    assert (finding.code, finding.name, finding.path, finding.start.line) == (
        "NM708", "ranks_trained_independently", "train.py", 20,
    )  # fmt: skip
    assert finding.severity.value == "error"
    assert finding.message == (
        "Keep the ranks in step with DDP, FSDP or collectives; "
        "2 ranks trained independently: no collective exchanged a tensor"
    )
    assert "collectives between ranks: none" in render_text(result)


def test_replicas_that_drift_apart_are_nm708_naming_the_parameter() -> None:
    result = report(rank([ALLREDUCE], checksums(1.25)), rank([ALLREDUCE], checksums(1.5)))
    assert result.replicas is not None and result.replicas.status == "differ"
    assert result.problems == ("2 ranks trained independently: `0.weight` differs between rank 0 and rank 1",)
    assert [f.code for f in report_findings(result)] == ["NM708"]


def test_sharded_parameters_are_not_compared_but_collectives_still_count() -> None:
    sharded = checksums(0.0, sharded=True)
    result = report(rank([ALLREDUCE], sharded), rank([ALLREDUCE], sharded))
    assert result.ok and result.replicas is not None
    assert (result.replicas.status, result.replicas.sharded, result.replicas.detail) == (
        "unchecked", 1, "every parameter is sharded",
    )  # fmt: skip


def test_one_rank_runs_have_no_rank_check() -> None:
    result = report(rank([], checksums(1.0)))
    assert result.ok and result.replicas is None
    assert "collectives between ranks" not in render_text(result)


def test_a_failed_run_reports_its_failure_not_independent_ranks() -> None:
    failed = dict(
        rank([], None),
        status="failed",
        failure={"type": "ValueError", "message": "boom", "traceback": ""},
    )
    result = report(failed, rank([], checksums(1.0)))
    assert result.status == "failed" and result.independent == ""
    assert "NM708" not in {f.code for f in report_findings(result)}


def test_compare_replicas_edge_cases() -> None:
    assert compare_replicas([{"checksums": checksums(1.0)}], 1) is None
    missing = compare_replicas([{"checksums": checksums(1.0)}, {"checksums": None}], 2)
    assert missing is not None and missing.status == "unchecked"
    other = [{"name": "other", "sum": 1.0, "abs": 1.0}]
    renamed = compare_replicas([{"checksums": checksums(1.0)}, {"checksums": other}], 2)
    assert renamed is not None and renamed.status == "differ"
    nan = [{"name": "w", "sum": float("nan"), "abs": float("nan")}]
    assert compare_replicas([{"checksums": nan}, {"checksums": nan}], 2).status == "agree"  # type: ignore[union-attr]
    close = [{"name": "w", "sum": 1.0 + 1e-9, "abs": 1.0}]
    assert (
        compare_replicas(
            [
                {"checksums": [{"name": "w", "sum": 1.0, "abs": 1.0}]},
                {"checksums": close},
            ],
            2,
        ).status
        == "agree"
    )  # type: ignore[union-attr]


def test_an_inference_run_without_collectives_is_not_nm708() -> None:
    inference = dict(rank([], None), steps=0, backwards=0)
    result = report(inference, dict(inference))
    assert result.ok and result.independent == ""
    assert "collectives between ranks: none" in render_text(result)
