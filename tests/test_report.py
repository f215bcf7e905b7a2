"""`neuron-migrate report`: status from facts (git history, a baseline, recognised `neuron` code),
counts equal to `check`'s, the plan (folders, work order from the import graph, blockers, effort
range), `--compare`, the cache, the three formats (JSON against docs/report-schema.json), and the
HTML in a real browser at 375 px and 1,400 px."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import FIXTURES, ROOT

from neuron_migrate import report
from neuron_migrate.effort import DEFAULT_EFFORT
from neuron_migrate.report import facts, markdown
from neuron_migrate.report.command import collect
from neuron_migrate.report.model import EFFORT_RANGE, STATUSES, RunInfo
from neuron_migrate.report.plan import build

pytestmark = pytest.mark.slow  # runs the CLI and the fixes several times per report

EXAMPLE = FIXTURES / "example_project"
SCHEMA = json.loads((ROOT / "docs" / "report-schema.json").read_text(encoding="utf-8"))
SCRIPT = Path(sys.executable).with_name("neuron-migrate")
NOW = dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.timezone.utc)
OPTIONS = {
    "select": (),
    "ignore": (),
    "extend_select": (),
    "exclude": (),
    "target_version": None,
    "config_file": None,
    "jobs": 1,
    "no_cache": True,
}

FILES = {
    "done.py": 'import torch\ndevice = torch.device("neuron")\n',
    "auto.py": "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\nxm.mark_step()\n",
    "unsafe.py": "import torch\n\n\ndef f(t):\n    return t.double()\n",
    "manual.py": "import torch_xla.core.xla_model as xm\n\ndef total(t):\n    return xm.all_reduce(xm.REDUCE_SUM, t, groups=[[0, 1]])\n",
    "clean.py": "print('hello')\n",
    "words.py": "# the neuron count of each layer; neurons are cheap\nneurons = 4\nlabel = 'neurons'\n",
    "sharded.py": "import torch_xla.distributed.spmd as xs\n\n\ndef shard(t, mesh):\n    xs.mark_sharding(t, mesh, (0, 1))\n",
    "requirements.txt": "torch_xla==2.5.0\n",
}


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it."""
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), **(env or {})}
    return subprocess.run([str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, env=environment, check=False)


def report_json(*args: str, cwd: Path, env: dict[str, str] | None = None) -> dict:
    done = cli("report", "--format", "json", "-q", *args, cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.Draft7Validator(SCHEMA).validate(data)
    return data


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".neuron_migrate_cache" not in p.parts
    }


def test_each_file_gets_its_status(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    rep = collect((), OPTIONS, project, now=NOW)
    assert {r.path: r.status for r in rep.files} == {
        "auto.py": "auto",
        "clean.py": "clean",
        "done.py": "done",  # holds `torch.device("neuron")`: code the tool writes
        "manual.py": "manual",
        "requirements.txt": "unsafe",
        "sharded.py": "blocked",  # NM312 is a blocker: its torch_xla import stays
        "unsafe.py": "unsafe",
        "words.py": "clean",  # the word `neuron` alone is no migration
    }
    assert rep.status_counts() == {"blocked": 1, "manual": 1, "unsafe": 2, "auto": 1, "done": 1, "clean": 2}
    groups = {g.concept: [(i.path, i.line, i.code) for i in g.items] for g in rep.manual}
    assert groups["collectives"] == [("manual.py", 4, "NM306")]
    assert groups["spmd"] == [("sharded.py", 5, "NM312")]
    assert [(b.concept, b.count, [(i.path, i.line) for i in b.first]) for b in rep.blockers] == [
        ("spmd", 1, [("sharded.py", 5)])
    ]
    assert rep.blockers[0].guide.endswith("#nm312")
    assert [(i.path, i.code, i.kind) for i in rep.packaging] == [("requirements.txt", "NM620", "unsafe")]
    assert rep.run.date == "2026-01-02 03:04 UTC"


def test_recognised_neuron_code() -> None:
    """`done` without history needs code the tool writes, never the word."""
    for text in (
        'x.to("neuron")\n',
        'torch.device("neuron:0")\n',
        'torch.zeros(2, device="neuron")\n',
        "import torch_neuronx\n",
        "torch.neuron.synchronize()\n",
    ):
        assert facts.facts_of(text).neuron, text
    for text in (
        "# runs on neuron\n",
        '"""neuron"""\n',
        "neurons = 3\n",
        'name = "neuron"\n',
        'print("neuron")\n',
        "def neuron(): pass\n",
    ):
        assert not facts.facts_of(text).neuron, text


def test_counts_match_check_statistics_on_the_fixture_corpus(tmp_path: Path) -> None:
    """Every count in the report is `check`'s for the same settings: per rule as
    `check --statistics`, the totals as `check`'s summary, and what is left after
    `check --fix` and `--fix --unsafe-fixes` (measured on a copy)."""
    trust = {"NEURON_MIGRATE_ALLOW_PLUGINS": "1"}  # fixtures/_project names a plugin: run it in both
    corpus = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, corpus)
    stats = cli(
        "check",
        "fixtures",
        "--statistics",
        "--output-format",
        "json",
        "--exit-zero",
        "--no-cache",
        cwd=tmp_path,
        env=trust,
    )
    assert stats.returncode == 0, stats.stderr
    per_rule = {row["code"]: row["count"] for row in json.loads(stats.stdout)}
    data = report_json("fixtures", "--no-cache", cwd=tmp_path, env=trust)
    assert {row["key"]: row["total"] for row in data["rules"]} == per_rule
    assert sum(row["total"] for row in data["families"]) == sum(per_rule.values()) == data["check"]["found"]
    summary = cli("check", "fixtures", "--no-cache", "--exit-zero", cwd=tmp_path, env=trust).stdout
    assert f"Found {data['check']['found']} findings." in summary
    assert f"[*] {data['check']['fixable']} fixable with the `--fix` option." in summary
    assert f"[-] {data['check']['unsafe_fixable']} more fixable" in summary
    assert sum(data["status_counts"].values()) == len(data["files"])
    after = tmp_path / "after"
    shutil.copytree(corpus, after / "fixtures")
    for flags, key in ((("--fix",), "left_after_fix"), (("--fix", "--unsafe-fixes"), "left_after_unsafe_fixes")):
        shutil.rmtree(after)
        shutil.copytree(corpus, after / "fixtures")
        done = cli(
            "check",
            "fixtures",
            *flags,
            "--no-cache",
            "--exit-zero",
            "--statistics",
            "--output-format",
            "json",
            cwd=after,
            env=trust,
        )
        assert sum(row["count"] for row in json.loads(done.stdout)) == data["check"][key], key


def test_counts_match_what_fix_does(tmp_path: Path) -> None:
    """Imports that `--fix` removes once their uses are fixed count as safe, as `--fix` reports them."""
    copy = tmp_path / "example"
    shutil.copytree(EXAMPLE, copy)
    data = report_json(".", cwd=copy)
    fixed = cli("--fix", ".", cwd=copy)
    found = re.search(r"Found (\d+) findings \((\d+) fixed, (\d+) remaining\)", fixed.stdout)
    assert found, fixed.stdout
    assert data["totals"] == {"safe": int(found[2]), "unsafe": 0, "manual": int(found[3])}
    assert data["check"]["left_after_fix"] == int(found[3])
    assert {r["filename"]: r["status"] for r in data["files"]} == {"data.py": "clean", "train.py": "auto"}
    after = report_json(".", cwd=copy)  # fixed: the neuron code it now holds is recognised
    assert {r["filename"]: r["status"] for r in after["files"]} == {"data.py": "clean", "train.py": "done"}


def git(*args: str, cwd: Path) -> str:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(cwd),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=True)
    return done.stdout.strip()


