"""`neuron-migrate report`: statuses, counts that match `--fix`, the effort table and its
config, the three formats (JSON against docs/report-schema.json), and the HTML in a real browser."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import FIXTURES, ROOT

from neuron_migrate import report
from neuron_migrate.report import markdown
from neuron_migrate.report.command import collect
from neuron_migrate.report.model import DEFAULT_EFFORT, RunInfo, build

pytestmark = pytest.mark.slow  # runs the CLI and the fixes several times per report

EXAMPLE = FIXTURES / "example_project"
SCHEMA = json.loads((ROOT / "docs" / "report-schema.json").read_text(encoding="utf-8"))
NOW = dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.timezone.utc)
OPTIONS = {
    "select": (),
    "ignore": (),
    "extend_select": (),
    "exclude": (),
    "target_version": None,
    "config_file": None,
    "jobs": 1,
}

FILES = {
    "done.py": 'import torch\ndevice = torch.device("neuron")\n',
    "auto.py": "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\nxm.mark_step()\n",
    "unsafe.py": "import torch\n\n\ndef f(t):\n    return t.double()\n",
    "manual.py": "import torch_xla.core.xla_model as xm\n\ndef total(t):\n    return xm.all_reduce(xm.REDUCE_SUM, t, groups=[[0, 1]])\n",
    "clean.py": "print('hello')\n",
    "requirements.txt": "torch_xla==2.5.0\n",
}


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "neuron_migrate", *args], cwd=cwd, capture_output=True, check=False, text=True, env=env
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_each_file_gets_its_status(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    rep = collect((), OPTIONS, project, now=NOW)
    assert {r.path: r.status for r in rep.files} == {
        "auto.py": "auto",
        "clean.py": "clean",
        "done.py": "done",
        "manual.py": "manual",
        "requirements.txt": "unsafe",
        "unsafe.py": "unsafe",
    }
    assert rep.status_counts() == {"done": 1, "auto": 1, "unsafe": 2, "manual": 1, "clean": 1}
    groups = {g.concept: [(i.path, i.line, i.code) for i in g.items] for g in rep.manual}
    assert groups == {
        "collectives": [("manual.py", 4, "NM306")],
        "imports": [("manual.py", 1, "NM601")],
    }  # xm stays in use
    assert rep.total_minutes == DEFAULT_EFFORT["collectives"] + DEFAULT_EFFORT["imports"]
    assert [(i.path, i.code, i.kind) for i in rep.packaging] == [("requirements.txt", "NM620", "unsafe")]
    assert rep.run.date == "2026-01-02 03:04 UTC"


def test_counts_match_what_fix_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Imports that `--fix` removes once their uses are fixed count as safe, as `--fix` reports them."""
    copy = tmp_path / "example"
    shutil.copytree(EXAMPLE, copy)
    monkeypatch.chdir(copy)
    rep = collect((), OPTIONS, copy, now=NOW)
    fixed = cli("--fix", ".", cwd=copy)
    found = re.search(r"Found (\d+) findings \((\d+) fixed, (\d+) remaining\)", fixed.stdout)
    assert found, fixed.stdout
    assert rep.kind_totals() == {"safe": int(found[2]), "unsafe": 0, "manual": int(found[3])}
    assert {r.path: r.status for r in rep.files} == {"data.py": "clean", "train.py": "auto"}


def test_report_never_writes_source_files(tmp_path: Path) -> None:
    copy = tmp_path / "example"
    shutil.copytree(EXAMPLE, copy)
    before = snapshot(copy)
    for fmt in report.FORMATS:
        done = cli("report", ".", "--format", fmt, "-o", str(tmp_path / f"report.{fmt}"), cwd=copy)
        assert done.returncode == 0, done.stderr
        assert f"Wrote the {fmt} report to" in done.stderr
    assert snapshot(copy) == before


def test_three_formats_of_the_example(tmp_path: Path) -> None:
    outputs = {fmt: cli("report", str(EXAMPLE), "--format", fmt, cwd=tmp_path) for fmt in report.FORMATS}
    assert all(o.returncode == 0 for o in outputs.values()), {f: o.stderr for f, o in outputs.items()}
    data = json.loads(outputs["json"].stdout)
    jsonschema.Draft7Validator(SCHEMA).validate(data)
    assert data["status_counts"]["auto"] == 1 and data["totals"]["manual"] == 0
    md = outputs["md"].stdout
    for heading in (
        "### Files",
        "### Findings by family",
        "### Findings by rule",
        "### Manual work by concept",
        "### Packaging and launch scripts",
        "### Effort estimate",
        "### Beta limits hit",
        "### Settings",
    ):
        assert heading in md
    assert "**estimate**" in md
    assert_self_contained(outputs["html"].stdout)


