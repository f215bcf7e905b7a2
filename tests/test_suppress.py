"""Suppressions: `# noqa`, `# neuron-migrate: noqa`, per-file-ignores, NM910 and --add-noqa."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuron_migrate.cli import main
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.engine.suppress import ignored_prefixes
from neuron_migrate.model import FileResult
from neuron_migrate.settings import Settings

HEADER = "import torch_xla.core.xla_model as xm\n"
ALL = Settings(select=("NM1", "NM2", "NM910"))


def found(result: FileResult) -> list[tuple[int, str]]:
    return [(f.start.line, f.code) for f in result.findings]


def hidden(result: FileResult) -> list[tuple[int, str]]:
    return [(f.start.line, f.code) for f in result.suppressed]


def check(body: str, settings: Settings = ALL, path: str = "t.py") -> FileResult:
    return check_source(HEADER + body, path, settings)


# -- line directives ----------------------------------------------------------------------


def test_noqa_with_code_suppresses_that_code_only() -> None:
    result = check("d = xm.xla_device(); xm.mark_step()  # noqa: NM201\n")
    assert found(result) == [(2, "NM101")]
    assert hidden(result) == [(2, "NM201")]


def test_noqa_codes_are_case_insensitive_and_comma_or_space_separated() -> None:
    result = check("d = xm.xla_device(); xm.mark_step()  # NOQA:nm201 NM101\n")
    assert found(result) == [] and hidden(result) == [(2, "NM101"), (2, "NM201")]


def test_bare_noqa_suppresses_its_line_only() -> None:
    result = check("d = xm.xla_device()  # noqa\nxm.mark_step()\n")
    assert found(result) == [(3, "NM201")]
    assert hidden(result) == [(2, "NM101")]


def test_noqa_in_a_string_is_not_a_directive() -> None:
    result = check('xm.mark_step(); s = "# noqa"\n')
    assert found(result) == [(2, "NM201")]


def test_noqa_on_last_line_of_a_multiline_finding() -> None:
    body = "xm.mark_step(\n)  # noqa: NM201\n"
    assert found(check(body)) == []
    assert found(check("xm.mark_step(  # noqa: NM201\n)\n")) == []


def test_noqa_on_another_line_of_the_statement_does_not_apply() -> None:
    body = "x = [\n    xm.xla_device(),\n    1,  # noqa: NM101\n]\n"
    assert found(check(body, Settings(select=("NM101",)))) == [(3, "NM101")]


def test_noqa_after_a_multiline_string_covers_a_finding_inside_the_statement() -> None:
    body = 'xm.master_print("""a\nb""")  # noqa: NM304\n'
    assert found(check(body, Settings(select=("NM304",)))) == []
    assert found(check(body.replace("  # noqa: NM304", ""), Settings(select=("NM304",)))) == [(2, "NM304")]


# -- file directives ----------------------------------------------------------------------


def test_file_directive_suppresses_everything() -> None:
    result = check("# neuron-migrate: noqa\nd = xm.xla_device()\nxm.mark_step()\n")
    assert found(result) == [] and len(hidden(result)) == 2


def test_file_directive_with_codes_suppresses_those_codes() -> None:
    result = check("# neuron-migrate: noqa: NM201\nd = xm.xla_device()\nxm.mark_step()\n")
    assert found(result) == [(3, "NM101")]


def test_ruff_file_directive_is_not_ours() -> None:
    assert found(check("# ruff: noqa\nxm.mark_step()\n")) == [(3, "NM201")]


# -- per-file-ignores ---------------------------------------------------------------------


def test_per_file_ignores_prefixes_suppress(tmp_path: Path) -> None:
    settings = Settings(select=("NM1", "NM2"), per_file_ignores=(((tmp_path / "tests/*").as_posix(), ("NM2",)),))
    inside = check("d = xm.xla_device()\nxm.mark_step()\n", settings, (tmp_path / "tests" / "a.py").as_posix())
    outside = check("d = xm.xla_device()\nxm.mark_step()\n", settings, (tmp_path / "src" / "a.py").as_posix())
    assert found(inside) == [(2, "NM101")] and hidden(inside) == [(3, "NM201")]
    assert found(outside) == [(2, "NM101"), (3, "NM201")]


@pytest.mark.parametrize(
    ("glob", "path", "hit"),
    [
        ("conftest.py", "a/b/conftest.py", True),
        ("conftest.py", "a/b/other.py", False),
        ("!conftest.py", "a/other.py", True),
        ("!conftest.py", "conftest.py", False),
        ("/r/**/test_*.py", "/r/test_a.py", True),
        ("/r/**/test_*.py", "/r/x/y/test_a.py", True),
        ("/r/src/*.py", "/r/tests/a.py", False),
    ],
)
def test_per_file_ignore_globs(glob: str, path: str, hit: bool) -> None:
    settings = Settings(per_file_ignores=((glob, ("NM1",)),))
    target = path if path.startswith("/") else os.path.join("/r", path)
    assert (ignored_prefixes(target, settings) == ("NM1",)) is hit


# -- fixing -------------------------------------------------------------------------------


def test_suppressed_findings_are_not_fixed() -> None:
    result = check("xm.mark_step()  # noqa: NM201\nxm.mark_step()\n", Settings(select=("NM201",), fix=True))
    assert result.fixed_source == HEADER + "xm.mark_step()  # noqa: NM201\n"
    assert [f.start.line for f in result.fixed] == [3]


# -- unused suppressions (NM910) ----------------------------------------------------------


def test_unused_noqa_is_reported_with_a_safe_fix() -> None:
    result = check("d = xm.xla_device()  # noqa: NM201\n")
    assert found(result) == [(2, "NM101"), (2, "NM910")]
    unused = result.findings[1]
    assert unused.start.column == 22 and unused.fix is not None and unused.fix.applicability.value == "safe"
    assert unused.message == "Remove the unused `# noqa: NM201`"


def test_used_noqa_is_not_reported() -> None:
    assert found(check("xm.mark_step()  # noqa: NM201\n")) == []


def test_unused_noqa_not_reported_when_nm910_is_off() -> None:
    assert found(check("x = 1  # noqa: NM201\n", Settings(select=("NM1", "NM2")))) == []


def test_noqa_for_a_per_file_ignored_code_is_not_reported(tmp_path: Path) -> None:
    settings = Settings(select=("NM1", "NM2", "NM910"), per_file_ignores=(("t.py", ("NM2",)),))
    assert found(check("x = 1  # noqa: NM201\n", settings)) == []
    assert found(check("x = 1  # noqa: NM101\n", settings)) == [(2, "NM910")]


def test_unused_noqa_not_judged_in_a_file_that_does_not_parse() -> None:
    assert found(check("x = (  # noqa: NM201\n")) == [(2, "NM901")]


def test_unused_noqa_can_itself_be_suppressed() -> None:
    assert found(check("x = 1  # noqa: NM201, NM910\n")) == []


def test_unused_file_directive_is_judged_only_with_every_rule_on() -> None:
    text = "# neuron-migrate: noqa\nx = 1\n"
    assert found(check_source(text, "t.py", Settings())) == [(1, "NM910")]
    assert found(check_source(text, "t.py", ALL)) == []


def test_fixing_unused_noqa_keeps_later_positions_exact() -> None:
    body = "# noqa: NM201\n\nxm.add_step_closure(print, ('a.pt',))  # noqa: NM202\n"  # an unsafe fix
    settings = Settings(select=("NM2", "NM910"), fix=True)
    result = check(body, settings)
    assert result.fixed_source == HEADER + "\nxm.add_step_closure(print, ('a.pt',))\n"
    assert [(f.start.line, f.code) for f in result.fixed] == [(2, "NM910"), (4, "NM910")]
    fresh = check_source(result.fixed_source or "", "t.py", settings)
    assert found(result) == [(3, "NM205")]
    assert [(f.start, f.end, f.fix) for f in result.findings] == [(f.start, f.end, f.fix) for f in fresh.findings]


def test_fixing_unused_noqa_is_stable() -> None:
    text = HEADER + "xm.mark_step()  # noqa: NM201, NM999\n# noqa: NM101\n"
    once = check_source(text, "t.py", Settings(fix=True))
    assert once.fixed_source == HEADER + "xm.mark_step()  # noqa: NM201\n"
    again = check_source(once.fixed_source or "", "t.py", Settings(fix=True))
    assert again.fixed_source is None and found(again) == [(1, "NM601")]  # still used by the kept call


# -- --add-noqa ---------------------------------------------------------------------------


NOISY = HEADER + (
    "device = xm.xla_device()  # get the device\n"
    "xm.mark_step(); xm.mark_step()\n"
    "x = 1  # noqa: E501\n"
    "xm.master_print('''a\nb''')\n"
    "loss = xm.xla_device()  # noqa: E501\n"
)


def test_add_noqa_writes_directives_and_is_idempotent() -> None:
    settings = Settings(select=("NM1", "NM2", "NM3", "NM910"), add_noqa=True)
    result = check_source(NOISY, "t.py", settings)
    assert result.fixed_source == HEADER + (
        "device = xm.xla_device()  # get the device  # noqa: NM101\n"
        "xm.mark_step(); xm.mark_step()  # noqa: NM201\n"
        "x = 1  # noqa: E501\n"
        "xm.master_print('''a\nb''')  # noqa: NM304\n"
        "loss = xm.xla_device()  # noqa: E501, NM101\n"
    )
    assert len(result.findings) == 5
    again = check_source(result.fixed_source or "", "t.py", settings)
    assert again.fixed_source is None and again.findings == ()
    checked = check_source(result.fixed_source or "", "t.py", Settings(select=("NM1", "NM2", "NM3", "NM910")))
    assert checked.findings == ()


def test_add_noqa_does_not_silence_unparseable_files() -> None:
    result = check_source("import torch_xla\nx = (\n", "t.py", Settings(add_noqa=True))
    assert result.fixed_source is None and [f.code for f in result.findings] == ["NM901"]


# -- CLI ----------------------------------------------------------------------------------


def test_cli_add_noqa_and_show_suppressed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(HEADER + "xm.mark_step()\n")
    runner = CliRunner()
    added = runner.invoke(main, ["a.py", "--add-noqa"])
    assert added.exit_code == 0 and added.stdout == "Added `# noqa` for 2 findings in 1 file.\n"
    assert (tmp_path / "a.py").read_text() == (
        "import torch_xla.core.xla_model as xm  # noqa: NM601\nxm.mark_step()  # noqa: NM201\n"
    )
    clean = runner.invoke(main, ["a.py"])
    assert clean.exit_code == 0 and "All checks passed!" in clean.stdout
    shown = runner.invoke(main, ["a.py", "--show-suppressed"])
    assert shown.exit_code == 0
    assert shown.stdout.splitlines()[-3:] == [
        "Suppressed 2 findings:",
        "a.py:1:1: NM601 Remove the `torch_xla.core.xla_model` import; TorchNeuron does not use torch_xla",
        "a.py:2:1: NM201 [*] Remove `xm.mark_step()`; TorchNeuron executes eagerly",
    ]
    as_json = runner.invoke(main, ["a.py", "--show-suppressed", "--output-format", "json"])
    assert as_json.stdout == "[]\n" and "Suppressed 2 findings:" in as_json.stderr


def test_cli_add_noqa_refuses_fix(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [str(tmp_path), "--add-noqa", "--fix"])
    assert result.exit_code == 2
    assert result.stderr == "neuron-migrate: error: --add-noqa cannot be combined with --fix or --diff\n"


def test_cli_add_noqa_lists_files_it_cannot_annotate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text("import torch_xla\ndef broken(:\n")
    result = CliRunner().invoke(main, ["bad.py", "--add-noqa"])
    assert result.exit_code == 1
    assert result.stderr.startswith("bad.py:2:12: NM901") and (tmp_path / "bad.py").read_text().endswith("(:\n")


def _results_everywhere(settings: Settings) -> list[tuple[str, tuple[object, ...], tuple[object, ...]]]:
    out = []
    for case in sorted(Path(__file__).resolve().parent.parent.glob("fixtures/**/*.py")):
        text = case.read_text(encoding="utf-8", errors="surrogateescape")
        result = check_source(text, case.name, settings)
        out.append((case.name, result.findings, result.suppressed))
    return out


def test_only_other_linters_directives_need_no_tokenize_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    from neuron_migrate.engine import directives, suppress

    def no_tokenize(src: object) -> None:
        raise AssertionError("tokenized a file whose directives are all other linters'")

    monkeypatch.setattr(suppress, "layout_of", no_tokenize)
    body = "\nd = xm.xla_device()  # noqa: E501\nx = 1  # NOQA:F401,W291\n"
    assert found(check(body)) == [(3, "NM101")]
    monkeypatch.setattr(suppress, "layout_of", directives.layout_of)
    assert hidden(check(body.replace("E501", "E501, NM101"))) == [(3, "NM101")]


@pytest.mark.parametrize(
    ("text", "ours"),
    [
        ("x = 1  # noqa: E501\n", False),
        ("x = 1  # NOQA:F401,W291\n", False),
        ("x = 1  # noqa\n", True),  # bare: covers our findings too
        ("x = 1  # noqa: E501, nm101\n", True),
        ("x = 1  # noqa:E501 # noqa: NM201\n", True),
        ("# neuron-migrate: noqa\n", True),
        ("# neuron-migrate: noqa: F401\n", False),
        ("d = {1  # noqa\n     : E501}\n", True),  # the codes of the next line are not this directive's
        ('s = "no directive"\n', False),
    ],
)
def test_which_directives_can_matter(text: str, ours: bool) -> None:
    from neuron_migrate.engine.suppress import _mentions_our_noqa

    assert _mentions_our_noqa(text) is ours


def test_skipping_other_linters_directives_changes_no_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fixture checks and fixes the same with the shortcut as with a tokenize pass of every
    file that says `noqa` (the real corpora were compared the same way: see docs/performance.md)."""
    from neuron_migrate.engine import suppress

    settings = Settings(fix=True, unsafe_fixes=True)
    fast = _results_everywhere(settings)
    monkeypatch.setattr(suppress, "_mentions_our_noqa", suppress._mentions_noqa)
    assert fast == _results_everywhere(settings)