BEFORE = {
    "train.py": "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n",
    "ckpt.py": 'import torch_xla.core.xla_model as xm\n\n\ndef save(model):\n    xm.save(model.state_dict(), "m.pt")\n',
    "notes.py": "# neuron counts per layer: the neurons of the net\nneurons = 4\n",
    "left.py": "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n",
}
AFTER = {
    "train.py": 'import torch\n\ndevice = torch.device("neuron")\n',
    "ckpt.py": 'import torch\n\n\ndef save(model):\n    torch.save(model.state_dict(), "m.pt")\n',
    "added.py": "print('new since the migration began')\n",
}


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """A repository whose first commit uses torch_xla and whose second migrated two files."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    for name, text in BEFORE.items():
        (repo / name).write_text(text, encoding="utf-8")
    git("add", ".", cwd=repo)
    git("commit", "-qm", "torch_xla", cwd=repo)
    git("tag", "start", cwd=repo)
    for name, text in AFTER.items():
        (repo / name).write_text(text, encoding="utf-8")
    git("add", ".", cwd=repo)
    git("commit", "-qm", "migrate", cwd=repo)
    return repo


def test_done_comes_from_git_history(history: Path) -> None:
    data = report_json(".", "--since", "start", cwd=history)
    assert {r["filename"]: r["status"] for r in data["files"]} == {
        "added.py": "clean",  # added since: never used torch_xla
        "ckpt.py": "done",  # used torch_xla at `start`, has none now, no neuron code to see
        "left.py": "auto",
        "notes.py": "clean",  # mentions neuron, never used torch_xla
        "train.py": "done",
    }
    assert data["settings"]["history"] == "git start"
    without = report_json(".", cwd=history)
    statuses = {r["filename"]: r["status"] for r in without["files"]}
    assert statuses["ckpt.py"] == "clean" and statuses["train.py"] == "done" and statuses["notes.py"] == "clean"
    assert cli("report", ".", "--since", "nosuchref", cwd=history).returncode == 2


def test_done_comes_from_a_baseline(tmp_path: Path) -> None:
    folder = tmp_path / "b"
    folder.mkdir()
    for name, text in BEFORE.items():
        (folder / name).write_text(text, encoding="utf-8")
    assert cli("check", ".", "--write-baseline", "before.json", cwd=folder).returncode == 0
    for name, text in AFTER.items():
        (folder / name).write_text(text, encoding="utf-8")
    data = report_json(".", "--baseline", "before.json", cwd=folder)
    statuses = {r["filename"]: r["status"] for r in data["files"]}
    assert statuses["ckpt.py"] == "done" and statuses["notes.py"] == "clean" and statuses["left.py"] == "auto"
    assert data["check"]["found"] == 2  # the baseline hides nothing in a report


def test_paths_are_validated(project: Path) -> None:
    done = cli("report", "nothere/", cwd=project)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == "neuron-migrate: error: no such file or folder: nothere"
    assert cli("report", "nothere.py", "clean.py", cwd=project).returncode == 2


def test_from_target_select_and_ignore_work_as_in_check(project: Path) -> None:
    (project / "gpu.py").write_text('import torch\nx = torch.zeros(2).cuda()\ny = x.to("cuda")\n', encoding="utf-8")
    xla = report_json(".", cwd=project)
    assert next(r for r in xla["files"] if r["filename"] == "gpu.py")["status"] == "clean"
    both = report_json(".", "--from", "xla,cuda", cwd=project)
    assert next(r for r in both["files"] if r["filename"] == "gpu.py")["status"] in ("auto", "unsafe")
    assert both["settings"]["from"] == ["xla", "cuda"]
    stats = cli(
        "check", ".", "--from", "xla,cuda", "--statistics", "--output-format", "json", "--exit-zero", cwd=project
    )
    assert {r["key"]: r["total"] for r in both["rules"]} == {r["code"]: r["count"] for r in json.loads(stats.stdout)}
    accel = report_json(".", "--target", "accelerator", cwd=project)
    assert accel["settings"]["target"] == "accelerator"
    only = report_json(".", "--select", "NM6", cwd=project)
    assert {r["key"] for r in only["rules"]} == {"NM601", "NM620"}
    assert only["settings"]["selection"] == "select NM6"
    ignored = report_json(".", "--ignore", "NM6", cwd=project)
    assert not {r["key"] for r in ignored["rules"]} & {"NM601", "NM620"}
    assert cli("report", ".", "--select", "NM2O1", cwd=project).returncode == 2
    assert cli("report", ".", "--from", "tpu", cwd=project).returncode == 2


def test_report_never_writes_source_files(tmp_path: Path) -> None:
    copy = tmp_path / "example"
    shutil.copytree(EXAMPLE, copy)
    before = snapshot(copy)
    for fmt in report.FORMATS:
        done = cli("report", ".", "--format", fmt, "-o", str(tmp_path / f"report.{fmt}"), cwd=copy)
        assert done.returncode == 0, done.stderr
        assert f"Wrote the {fmt} report to" in done.stderr
    assert snapshot(copy) == before


def test_a_warm_report_reads_the_cache(project: Path) -> None:
    """The second run reads check's result cache and the report's own (kinds, facts); an edited
    file is checked again."""
    import time

    for path in project.iterdir():  # older than the cache's racy window, so their stamps vouch for them
        os.utime(path, (time.time() - 60, time.time() - 60))
    cold = report_json(".", cwd=project)
    cache = project / ".neuron_migrate_cache"
    names = sorted(p.name for p in cache.iterdir())
    assert any(n.startswith("report-kinds-") for n in names) and "report-facts.idx" in names
    stamps = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    warm = report_json(".", cwd=project)
    assert {k: v for k, v in warm.items() if k != "settings"} == {k: v for k, v in cold.items() if k != "settings"}
    assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir()} == stamps  # nothing recomputed, nothing written
    (project / "auto.py").write_text('import torch\ndevice = torch.device("neuron")\n', encoding="utf-8")
    edited = report_json(".", cwd=project)
    assert next(r for r in edited["files"] if r["filename"] == "auto.py")["status"] == "done"
    assert edited["check"]["found"] == cold["check"]["found"] - 3


def test_progress_line_on_a_terminal(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report draws check's progress bar (on a terminal, for many files)."""
    import io

    from neuron_migrate import cli as cli_module
    from neuron_migrate.cli import common

    for n in range(25):
        (project / f"extra_{n}.py").write_text("print(1)\n", encoding="utf-8")

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    monkeypatch.setattr(common, "stderr", lambda: stream)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.chdir(project)
    with pytest.raises(SystemExit) as exit_info:
        cli_module.main(["report", ".", "--format", "json", "-o", str(project / "r.json"), "-j", "1"])
    assert exit_info.value.code in (0, None)
    assert re.search(r"\] +33/33", stream.getvalue()), stream.getvalue()[-300:]