def assert_self_contained(html: str) -> None:
    """No network: nothing is loaded from elsewhere; only links a reader may follow."""
    assert html.startswith("<!DOCTYPE html>") and '<html lang="en">' in html
    assert not re.search(r"<(link|img|iframe|object|embed)\b", html)
    assert not re.search(r"<script[^>]*\bsrc=", html) and "@import" not in html and "url(" not in html
    assert html.count("<svg") == 2 and 'role="img"' in html
    assert re.search(r"<th scope=\"col\"", html) and "<caption>" in html
    for level in ("<h1>", "<h2", "<h3>"):
        assert level in html


def test_effort_table_is_overridable_in_config(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "pyproject.toml").write_text("[tool.neuron-migrate.report-effort]\ncollectives = 90\n", encoding="utf-8")
    monkeypatch.chdir(project)
    rep = collect((), OPTIONS, project, now=NOW)
    assert rep.total_minutes == 90 + DEFAULT_EFFORT["imports"] and dict(rep.effort)["collectives"] == 90
    data = json.loads(report.render("json", rep))
    assert data["effort"]["table"]["collectives"] == 90 and data["effort"]["estimate"] is True


def test_effort_config_mistakes_are_reported(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.neuron-migrate.report-effort]\ncolectives = 90\n", encoding="utf-8")
    done = cli("report", ".", cwd=project)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "neuron-migrate: error: pyproject.toml: `report-effort` has unknown concept "
        "`colectives` (did you mean `collectives`?)"
    )
    (project / "pyproject.toml").write_text("[tool.neuron-migrate.report-effort]\ncollectives = -1\n", encoding="utf-8")
    assert cli("report", ".", cwd=project).returncode == 2


def test_report_uses_the_selection_of_check(project: Path) -> None:
    done = cli("report", ".", "--format", "json", "--select", "NM6", cwd=project)
    data = json.loads(done.stdout)
    assert {r["key"] for r in data["rules"]} == {"NM601", "NM620"}
    assert data["settings"]["selection"] == "select NM6"
    assert cli("report", ".", "--select", "NM2O1", cwd=project).returncode == 2


def test_markdown_stays_under_the_limit(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    rep = collect((), OPTIONS, project, now=NOW)
    full = markdown.render(rep)
    cut = markdown.render(rep, limit=len(full.encode()) - 1)
    assert len(cut.encode()) < len(full.encode()) and "### Settings" in cut


@pytest.mark.slow
def test_300_file_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "bench"))
    from corpus import write_corpus  # type: ignore[import-not-found]

    from neuron_migrate.run import workflow

    write_corpus(tmp_path, 300)
    monkeypatch.chdir(tmp_path)
    request = workflow.request_from(
        (),
        {
            **OPTIONS,
            "fix": False,
            "diff": False,
            "unsafe_fixes": None,
            "output_format": None,
            "add_noqa": False,
            "stdin_filename": None,
            "baseline": None,
            "write_baseline": None,
            "since": None,
        },
    )
    results = workflow.check_paths(request, tmp_path)
    rep = build(results, RunInfo("0", "2.14", "all", "2026-01-02 03:04 UTC"))
    assert len(rep.files) == 300 and rep.manual
    jsonschema.Draft7Validator(SCHEMA).validate(json.loads(report.render("json", rep)))
    assert len(report.render("md", rep).encode()) < 1024 * 1024
    assert_self_contained(report.render("html", rep))


