"""`neuron_migrate.patterns` against git itself: every (gitignore, path) pair of a table is asked
of `git check-ignore` in a scratch repository, and our answer must be git's; then Ruff's anchoring
for the settings globs.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from neuron_migrate.patterns import GitIgnore, PathMatcher
from neuron_migrate.wildmatch import expand_braces, translate

# (files of .gitignore text by folder, paths to ask about; a trailing `/` makes a folder)
CASES: list[tuple[dict[str, str], list[str]]] = [
    (
        {"": "*.log\n!keep.log\nbuild/\n/top.py\ndocs/*.py\n**/gen/**\n"},
        [
            "a.log", "keep.log", "sub/keep.log", "sub/a.log", "build/x.py", "sub/build/x.py", "build.py",
            "top.py", "sub/top.py", "docs/a.py", "docs/sub/a.py", "other/docs/a.py", "gen/x.py", "a/gen/b/c.py",
            "gen.py",
        ],
    ),
    (
        {"": "*.py\n!src/\n!*.keep.py\n", "src": "!ok.py\nbad.py\n", "src/deep": "*\n!*.py\n"},
        [
            "a.py", "a.keep.py", "src/ok.py", "src/bad.py", "src/other.py", "src/deep/x.txt", "src/deep/x.py",
            "src/deep/more/y.py",
        ],
    ),
    (
        {"": "dir/\n!dir/inside.py\n", "lib": "/local.py\nnested/*.py\n# comment\n\n\\#hash.py\n"},
        [
            "dir/inside.py", "dir/a/b.py", "lib/local.py", "lib/sub/local.py", "local.py", "lib/nested/a.py",
            "lib/nested/deeper/a.py", "lib/#hash.py", "lib/comment",
        ],
    ),
    (
        {"": "a?c.py\n[abc]x.py\n[!abc]y.py\nz[0-9].py\nq[[:digit:]].py\n\\!bang.py\ntrail.py   \nsp\\ .py\n"},
        [
            "abc.py", "a/c.py", "ax.py", "dx.py", "ay.py", "dy.py", "z5.py", "za.py", "q7.py", "qa.py", "!bang.py",
            "trail.py", "sp .py", "sub/abc.py",
        ],
    ),
    (
        {"": "a/**/b.py\n**/x\nfoo/**\n***.tmp.py\n/**/root.py\n"},
        [
            "a/b.py", "a/1/b.py", "a/1/2/b.py", "b.py", "d2/x", "x/in.py", "deep/x/in.py", "foo/a.py", "foo/b/c.py",
            "foo.py", "q.tmp.py", "d/q.tmp.py", "root.py", "d/e/root.py",
        ],
    ),
    (
        {"": "/*\n!/src/\n!/README\n", "src": "*.pyc\n"},
        ["top.py", "README", "src/a.py", "src/a.pyc", "other/a.py"],
    ),
    (  # several stars in a segment, several `**`: matched at their leftmost place (wildmatch.py)
        {"": "a*b*c.py\n*x*x*y\nm/**/n/**/o.py\n**/p*q/**/r*s*/**\n[[:alpha:]]*[0-9]*z.py\n[[[]w*.py\n[]]v.py\n"},
        [
            "abc.py", "aXbYc.py", "acb.py", "abbc.py", "d/ab_bc.py", "xxy", "axbxcy", "xyx", "m/n/o.py",
            "m/1/n/2/o.py", "m/n/n/o.py", "m/o.py", "n/o.py", "pq/r1s2/t", "1/pxq/2/rs/3.py", "pq/rs", "q1z.py",
            "1az.py", "a12z.py", "[w.py", "[xw.py", "]v.py", "vv.py",
        ],
    ),
]  # fmt: skip


def _git(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True, check=False, timeout=60
    )


def _build(root: Path, ignores: dict[str, str], paths: list[str]) -> None:
    _git("init", "-q", cwd=root)
    for folder, text in ignores.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / ".gitignore").write_text(text, encoding="utf-8")
    for path in paths:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.write_text("", encoding="utf-8")


@pytest.mark.parametrize("case", range(len(CASES)))
def test_gitignore_agrees_with_git_check_ignore(tmp_path: Path, case: int) -> None:
    ignores, paths = CASES[case]
    _build(tmp_path, ignores, paths)
    answer = _git("check-ignore", "--stdin", cwd=tmp_path, stdin="\n".join(paths) + "\n")
    assert answer.returncode in (0, 1), answer.stderr
    by_git = set(answer.stdout.splitlines())
    rules = GitIgnore(tmp_path)
    ours = {p for p in paths if rules.ignored(tmp_path / p)}
    assert ours == by_git, {"git only": sorted(by_git - ours), "ours only": sorted(ours - by_git)}
    assert by_git and set(paths) - by_git  # each case has both answers


def test_info_exclude_is_read_below_the_gitignore_files(tmp_path: Path) -> None:
    _build(tmp_path, {"": "!kept.py\n"}, ["kept.py", "gone.py"])
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("*.py\n", encoding="utf-8")
    by_git = set(_git("check-ignore", "kept.py", "gone.py", cwd=tmp_path).stdout.split())
    rules = GitIgnore(tmp_path)
    assert {p for p in ("kept.py", "gone.py") if rules.ignored(tmp_path / p)} == by_git == {"gone.py"}


@pytest.mark.parametrize(
    ("glob", "path", "expected"),
    [
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "other/src/c.py", False),  # anchored at the root, as Ruff
        ("src/*.py", "src/sub/a.py", False),  # `*` stops at `/`
        ("src/**/*.py", "src/sub/a.py", True),
        ("**/src/*.py", "other/src/c.py", True),
        ("gen_*.py", "deep/er/gen_a.py", True),  # no `/`: a name at any depth
        ("build", "a/build", True),
        ("{tests,docs}/*.py", "docs/x.py", True),
        ("{tests,docs}/*.py", "src/x.py", False),
        ("./src/*.py", "src/a.py", True),
        ("src/", "src", True),
    ],
)
def test_settings_globs_use_ruff_anchoring(tmp_path: Path, glob: str, path: str, expected: bool) -> None:
    matcher = PathMatcher((glob,), tmp_path)
    assert matcher.match(tmp_path / path, is_dir=glob.endswith("/")) is expected


def test_translate_and_braces() -> None:
    assert translate("a/**/b") == "a/(?:.*/)?b"
    assert expand_braces("{a,b}/{c,d}.py") == ["a/c.py", "a/d.py", "b/c.py", "b/d.py"]
    assert expand_braces("{lone}.py") == ["{lone}.py"]


@pytest.mark.slow
def test_half_a_million_excludes_cost_a_lookup_per_folder(tmp_path: Path) -> None:
    """500k `gen<N>/*.py` patterns (issue 24: over 60 s) are compiled only when a path lies in
    their folder: building the matcher and matching 2,000 paths stays far under a minute."""
    import time

    began = time.process_time()
    matcher = PathMatcher((f"gen{i}/*.py" for i in range(500_000)), tmp_path)
    paths = [tmp_path / f"src/m{i}.py" for i in range(1_000)] + [tmp_path / f"gen{i}/x.py" for i in range(1_000)]
    hits = [matcher.match(p) for p in paths]
    spent = time.process_time() - began
    assert hits == [False] * 1_000 + [True] * 1_000
    assert not matcher.match(tmp_path / "gen7/sub/x.py")  # `*` stays within one folder
    assert spent < 20, f"{spent:.1f} s of CPU"


def test_joined_name_globs_match_as_each_alone(tmp_path: Path) -> None:
    """The by-name globs joined into one regex say what trying each of them says (folders and
    files: a `name/` glob is for folders only)."""
    globs = ["*.egg-info", "build/", "[._]venv*", "__pycache__", "node?modules", "*.py[co]", "a*b*c", "x[!0-9]"]
    names = ["foo.egg-info", "build", ".venv3", "_venvx", "venv", "__pycache__", "node_modules", "m.pyc", "m.py"]
    names += ["abc", "aXbYc", "ab", "xa", "x1", "x", ".git", "dist"]
    joined = PathMatcher(globs, tmp_path)
    for name in names:
        for is_dir in (True, False):
            alone = any(PathMatcher([g], tmp_path).match(tmp_path / name, is_dir) for g in globs)
            assert joined.match(tmp_path / name, is_dir) is alone, (name, is_dir)
    assert joined.match(tmp_path / "build", True) and not joined.match(tmp_path / "build", False)
