"""Lines added or changed since a git ref, for `--since REF` (PR review).

Compares the working tree (committed or not) with the merge base of REF and HEAD, as a pull
request diff does, so commits that landed on REF later are not blamed on the branch. Files git
does not track yet count as entirely new.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from neuron_migrate.model import FileResult, Finding

# absolute posix path -> changed 1-based lines, or None when every line is new
Changes = Mapping[str, frozenset[int] | None]
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


class GitError(RuntimeError):
    """git is missing, the folder is not a repository, or the ref is unknown."""


# The repository is not trusted: its config and `.gitattributes` can name commands (an
# fsmonitor, hooks, textconv and external diff drivers, clean filters) that plain git runs.
_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")


def _git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *_SAFE, *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise GitError("`git` was not found on PATH; --since needs git") from None


def _no_filters(cwd: Path) -> list[str]:
    """`-c` options that switch off every filter driver the config defines (reading runs nothing)."""
    done = _git(["config", "--name-only", "--get-regexp", r"^filter\."], cwd)
    names = {line.rsplit(".", 1)[0] for line in _text(done.stdout).splitlines() if line.count(".") >= 2}
    options: list[str] = []
    for name in sorted(names):
        options += [
            "-c",
            f"{name}.clean=",
            "-c",
            f"{name}.smudge=",
            "-c",
            f"{name}.process=",
            "-c",
            f"{name}.required=false",
        ]
    return options


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")


def repository_root(cwd: Path) -> Path:
    done = _git(["rev-parse", "--show-toplevel"], cwd)
    if done.returncode != 0:
        raise GitError(f"--since needs a git repository, and {cwd} is not inside one")
    return Path(_text(done.stdout).strip()).resolve()


def resolve_ref(ref: str, cwd: Path) -> str:
    """The commit to compare with: the merge base of `ref` and HEAD, else `ref` itself."""
    if not ref or ref.startswith("-"):
        raise GitError(f"invalid git ref {ref!r}")
    done = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd)
    if done.returncode != 0:
        raise GitError(
            f"unknown git ref `{ref}`; fetch it first (in CI: `git fetch origin {ref}` or a full-depth checkout)"
        )
    commit = _text(done.stdout).strip()
    base = _git(["merge-base", commit, "HEAD"], cwd)
    return _text(base.stdout).strip() if base.returncode == 0 and base.stdout.strip() else commit


def changed_lines(ref: str, cwd: Path) -> dict[str, frozenset[int] | None]:
    """Every file changed since `ref`, with its added or changed lines."""
    root = repository_root(cwd)
    commit = resolve_ref(ref, cwd)
    diff = _git(
        [
            *_no_filters(root),
            "-c",
            "core.quotePath=false",
            "diff",
            "-U0",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "-M",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            commit,
            "--",
        ],
        root,
    )
    if diff.returncode != 0:
        raise GitError(f"git diff against `{ref}` failed: {_text(diff.stderr).strip()}")
    changes: dict[str, frozenset[int] | None] = dict(parse_diff(_text(diff.stdout), root))
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], root)
    for name in _text(untracked.stdout).split("\0"):
        if name:
            changes[(root / name).as_posix()] = None
    return changes


def parse_diff(text: str, root: Path) -> dict[str, frozenset[int]]:
    """Added lines per file from `git diff -U0` output (new-side line numbers)."""
    changes: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in text.splitlines():
        if line.startswith("+++ "):
            name = _unquote(line[4:].rstrip("\t"))
            current = None if name == "/dev/null" else changes.setdefault((root / name[2:]).as_posix(), set())
            continue
        hunk = _HUNK.match(line)
        if hunk and current is not None:
            start, count = int(hunk.group(1)), int(hunk.group(2) or 1)
            current.update(range(start, start + count))
    return {path: frozenset(lines) for path, lines in changes.items()}


def _unquote(name: str) -> str:
    """Undo git's C-style quoting of unusual path names."""
    if not (name.startswith('"') and name.endswith('"')):
        return name
    body = name[1:-1].encode("utf-8", errors="surrogateescape")
    out = bytearray()
    index = 0
    simple = {
        ord("n"): b"\n",
        ord("t"): b"\t",
        ord('"'): b'"',
        ord("\\"): b"\\",
        ord("a"): b"\a",
        ord("b"): b"\b",
        ord("f"): b"\f",
        ord("r"): b"\r",
        ord("v"): b"\v",
    }
    while index < len(body):
        char = body[index]
        if char == ord("\\") and index + 1 < len(body):
            octal = body[index + 1 : index + 4]
            if re.fullmatch(rb"[0-7]{3}", octal):
                out.append(int(octal, 8))
                index += 4
                continue
            out += simple.get(body[index + 1], bytes([body[index + 1]]))
            index += 2
            continue
        out.append(char)
        index += 1
    return out.decode("utf-8", errors="surrogateescape")


def absolute(path: str) -> str:
    """The real path, as git's root is reported with symlinks resolved."""
    return os.path.realpath(path).replace(os.sep, "/")


def is_changed(path: str, changes: Changes) -> bool:
    return absolute(path) in changes


def on_changed_lines(finding: Finding, lines: frozenset[int] | None) -> bool:
    """Whether any line the finding spans was added or changed (None: the whole file is new)."""
    if lines is None or finding.cell is not None:
        return True  # notebook lines are cell-relative; a changed notebook keeps all its findings
    return any(line in lines for line in range(finding.start.line, finding.end.line + 1))


def keep_changed(results: Sequence[FileResult], changes: Changes) -> list[FileResult]:
    """Drop the findings that are not on lines changed since the ref."""
    out = []
    for result in results:
        path = absolute(result.path)
        if path not in changes:
            out.append(replace(result, findings=()))
            continue
        lines = changes[path]
        out.append(replace(result, findings=tuple(f for f in result.findings if on_changed_lines(f, lines))))
    return out