@pytest.mark.slow
def test_html_in_a_real_browser(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import browser

    binary = browser.chromium()
    monkeypatch.chdir(project)
    html = report.render("html", collect((), OPTIONS, project, now=NOW))
    work = tmp_path / "browser"
    work.mkdir()
    for width in (1280, 375):
        seen = browser.probe(binary, html, width, 900, work)
        assert seen["viewport"] == width
        assert seen["errors"] == [] and seen["console"] == [], seen
        assert seen["scrollWidth"] <= width and seen["overflow"] == [], seen  # nothing sticks out of the page
        for chart in ("chart-status", "chart-families"):
            box = seen["charts"][chart]
            assert box["visible"] and box["bars"] > 0 and box["height"] > 20, seen
            assert box["left"] >= 0 and box["right"] <= width, seen
        assert seen["sorted"] == "ascending"  # the sort script ran
        if width >= 1280:
            assert seen["scrolling"] == [], seen  # at desktop width no table needs its own scroll bar
    shot = work / "report.png"
    page = work / "report.html"
    page.write_text(html, encoding="utf-8")
    browser.screenshot(binary, page, shot, 1280, 1000, work)


def test_browser_probe_catches_errors_and_overflow(tmp_path: Path) -> None:
    """The browser test can fail: a script error and a too-wide element are seen."""
    import browser

    binary = browser.chromium()
    bad = "<!DOCTYPE html><html><head></head><body><script>missing();</script><div style='width:3000px'>x</div></body></html>"
    seen = browser.probe(binary, bad, 1280, 600, tmp_path)
    assert seen["errors"] and seen["console"] and seen["overflow"] and seen["charts"]["chart-status"] is None


def test_readme_shows_the_report() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/report-example.png" in readme and (ROOT / "docs" / "report-example.png").is_file()
    quickstart = readme[readme.index("## Quickstart") : readme.index("## Usage")]
    first, report_step = quickstart.index("1. "), quickstart.index("neuron-migrate report")
    assert first < report_step < quickstart.index("2. ")


def test_readme_test_command_is_what_ci_runs() -> None:
    """The README's second Quickstart step is `.ci/run`, Chromium install included."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    step = readme[readme.index("\n2. ") : readme.index("## Usage")]
    (block,) = re.findall(r"```sh\n(.*?)```", step, re.DOTALL)
    commands = [line.strip() for line in block.splitlines() if line.strip()]
    ci = [
        line
        for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith(("#", "set ", "cd "))
    ]
    assert commands == ci and any("apt-get install -y -qq chromium" in c for c in ci)


# -- issue 12, rough edge 12: `explain` and `rules` ----------------------------------------------

INTERNAL = re.compile(r"torchneuron-facts|facts §|§\d|\[(C|C-old|I|B)\]")


@pytest.mark.parametrize("code", ["NM101", "NM201", "NM308", "NM309", "NM601"])
def test_use_instead_has_no_torch_xla(code: str) -> None:
    from neuron_migrate import docs

    text = docs.explain(code)
    assert text is not None and "Use instead" in text
    assert "torch_xla" not in text.split("Use instead", 1)[1].split("Sources", 1)[0]


def test_use_instead_is_fully_migrated_for_every_rule() -> None:
    """Whatever torch_xla is left in an example's "Use instead" is still needed: fixing it again,
    with every rule and unsafe fixes on, changes nothing."""
    from neuron_migrate import docs
    from neuron_migrate.catalogue import load_catalogue

    for spec in load_catalogue():
        found = docs.example(spec.code)
        if found is None or found[1] is None or docs.fence(spec.code) != "python":
            continue
        assert docs.migrated(found[1]) == found[1], spec.code


def test_sources_are_public_and_listed() -> None:
    from neuron_migrate import docs
    from neuron_migrate.catalogue import load_catalogue

    for spec in load_catalogue():
        text = docs.explain(spec.code) or ""
        assert not INTERNAL.search(text), (spec.code, INTERNAL.search(text))
        for tag in re.findall(r"\bS\d+\b", spec.source):
            assert tag in docs.load_sources(), (spec.code, tag)
    assert not INTERNAL.search(docs.render_rules("text") + docs.render_rules("markdown") + docs.render_rules("json"))
    assert (ROOT / "docs" / "sources.md").read_text(encoding="utf-8") == docs.render_sources(), (
        "docs/sources.md is stale: python -m neuron_migrate.docs sources > docs/sources.md"
    )
    explained = docs.explain("NM306") or ""
    assert "S11  How to use torch.distributed on Neuron: https://awsdocs-neuron.readthedocs-hosted.com/" in explained


def test_rules_listing_wraps_to_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from neuron_migrate import docs

    for columns in (80, 120):
        monkeypatch.setenv("COLUMNS", str(columns))
        lines = docs.render_rules("text").splitlines()
        assert max(len(line) for line in lines) <= columns
        assert lines[0].startswith("NM101  xla_device_call")


def test_smoke_results_join_the_report(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from neuron_migrate.smoke.report import Event, Fallback, SmokeReport

    smoke = SmokeReport(
        script="train.py",
        status="ok",
        device="emulated",
        target_version="2.14",
        nproc=2,
        steps=2,
        forwards=2,
        backwards=2,
        stop_reason="steps",
        wall_time_s=1.0,
        fallbacks=(Fallback("aten::linalg_svd", False, "cpu-fallback", "compat"),),
        events=(Event("float64", "aten::add", "float64 on neuron", 3),),
    )
    monkeypatch.chdir(project)
    rep = collect((), OPTIONS, project, now=NOW, smoke=smoke)
    assert rep.smoke is not None and rep.smoke.ranks == 2 and rep.smoke.fallbacks == ("aten::linalg_svd",)
    assert rep.smoke.float64 == 3 and rep.smoke.fallbacks_predicted
    data = json.loads(report.render("json", rep))
    jsonschema.Draft7Validator(SCHEMA).validate(data)
    assert "### Smoke run" in report.render("md", rep) and "aten::linalg_svd" in report.render("html", rep)
