"""The rough edges a new user hits (issue 12, part 2), each pinned by a test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from neuron_migrate.catalogue import toml_module
from neuron_migrate.cli import main

XLA = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\nxm.mark_step()\n"


def invoke(args: list[str], cwd: Path, stdin: str | None = None) -> Result:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, args, input=stdin, catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(XLA, encoding="utf-8")
    return tmp_path


# 1. rule codes on the command line are validated like the config's
@pytest.mark.parametrize(
    ("flag", "value", "hint"),
    [
        ("--select", "NM2O1", "(did you mean NM201?)"),
        ("--select", "E501", "not a rule code"),
        ("--ignore", "NM2010", "not a rule code"),
        ("--extend-select", "NM101,NM0", "matches no rule"),
    ],
)
def test_bad_rule_codes_stop_the_run(project: Path, flag: str, value: str, hint: str) -> None:
    result = invoke([flag, value, "."], project)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"neuron-migrate: error: {flag} has ") and hint in result.stderr
    assert "All checks passed" not in result.output


def test_good_rule_codes_still_work(project: Path) -> None:
    assert invoke(["--select", "NM2,NM101", "."], project).exit_code == 1
    assert invoke(["--select", "ALL", "--ignore", "NM1,NM2,NM6", "."], project).exit_code == 0


# 2. a mistyped command is not a path; `check -` reads stdin
@pytest.mark.parametrize(("word", "expected"), [("chek", "'check'"), ("rulez", "'rules'"), ("explian", "'explain'")])
def test_mistyped_command(project: Path, word: str, expected: str) -> None:
    result = invoke([word], project)
    assert result.exit_code == 2
    assert result.stderr == f"neuron-migrate: error: unknown command '{word}'; did you mean {expected}?\n"


def test_a_file_named_like_a_command_is_still_checked(project: Path) -> None:
    (project / "chek").mkdir()
    (project / "chek" / "t.py").write_text(XLA, encoding="utf-8")
    assert invoke(["chek"], project).exit_code == 1


def test_check_dash_reads_stdin(project: Path) -> None:
    result = invoke(["check", "-"], project, stdin=XLA)
    assert result.exit_code == 1 and "-:4:1: NM201" in result.stdout


# 4. nothing matched
def test_warns_when_no_file_was_checked(project: Path) -> None:
    (project / "NOTES.md").write_text("torch_xla\n", encoding="utf-8")
    (project / "empty").mkdir()
    for target in ("NOTES.md", "empty"):
        result = invoke(["check", target], project)
        assert result.exit_code == 0
        assert "neuron-migrate: warning: no files were checked" in result.stderr
    assert "warning" not in invoke(["check", "train.py"], project).stderr


# 5. --diff and --statistics summaries
def test_diff_prints_what_it_would_fix(project: Path) -> None:
    result = invoke(["--diff", "."], project)
    assert result.exit_code == 1 and result.stdout.startswith("--- a/train.py")
    assert result.stderr == "Would fix 3 findings in 1 file.\n"  # the import goes once its uses are fixed


def test_statistics_has_a_total_and_fixable_counts(project: Path) -> None:
    result = invoke(["--statistics", "."], project)
    assert result.stdout.splitlines()[-2:] == ["Found 3 findings.", "[*] 3 fixable with the `--fix` option."]


# 6. --output-file, --show-files, --show-settings
def test_output_file(project: Path) -> None:
    result = invoke([".", "--output-format", "json", "--output-file", "out.json"], project)
    assert result.exit_code == 1 and result.stdout == ""
    assert '"code": "NM101"' in (project / "out.json").read_text(encoding="utf-8")


def test_show_files_and_settings(project: Path) -> None:
    (project / "README.md").write_text("x\n", encoding="utf-8")
    (project / "build").mkdir()
    (project / "build" / "gen.py").write_text(XLA, encoding="utf-8")
    result = invoke(["--show-files", "."], project)
    assert result.exit_code == 0 and result.stdout == "train.py\n"
    (project / "pyproject.toml").write_text('[tool.neuron-migrate]\nignore = ["NM6"]\n', encoding="utf-8")
    result = invoke(["--show-settings", "--target-version", "2.13", "."], project)
    assert result.exit_code == 0
    (group,) = toml_module().loads(result.stdout)["settings"]  # TOML, read back as it is
    assert group["resolved"]["paths"] == ["."] and group["resolved"]["config-file"].endswith("pyproject.toml")
    assert group["target-version"] == "2.13"
    assert "NM101" in group["select"] and "NM601" not in group["select"]
    assert group["respect-gitignore"] is True and group["per-file-ignores"] == {}


# 7. --exclude replaces the default excludes; --extend-exclude adds to them
def test_exclude_follows_ruff(project: Path) -> None:
    (project / "build").mkdir()
    (project / "build" / "gen.py").write_text(XLA, encoding="utf-8")
    assert invoke(["--show-files", "."], project).stdout == "train.py\n"
    assert invoke(["--show-files", "--exclude", "train.py", "."], project).stdout == "build/gen.py\n"
    assert invoke(["--show-files", "--extend-exclude", "train.py", "."], project).stdout == ""


# 8. one style for every error line, Click's own included
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--no-such-flag"], "neuron-migrate: error: no such option '--no-such-flag'"),
        (["check", "--output-format", "xml", "."], "neuron-migrate: error: invalid value for '--output-format'"),
        (["explain"], "neuron-migrate: error: missing argument 'CODE'"),
        (["explain", "NM999"], "neuron-migrate: error: unknown rule code 'NM999'"),
        (["check", "--jobs", "0"], "neuron-migrate: error: invalid value for '-j' / '--jobs'"),
    ],
)
def test_errors_share_one_style(project: Path, args: list[str], message: str) -> None:
    result = invoke(args, project)
    assert result.exit_code == 2
    assert result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1, result.stderr
    assert "Usage:" not in result.output


def test_config_and_io_errors_share_the_style(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.neuron-migrate]\nselct = []\n", encoding="utf-8")
    result = invoke(["."], project)
    assert result.exit_code == 2 and result.stderr.startswith("neuron-migrate: error: pyproject.toml: unknown key")
    result = invoke(
        [".", "--output-file", str(project / "missing" / "out.txt"), "--config", str(project / "none.toml")], project
    )
    assert result.exit_code == 2 and result.stderr.startswith("neuron-migrate: error: ")


# 10. the fix hook (`check --fix-only`) says what it fixed and leaves the findings to the check hook
def test_fix_only_reports_only_what_it_fixed(project: Path) -> None:
    (project / "more.py").write_text(
        "import torch_xla.core.xla_model as xm\nxm.all_reduce('sum', [t], groups=[[0, 1]])\n", encoding="utf-8"
    )
    result = invoke(["check", "--fix-only", "."], project)
    assert result.exit_code == 0
    assert result.stdout == "Fixed 3 findings in 1 file (2 left; `neuron-migrate check` lists them).\n"
    assert "NM306" not in result.output
    assert "xla_device" not in (project / "train.py").read_text(encoding="utf-8")
    hooks = (Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert "entry: neuron-migrate check --fix-only --allow-plugins --\n" in hooks


# 3. noqa comments in requirements files and shell scripts; --add-noqa says what it could not suppress
def test_noqa_in_requirements_and_shell(project: Path) -> None:
    (project / "requirements.txt").write_text("torch_xla==2.5.0  # noqa: NM620\ntorch-xla[tpu]\n", encoding="utf-8")
    (project / "run.sh").write_text(
        "#!/bin/bash\nexport PJRT_DEVICE=TPU  # noqa: NM630\nXLA_USE_BF16=1 \\\n  python t.py\n", encoding="utf-8"
    )
    result = invoke(["check", "requirements.txt", "run.sh"], project)
    assert [line.split(" ")[0] for line in result.stdout.splitlines()[:-2]] == ["requirements.txt:2:1:", "run.sh:3:1:"]
    fixed = invoke(["check", "--fix", "--unsafe-fixes", "requirements.txt"], project)
    assert fixed.exit_code == 0
    assert (project / "requirements.txt").read_text(
        encoding="utf-8"
    ) == "torch_xla==2.5.0  # noqa: NM620\n"  # a suppressed finding is not fixed


def test_add_noqa_in_text_files(project: Path) -> None:
    (project / "requirements.txt").write_text("torch_xla==2.5.0\n", encoding="utf-8")
    (project / "run.sh").write_text("XLA_USE_BF16=1 \\\n  python t.py\n", encoding="utf-8")
    (project / "setup.cfg").write_text("[options]\ninstall_requires =\n    torch_xla==2.5\n", encoding="utf-8")
    result = invoke(["check", "--add-noqa", "requirements.txt", "run.sh", "setup.cfg"], project)
    assert result.stdout == "Added `# noqa` for 2 findings in 2 files.\n"
    assert result.exit_code == 1  # one finding could not be suppressed, and it says why
    assert (
        "setup.cfg:3:5: NM620" in result.stderr
        and "no `# noqa` added: setup.cfg has no inline comments" in result.stderr
    )
    assert (project / "requirements.txt").read_text(encoding="utf-8") == "torch_xla==2.5.0  # noqa: NM620\n"
    assert (project / "run.sh").read_text(encoding="utf-8") == "XLA_USE_BF16=1 \\\n  python t.py  # noqa: NM630\n"
    assert invoke(["check", "requirements.txt", "run.sh"], project).exit_code == 0
    (project / "setup.cfg").write_text(
        "# neuron-migrate: noqa: NM620\n[options]\ninstall_requires =\n    torch_xla==2.5\n", encoding="utf-8"
    )
    assert invoke(["check", "setup.cfg"], project).exit_code == 0


# 9. counts that add up: what the check calls fixable is what `--fix` then fixes
@pytest.mark.slow
@pytest.mark.parametrize("unsafe", [False, True], ids=["fix", "unsafe-fixes"])
def test_fixable_counts_match_what_fix_reports(unsafe: bool) -> None:
    """Over every fixture and the example, with every rule on: the fixes a check reports (imports
    that go once their uses are fixed included; with `--unsafe-fixes`, the unsafe ones too) are
    exactly the findings `--fix` (`--fix --unsafe-fixes`) fixes."""
    from neuron_migrate.engine.pipeline import check_source
    from neuron_migrate.model import Safety
    from neuron_migrate.settings import Settings

    allowed = {Safety.SAFE, Safety.UNSAFE} if unsafe else {Safety.SAFE}

    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    cases = [p for p in sorted(fixtures.glob("*/*.py")) if not p.name.endswith(".fixed.py")]
    cases.append(fixtures / "example_project" / "train.py")
    wrong = []
    for case in cases:
        text = case.read_text(encoding="utf-8", errors="replace")
        before = check_source(text, case.name, Settings(unsafe_fixes=unsafe))
        after = check_source(text, case.name, Settings(fix=True, unsafe_fixes=unsafe))
        fixable = sum(1 for f in before.findings if f.fix is not None and f.fix.applicability in allowed)
        if fixable != len(after.fixed):
            wrong.append((case.relative_to(fixtures).as_posix(), fixable, len(after.fixed)))
    assert wrong == [("NM320/replica_groups.py", 2, 3)] if unsafe else wrong == []


# NM320/replica_groups.py, with `--unsafe-fixes`: `xm.all_reduce(..., groups=parallel_state.get_data_parallel_group(as_list=True))`
# becomes `groups=_MESH["dp"].get_group()` (NM320), and only then is the collective one NM306 can port,
# in the next round: a chain of two fixes on one call, which check does not count without running the first.


def test_example_summary_matches_fix(tmp_path: Path) -> None:
    import shutil

    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    shutil.copytree(fixtures / "example_project", tmp_path / "ex")
    before = invoke(["check", "."], tmp_path / "ex").stdout.splitlines()[-2:]
    assert before == ["Found 18 findings.", "[*] 18 fixable with the `--fix` option."]
    assert invoke(["--fix", "."], tmp_path / "ex").stdout == "Found 18 findings (18 fixed, 0 remaining).\n"


def test_an_import_still_used_is_not_counted_fixable(project: Path) -> None:
    (project / "more.py").write_text(
        "import torch_xla.core.xla_model as xm\nxm.mark_step()\nxm.all_reduce('sum', [t], groups=[[0, 1]])\n",
        encoding="utf-8",
    )
    out = invoke(["check", "more.py"], project).stdout
    assert "more.py:1:1: NM601 Remove" in out and "[*] 1 fixable" in out


# 14. formatting of fixed code: merged guards, the file's line length, no `(lambda: ...)()`
def _fixed(text: str) -> str:
    from neuron_migrate.engine.pipeline import check_source
    from neuron_migrate.settings import Settings

    result = check_source(text, "t.py", Settings(fix=True))
    assert result.fixed_source is not None
    compile(result.fixed_source, "t.py", "exec")
    return result.fixed_source


def test_nested_rank_guards_are_merged() -> None:
    fixed = _fixed(
        "import torch_xla.core.xla_model as xm\n\n\ndef log(x):\n"
        "    if xm.is_master_ordinal():\n        xm.master_print(x)\n"
        "    if xm.is_master_ordinal(local=False):\n        xm.master_print('global')\n"
    )
    assert fixed.endswith(
        '    if int(os.environ.get("LOCAL_RANK", 0)) == 0 and (\n'  # one line would pass 79 columns
        '        int(os.environ.get("RANK", 0)) == 0\n'
        "    ):\n"
        "        print(x)\n"
        '    if int(os.environ.get("RANK", 0)) == 0:\n'  # already global rank 0: no second guard
        "        print('global')\n"
    ), fixed


def test_fixed_lines_keep_the_files_line_length() -> None:
    body = "    if xm.is_master_ordinal() or x:\n        xm.master_print(x)\n"
    short = _fixed("import torch_xla.core.xla_model as xm\n\n\ndef log(x):\n" + body)
    assert max(len(line) for line in short.splitlines()) <= 79  # broken inside the parentheses
    assert ') and (\n        int(os.environ.get("RANK", 0)) == 0\n    ):\n' in short
    wide = _fixed("import torch_xla.core.xla_model as xm\n\n\ndef log(x):\n" + body + "    # " + "x" * 116 + "\n")
    assert 'if (int(os.environ.get("LOCAL_RANK", 0)) == 0 or x) and int(os.environ.get("RANK", 0)) == 0:' in wide


def test_a_comment_inside_the_if_is_kept() -> None:
    fixed = _fixed(
        "import torch_xla.core.xla_model as xm\n\n\ndef log(x):\n"
        "    if xm.is_master_ordinal():\n        # why\n        xm.master_print(x)\n"
    )
    assert "        # why\n" in fixed


def test_no_fix_emits_an_immediately_called_lambda() -> None:
    import re

    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    outputs = list(fixtures.rglob("*.fixed.py"))
    assert outputs
    for path in outputs:
        assert not re.search(r"\(lambda\b[^\n]*\)\(\)", path.read_text(encoding="utf-8", errors="replace")), path


def test_an_import_whose_use_is_suppressed_is_not_counted_fixable(project: Path) -> None:
    (project / "more.py").write_text(
        "import torch_xla.core.xla_model as xm\nxm.mark_step()  # noqa: NM201\n", encoding="utf-8"
    )
    out = invoke(["check", "more.py"], project).stdout
    assert "more.py:1:1: NM601 Remove" in out and "fixable" not in out
    assert invoke(["check", "--fix", "more.py"], project).stdout.endswith("\nFound 1 finding.\n")  # nothing to fix