def test_work_is_ordered_by_the_import_graph(tmp_path: Path) -> None:
    folder = tmp_path / "g"
    (folder / "pkg").mkdir(parents=True)
    xla = "import torch_xla.core.xla_model as xm\n\n"
    (folder / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (folder / "pkg" / "dist.py").write_text(
        xla + "def total(t):\n    return xm.all_reduce('sum', t)\n", encoding="utf-8"
    )
    (folder / "pkg" / "util.py").write_text(xla + "from . import dist\nxm.mark_step()\n", encoding="utf-8")
    for n in range(3):
        (folder / f"train_{n}.py").write_text(xla + "from pkg.dist import total\nxm.mark_step()\n", encoding="utf-8")
    data = report_json(".", cwd=folder)
    order = [(r["filename"], r["imported_by"]) for r in data["work"]]
    assert order[0] == ("pkg/dist.py", 4)  # three scripts and util.py import it
    assert [name for name, _ in order[1:]] == ["pkg/util.py", "train_0.py", "train_1.py", "train_2.py"]
    graph = facts.importers({"a/b.py": facts.facts_of("from .c import x\n"), "a/c.py": facts.facts_of("import os\n")})
    assert graph == {"a/b.py": frozenset(), "a/c.py": frozenset({"a/b.py"})}


def test_folders_roll_up(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    (folder / "a" / "b").mkdir(parents=True)
    (folder / "a" / "x.py").write_text(FILES["manual.py"], encoding="utf-8")
    (folder / "a" / "b" / "y.py").write_text(FILES["auto.py"], encoding="utf-8")
    (folder / "top.py").write_text(FILES["clean.py"], encoding="utf-8")
    data = report_json(".", cwd=folder)
    rows = {f["folder"]: f for f in data["folders"]}
    assert list(rows) == [".", "a", "a/b"]
    assert rows["."]["files"] == 3 and rows["a"]["files"] == 2 and rows["a/b"]["files"] == 1
    assert rows["a"]["status_counts"]["manual"] == 1 and rows["a"]["status_counts"]["auto"] == 1
    total = sum(f["total"] for f in data["files"])
    assert rows["."]["safe"] + rows["."]["unsafe"] + rows["."]["manual"] == total
    assert rows["a/b"]["manual"] == 0 and rows["a"]["minutes"] == rows["."]["minutes"] > 0
    md = cli("report", ".", "--format", "md", cwd=folder).stdout
    assert "### By folder" in md and "| `a/b` | 1 |" in md
    html = cli("report", ".", cwd=folder).stdout
    assert html.count('<details class="tree') == 3


def test_effort_is_a_range_and_overridable_in_config(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "pyproject.toml").write_text("[tool.neuron-migrate.report-effort]\ncollectives = 90\n", encoding="utf-8")
    monkeypatch.chdir(project)
    rep = collect((), OPTIONS, project, now=NOW)
    # manual.py's `xm.REDUCE_SUM` stays with the all_reduce it is passed to (NM307): its own item
    typical = 90 + DEFAULT_EFFORT["spmd"] + 2 * DEFAULT_EFFORT["imports"] + DEFAULT_EFFORT["distributed"]
    assert rep.total_minutes == typical and dict(rep.effort)["collectives"] == 90
    low, high = EFFORT_RANGE
    assert (rep.estimate.low, rep.estimate.high) == (round(typical * low), round(typical * high))
    data = json.loads(report.render("json", rep))
    assert data["effort"]["table"]["collectives"] == 90 and data["effort"]["estimate"] is True
    assert data["effort"]["hours"] == [round(typical * low / 60, 1), round(typical * high / 60, 1)]
    assert data["effort"]["person_days"][1] == round(typical * high / 60 / 6, 1)
    assert "person-days" in report.render("md", rep) and "minutes" not in markdown.hours(rep)


def test_every_concept_has_an_effort_and_a_label() -> None:
    """Every concept has minutes, except `nxd`, whose findings are costed by effort tier (each
    NxD rule names one); the tiers are the catalogue's, and docs/report.md lists both tables."""
    from neuron_migrate.catalogue import TIERS, load_catalogue
    from neuron_migrate.effort import CONCEPTS, TIER_EFFORT, TIER_MEANING, TIERED_CONCEPT, concept_of

    assert set(DEFAULT_EFFORT) | {TIERED_CONCEPT} == set(CONCEPTS) and TIERED_CONCEPT not in DEFAULT_EFFORT
    assert tuple(TIER_EFFORT) == tuple(TIER_MEANING) == TIERS
    assert concept_of("NM312") == "spmd" and concept_of("NM624") == "packaging" and concept_of("NM311") == "fsdp"
    nxd = [spec for spec in load_catalogue() if concept_of(spec.code) == TIERED_CONCEPT]
    assert {s.code for s in nxd} == {f"NM{n}" for n in range(320, 341)}
    assert all(spec.tier in TIERS for spec in nxd), [s.code for s in nxd if not s.tier]
    doc = (ROOT / "docs" / "report.md").read_text(encoding="utf-8").split("## The effort table", 1)[1]
    documented = re.findall(r"^\| `([a-z-]+)` \|", doc, re.MULTILINE)
    assert [c for c in documented if c in CONCEPTS] == [c for c in CONCEPTS if c in DEFAULT_EFFORT]
    assert [t for t in documented if t in TIERS] == list(TIERS)
    rows = re.findall(r"^\| `([a-z-]+)` \| .* \| (\d+) \|$", doc, re.MULTILINE)
    assert {k: int(v) for k, v in rows} == {**DEFAULT_EFFORT, **TIER_EFFORT}  # the documented minutes are the data


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


def test_compare_shows_progress(project: Path, tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    assert cli("report", ".", "--format", "json", "-o", str(old), cwd=project).returncode == 0
    gone = sum(r["total"] for r in json.loads(old.read_text())["files"] if r["filename"] in ("auto.py", "manual.py"))
    assert cli("check", "--fix", "auto.py", cwd=project).returncode == 0
    (project / "manual.py").write_text("import torch\n\ndef total(t):\n    return t\n", encoding="utf-8")
    data = report_json(".", "--compare", str(old), cwd=project)
    c = data["comparison"]
    assert c["newly_done"] == ["auto.py"]  # manual.py has no neuron code: clean, not done
    assert c["findings"]["old"] - c["findings"]["new"] == gone == 6
    assert c["blockers"] == {"old": 1, "new": 1}
    assert c["status_counts"]["old"]["auto"] == 1 and c["status_counts"]["new"]["auto"] == 0
    assert {r["code"]: (r["old"], r["new"]) for r in c["rules"]}["NM306"] == (1, 0)
    md = cli("report", ".", "--format", "md", "--compare", str(old), cwd=project).stdout
    assert "### Progress since" in md and "1 file newly done" in md and "█" in md
    html = cli("report", ".", "--compare", str(old), cwd=project).stdout
    assert 'id="chart-compare"' in html and html.index('id="progress"') < html.index('id="work"')
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    bad = cli("report", ".", "--compare", str(tmp_path / "bad.json"), cwd=project)
    assert bad.returncode == 2 and "not a `neuron-migrate report --format json` file" in bad.stderr


def test_three_formats_of_the_example(tmp_path: Path) -> None:
    outputs = {fmt: cli("report", str(EXAMPLE), "--format", fmt, "--no-cache", cwd=tmp_path) for fmt in report.FORMATS}
    assert all(o.returncode == 0 for o in outputs.values()), {f: o.stderr for f, o in outputs.items()}
    data = json.loads(outputs["json"].stdout)
    jsonschema.Draft7Validator(SCHEMA).validate(data)
    assert data["schema_version"] == 2 and data["statuses"] == list(STATUSES)
    assert data["status_counts"]["auto"] == 1 and data["totals"]["manual"] == 0
    md = outputs["md"].stdout
    headings = [
        "### How this relates to `check`",
        "### Blockers",
        "### The work, in order",
        "### By folder",
        "### Effort estimate",
        "### Findings by family",
        "### Manual work by concept",
        "### Packaging and launch scripts",
        "### Beta limits hit",
        "### Settings",
        "### Files",
    ]
    assert [md.index(h) for h in headings] == sorted(md.index(h) for h in headings)  # plan first, files last
    assert "**estimate**" in md
    assert_self_contained(outputs["html"].stdout)


def test_schema_rejects_what_it_must(project: Path) -> None:
    """The schema is strict: the test above could not pass with a wrong shape."""
    data = report_json(".", cwd=project)
    validator = jsonschema.Draft7Validator(SCHEMA)
    for broken in (
        {**data, "extra": 1},
        {**data, "files": [{**data["files"][0], "status": "finished"}]},
        {**data, "effort": {**data["effort"], "hours": [1]}},
        {k: v for k, v in data.items() if k != "work"},
    ):
        assert list(validator.iter_errors(broken))


def assert_self_contained(html: str) -> None:
    """No network: nothing is loaded from elsewhere, and the page's policy forbids it."""
    assert html.startswith("<!DOCTYPE html>") and '<html lang="en">' in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r"<(link|img|iframe|object|embed)\b", html)
    assert not re.search(r"<script[^>]*\bsrc=", html) and "@import" not in html and "url(" not in html
    assert html.count("<svg") >= 2 and 'role="img"' in html
    assert re.search(r"<th scope=\"col\"", html) and "<caption>" in html
    assert "prefers-color-scheme:dark" in html
    positions = [html.index(f'id="{s}"') for s in ("blockers", "work", "folders", "effort", "files")]
    assert positions == sorted(positions)  # the plan first, the file list last


def test_markdown_stays_under_the_limit(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    rep = collect((), OPTIONS, project, now=NOW)
    full = markdown.render(rep)
    cut = markdown.render(rep, limit=len(full.encode()) - 1)
    assert len(cut.encode()) < len(full.encode()) and "### Settings" in cut
    assert "`clean.py`" not in full and "2 clean files are not listed." in full


@pytest.mark.slow
def test_300_file_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "bench"))
    from corpus import write_corpus  # type: ignore[import-not-found]

    write_corpus(tmp_path, 300)
    monkeypatch.chdir(tmp_path)
    rep = collect((), OPTIONS, tmp_path, now=NOW)
    assert len(rep.files) == 300 and rep.manual and rep.work
    assert sum(f.files for f in rep.folders if f.depth == 0) == 300
    jsonschema.Draft7Validator(SCHEMA).validate(json.loads(report.render("json", rep)))
    assert len(report.render("md", rep).encode()) < 1024 * 1024
    assert_self_contained(report.render("html", rep))
    assert build([], RunInfo("0", "2.14", "all", "d")).work == ()


def browser_project(project: Path) -> None:
    """The fixture project, with deep folders and long names that used to wrap at 375 px."""
    deep = project / "src" / "very_long_package_name_for_wrapping" / "distributed_training_utilities"
    deep.mkdir(parents=True)
    (deep / "collective_communication_helpers.py").write_text(FILES["manual.py"], encoding="utf-8")
    (deep / "sharded_model_parallel_layers.py").write_text(FILES["sharded.py"], encoding="utf-8")
    (project / "src" / "run_training_loop.py").write_text(FILES["auto.py"], encoding="utf-8")


@pytest.mark.slow
def test_html_in_a_real_browser(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import browser

    binary = browser.chromium()
    browser_project(project)
    monkeypatch.chdir(project)
    rep = collect((), OPTIONS, project, now=NOW)
    html = report.render("html", rep)
    work = tmp_path / "browser"
    work.mkdir()
    statuses = rep.status_counts()
    for width, dark in ((1400, False), (375, False), (375, True)):
        seen = browser.probe(binary, html, width, 900, work, dark=dark)
        assert seen["viewport"] == width and seen["dark"] is dark
        assert seen["errors"] == [] and seen["console"] == [], seen
        assert seen["requests"] == [], seen  # no network request (and the page's policy forbids one)
        assert seen["scrollWidth"] <= width and seen["overflow"] == [], seen  # nothing sticks out of the page
        assert seen["badges"] > 10 and seen["wrapped"] == [], seen  # no badge breaks over two lines
        assert seen["narrowPaths"] == [], seen  # no file column squeezed to a few characters
        for chart in ("chart-status", "chart-families"):
            box = seen["charts"][chart]
            assert box["visible"] and box["bars"] > 0 and box["height"] > 20, seen
            assert box["left"] >= 0 and box["right"] <= width, seen
        assert seen["sorted"] == "ascending" and seen["sortedAscending"] and seen["sortedDescending"], seen
        assert seen["filters"] == {s: {"shown": n, "right": True, "expected": n} for s, n in statuses.items() if n}, (
            seen
        )
        assert seen["textFilterShown"] == 0
        assert seen["folders"] == len(rep.folders)
        assert seen["order"].index("work") < seen["order"].index("folders") < seen["order"].index("files")
        if width >= 1400:
            assert seen["scrolling"] == [], seen  # at desktop width no table needs its own scroll bar
        assert seen["background"] == ("rgb(13, 17, 23)" if dark else "rgb(255, 255, 255)")


def test_browser_probe_catches_errors_and_overflow(tmp_path: Path) -> None:
    """The browser test can fail: a script error, a too-wide element, a wrapped badge, a squeezed
    path and a network request are all seen."""
    import browser

    binary = browser.chromium()
    bad = (
        "<!DOCTYPE html><html><head></head><body><script>missing();</script><div style='width:3000px'>x</div>"
        "<div style='width:40px'><span class='badge'>manual work</span></div>"
        "<table><tr><td class='path' style='width:30px'>a/b/c/d/e/f.py</td></tr></table>"
        "<img src='http://127.0.0.1:9/x.png'></body></html>"
    )
    seen = browser.probe(binary, bad, 1280, 600, tmp_path)
    assert seen["errors"] and seen["console"] and seen["overflow"] and seen["charts"]["chart-status"] is None
    assert seen["wrapped"] and seen["narrowPaths"] and seen["requests"], seen


def test_screenshots_for_the_readme(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Screenshots at 1,400 px and 375 px, light and dark (kept under /tmp for a person to look at);
    the README's docs/report-example.png is one of them."""
    import browser

    binary = browser.chromium()
    browser_project(project)
    monkeypatch.chdir(project)
    page = tmp_path / "report.html"
    page.write_text(report.render("html", collect((), OPTIONS, project, now=NOW)), encoding="utf-8")
    out = Path(os.environ.get("REPORT_SHOTS", tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    for width, height, dark in ((1400, 1800, False), (1400, 1800, True)):
        name = f"report-{width}{'-dark' if dark else ''}.png"
        browser.screenshot(binary, page, out / name, width, height, tmp_path, dark)
    browser.screenshot_narrow(binary, page, out / "report-375.png", 375, 1800, tmp_path)
    example = tmp_path / "example.html"
    copy = tmp_path / "example"
    shutil.copytree(EXAMPLE, copy)
    monkeypatch.chdir(copy)
    example.write_text(report.render("html", collect((), OPTIONS, copy, now=NOW)), encoding="utf-8")
    browser.screenshot(binary, example, out / "report-example.png", 1400, 1100, tmp_path)
    assert all((out / n).stat().st_size > 10_000 for n in ("report-1400.png", "report-375.png", "report-example.png"))


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
    from neuron_migrate import docs, sources
    from neuron_migrate.catalogue import load_catalogue

    for spec in load_catalogue():
        text = docs.explain(spec.code) or ""
        assert not INTERNAL.search(text), (spec.code, INTERNAL.search(text))
        for tag in re.findall(r"\bS\d+\b", spec.source):
            assert tag in sources.load_sources(), (spec.code, tag)
    assert not INTERNAL.search(docs.render_rules("text") + docs.render_rules("markdown") + docs.render_rules("json"))
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
