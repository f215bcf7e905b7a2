"""Issue 40 item 7: config globs (`extend-exclude`, `exclude`, `per-file-ignores`, the command
line's, and `.gitignore` lines a pull request can change too) are matched in polynomial time,
or refused as a config error in one line with exit code 2.

Before: in `extend-exclude`, `*a*a*a*a*a*a*a*a*b` took 58 s of CPU against a 60-character name
(exponential backtracking), `{a,b}` twenty times 37 s and 850 MB (a million globs), and 10,000
`[` 34 s (each `[` rescanned the rest of the glob). Each run here has a CPU-time limit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hostile_bounds import bounded
from hostile_helpers import XLA

from neuron_migrate.wildmatch import translate

pytestmark = pytest.mark.slow  # subprocesses of the installed script

STARS = "*a*a*a*a*a*a*a*a*b"
LONG = "a" * 60 + ".py"  # no `b`: every way to split it is tried


def project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.neuron-migrate]\n" + table)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / LONG).write_text(XLA)
    return tmp_path


@pytest.mark.parametrize(
    "table",
    [
        f"extend-exclude = [{json.dumps(STARS)}]\n",
        f"exclude = [{json.dumps(STARS)}]\n",
        f"[tool.neuron-migrate.per-file-ignores]\n{json.dumps(STARS)} = ['NM1']\n",
        f"extend-exclude = [{json.dumps('[' * 10_000)}]\n",
        f"extend-exclude = [{json.dumps('[[:' * 5_000)}]\n",
    ],
    ids=["extend-exclude", "exclude", "per-file-ignores", "brackets", "classes"],
)
def test_a_hostile_glob_is_matched_in_bounded_time(tmp_path: Path, table: str) -> None:
    folder = project(tmp_path, table)
    got = bounded(["check", "--no-cache", "."], folder, cpu=10)
    assert got.rc == 1, got.out  # the file is checked: no glob matched it
    assert f"pkg/{LONG}:3:10: NM101" in got.out
    assert got.cpu < 3, got.cpu


def test_many_globstars_against_a_deep_path_are_matched_in_bounded_time(tmp_path: Path) -> None:
    """`**/x/**/x/...` (8 times) tried every way to place its groups among 40 folders named `x`."""
    deep = tmp_path.joinpath(*["x"] * 40)
    deep.mkdir(parents=True)
    (deep / "m.py").write_text(XLA)
    glob = "/".join(["**", "x"] * 8) + "/**/y.py"
    (tmp_path / "pyproject.toml").write_text(f"[tool.neuron-migrate]\nextend-exclude = [{json.dumps(glob)}]\n")
    got = bounded(["check", "--no-cache", "."], tmp_path, cpu=10)
    assert f"{'x/' * 40}m.py:3:10: NM101" in got.out, got.out
    assert got.cpu < 3, got.cpu


def test_a_hostile_gitignore_line_is_matched_in_bounded_time(tmp_path: Path) -> None:
    folder = project(tmp_path, "")
    (folder / ".git").mkdir()
    (folder / ".gitignore").write_text(f"{STARS}\n{'[' * 10_000}\n**/a*a*a*a*a*a*a/**/b\n")
    got = bounded(["check", "--no-cache", "."], folder, cpu=10)
    assert f"pkg/{LONG}:3:10: NM101" in got.out, got.out
    assert got.cpu < 3, got.cpu


@pytest.mark.parametrize("where", ["config", "flag"])
def test_a_glob_of_a_million_alternatives_is_a_config_error(tmp_path: Path, where: str) -> None:
    glob = "{a,b}" * 20
    folder = project(tmp_path, f"extend-exclude = [{json.dumps(glob)}]\n" if where == "config" else "")
    flags = ["--extend-exclude", glob] if where == "flag" else []
    got = bounded(["check", "--no-cache", *flags, "."], folder, cpu=10)
    assert got.rc == 2, got.out
    setting = "pyproject.toml: `extend-exclude`" if where == "config" else "--extend-exclude"
    assert got.out == (
        f"neuron-migrate: error: {setting} has the glob '{glob[:60]}...'; "
        "its {...} alternatives make more than 1,024 globs\n"
    )
    assert got.cpu < 3, got.cpu


# -- the same matches as the plain translation, on small globs -----------------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402 - after the importorskip above
from hypothesis import strategies as st  # noqa: E402 - after the importorskip above

_PIECES = ["a", "b", "*", "**", "?", "/", "[ab]", "[!a]", "[a-b]", "[]a]", "\\*", "\\[", "x"]
_REGEX = {"?": "[^/]", "[ab]": "[ab]", "[!a]": "[^/a]", "[a-b]": "[a-b]", "[]a]": "[\\]a]", "\\*": "\\*", "\\[": "\\["}


def plain(pieces: list[str]) -> str:
    """The straightforward translation of the glob these pieces spell (each `*` a `[^/]*`,
    each `**` segment an optional `.*/`): correct, and exponential on hostile globs; the
    oracle for small ones."""
    segments: list[list[str]] = [[]]
    for piece in pieces:
        if piece == "/":
            segments.append([])
        else:
            segments[-1].append(piece)
    out = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if "".join(segment) == "**":
            out.append(".*" if len(segments) == 1 or last else "(?:.*/)?")
            continue
        out.append("".join("[^/]*" if set(p) == {"*"} else _REGEX.get(p, re.escape(p)) for p in segment))
        out.append("" if last else "/")
    return "".join(out)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=9),
    st.lists(st.sampled_from(["a", "b", "x", "*", "[", "]", "/"]), min_size=1, max_size=10).map("".join),
)
def test_the_translation_matches_what_the_plain_one_matches(pieces: list[str], path: str) -> None:
    glob = "".join(pieces)
    expected = re.fullmatch(plain(pieces), path, re.DOTALL) is not None
    assert (re.fullmatch(translate(glob), path, re.DOTALL) is not None) == expected, (glob, translate(glob))
