"""Items 3, 9 and 12 (NM910 in text files) of issue 24: the comment scanners of pyproject.toml,
shell scripts, requirements files and setup.cfg know the format's strings and quoting, `--fix`
settles on them, and long lines cost linear time."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_helpers import cli, measured, out

pytestmark = pytest.mark.slow  # subprocesses of the installed script


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pyproject.toml", '[project]\nname = "x"\ndescription = "use # noqa: NM620 to silence"\n'),
        ("pyproject.toml", "[project]\nname = 'x'\ndescription = 'a # noqa: NM620'\n"),
        ("pyproject.toml", '[project]\nname = "x"\ndescription = """\nmore # noqa: NM620\n"""\n'),
        ("pyproject.toml", '[project]\nname = "x"\ndescription = "quote \\" # noqa: NM620"\n'),
        ("run.sh", 'echo "run # noqa: NM630 here"\n'),
        ("run.sh", "echo 'run # noqa: NM630 here'\n"),
        ("run.sh", "echo run\\ \\# noqa: NM630\n"),
        ("run.sh", "echo x#noqa: NM630\n"),
        ("run.sh", 'echo "two\nlines # noqa: NM630"\n'),
        ("requirements.txt", "pkg @ https://example.invalid/x.whl#noqa:NM620\n"),
        ("setup.cfg", "[metadata]\ndescription = keep # noqa: NM620\n"),
    ],
)
def test_a_noqa_inside_a_string_is_no_comment_and_is_kept(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    done = cli(["check", "--fix", "--no-cache", name], tmp_path)
    assert (tmp_path / name).read_text() == text, out(done)
    assert "NM910" not in out(done)


@pytest.mark.parametrize(
    ("name", "text", "fixed"),
    [
        ("run.sh", "#!/bin/bash\necho hi  # noqa: NM630\n", "#!/bin/bash\necho hi\n"),
        ("run.sh", 'echo "#" # noqa: NM630\n', 'echo "#"\n'),
        ("requirements.txt", "numpy  # noqa: NM620\n", "numpy\n"),
        (
            "setup.cfg",
            "[options]\ninstall_requires =\n    numpy\n# noqa: NM620\n",
            "[options]\ninstall_requires =\n    numpy\n",
        ),
        ("pyproject.toml", '[project]\nname = "#"  # noqa: NM620\n', '[project]\nname = "#"\n'),
    ],
)
def test_an_unused_noqa_in_a_text_file_is_removed_and_fix_settles(
    tmp_path: Path, name: str, text: str, fixed: str
) -> None:
    (tmp_path / name).write_text(text)
    first = cli(["check", "--fix", "--no-cache", name], tmp_path)
    assert (tmp_path / name).read_text() == fixed, out(first)
    assert "(1 fixed, 0 remaining)" in out(first)
    second = cli(["check", "--fix", "--no-cache", name], tmp_path)
    assert second.returncode == 0 and (tmp_path / name).read_text() == fixed, out(second)


def test_add_noqa_never_writes_into_a_multiline_toml_string(tmp_path: Path) -> None:
    text = '[project]\nname = "x"\ndependencies = [\n  "torch-xla", """\n"""]\n'
    (tmp_path / "pyproject.toml").write_text(text)
    cli(["check", "--add-noqa", "--no-cache", "pyproject.toml"], tmp_path)
    import tomllib

    data = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert data["project"]["dependencies"][1] == ""  # the string's content is untouched


def test_an_80k_entry_one_line_dependency_array_checks_in_linear_time(tmp_path: Path) -> None:
    deps = ", ".join(f'"pkg{i}>=1.0"' for i in range(80_000))  # took 74 s (and over 300 s here)
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "x"\ndependencies = [{deps}, "torch-xla"]\n')
    got = measured(["check", "--no-cache", "pyproject.toml"], tmp_path)
    assert got["seconds"] < 60, got["seconds"]  # about 9 s on a loaded 2-core machine
    assert "pyproject.toml:3:" in got["stdout"] and "NM620" in got["stdout"]


def test_80k_statements_on_one_line_and_a_20k_name_import_check_in_linear_time(tmp_path: Path) -> None:
    statements = "; ".join(f"a{i} = xm.xla_device()" if i % 1000 == 0 else f"a{i} = {i}" for i in range(80_000))
    (tmp_path / "semi.py").write_text("import torch_xla.core.xla_model as xm\n" + statements + "\n")
    names = ", ".join(f"n{i}" for i in range(20_000))
    (tmp_path / "imp.py").write_text(f"from torch_xla.core.xla_model import {names}, xla_device\nd = xla_device()\n")
    got = measured(["check", "--no-cache", "--statistics", "semi.py", "imp.py"], tmp_path)
    assert got["seconds"] < 90, got["seconds"]  # about 17 s here; 78 s before
    assert "81\tNM101" in got["stdout"]
