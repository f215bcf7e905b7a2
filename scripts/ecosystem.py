#!/usr/bin/env python3
"""Ecosystem check: run neuron-migrate on pinned sdists of real packages, as Ruff's ecosystem check does.

Each package is downloaded with pip (`pip download --no-deps --no-binary :all:`) into a temporary
folder and unpacked. The CLI then runs three ways on it: `check`, `check --fix` and
`check --fix --unsafe-fixes`, each fix mode on its own copy. The report counts, per package:

- crashes (a non-zero exit without findings, a traceback, or an NM908 "report this bug" finding);
- files that no longer compile after fixing;
- new pyflakes "undefined name" messages, after vs before (must be 0);
- files a second `--fix` still changes (not idempotent);
- files that imported the source framework before and no longer do ("fully off torch_xla");
- findings per rule, before and after each fix mode;
- for `--from xla`: the torch_xla call sites before and left after `--fix --unsafe-fixes`, and of
  those left, the ones no blocker finding (`Finding.blocker`: SPMD, NxD, xser, ...) accounts for:
  each is a call that keeps a torch_xla import alive without a genuine reason. The share is given
  over all files and over the files that use neither SPMD nor neuronx_distributed.
- what a reviewer would not merge as written (`quality_counts`): rank guards added, blocks left
  with only `pass`, comments left without the code they were about, helper definitions added.

It writes a Markdown summary (`--output`, e.g. docs/ecosystem.md) and one unified diff per package
and mode under `--diffs`, to be read before calling a change done.

    python scripts/ecosystem.py --output docs/ecosystem.md --diffs /tmp/eco-diffs
    python scripts/ecosystem.py --package accelerate==1.2.1 --from xla
    python scripts/ecosystem.py --path ~/src/xla/test --path ~/src/neuronx-samples   # local checkouts

`--from` is passed through to `neuron-migrate check` (when the CLI has that option) and picks which
files count as using the source framework, so another source (`--from cuda`) needs only a marker
in MARKERS and a package in its list.
"""

from __future__ import annotations

import argparse
import ast
import collections
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # review_counts.py beside this script
from review_counts import REVIEW, review_counts

ROOT = Path(__file__).resolve().parent.parent
# Pinned so that the table in docs/ecosystem.md can be reproduced.
PACKAGES = {
    "xla": ("optimum-neuron==0.0.28", "accelerate==1.2.1", "pytorch-lightning==2.4.0", "transformers==4.46.3"),
    # CUDA-heavy libraries: device placement, torch.cuda, AMP and NCCL all through their code.
    "cuda": ("pytorch-lightning==2.4.0", "accelerate==1.2.1", "timm==1.0.12"),
}
# What marks a file as using the source framework: importing torch_xla; CUDA code imports no
# module of its own, so for it, any `.cuda()`, `torch.cuda`, "cuda" device string or "nccl".
MARKERS = {"xla": "torch_xla", "cuda": "CUDA"}
_CUDA_USE = re.compile(r"\.cuda\(|\btorch\.cuda\b|[\"']cuda(?::\d+)?[\"']|[\"']nccl[\"']")
MODES = {"check": (), "fix": ("--fix",), "unsafe": ("--fix", "--unsafe-fixes")}
_UNDEFINED = ("UndefinedName", "UndefinedExport", "UndefinedLocal")


@dataclass(frozen=True)
class XlaSite:
    """One call of a torch_xla API: where, which qualified name, and whether it is a blocker."""

    path: str
    line: int
    name: str
    blocker: bool = False
    spmd_or_nxd: bool = False  # its file uses SPMD sharding or neuronx_distributed


@dataclass
class ModeResult:
    """What one mode did to one package."""

    seconds: float = 0.0
    crashes: list[str] = field(default_factory=list)
    findings: collections.Counter[str] = field(default_factory=collections.Counter)
    changed: list[str] = field(default_factory=list)
    not_compiling: list[str] = field(default_factory=list)
    new_undefined: list[str] = field(default_factory=list)
    not_idempotent: list[str] = field(default_factory=list)
    off_source: list[str] = field(default_factory=list)
    xla_sites: list[XlaSite] = field(default_factory=list)  # torch_xla calls in the files afterwards
    quality: collections.Counter[str] = field(default_factory=collections.Counter)
    review: collections.Counter[str] = field(default_factory=collections.Counter)  # see review_counts.py
    diff: str = ""


@dataclass
class PackageResult:
    spec: str
    files: int = 0
    source_files: list[str] = field(default_factory=list)
    xla_sites: list[XlaSite] = field(default_factory=list)  # torch_xla calls before any fix
    modes: dict[str, ModeResult] = field(default_factory=dict)
    error: str = ""


# -- fetching --------------------------------------------------------------------------------
def fetch(spec: str, work: Path) -> Path:
    """Download `spec`'s sdist with pip and unpack it; the unpacked folder."""
    downloads = work / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    # Older sdists (pytorch-lightning 2.4) import pkg_resources in setup.py, which setuptools 70 dropped.
    constraints = work / "build-constraints.txt"
    constraints.write_text("setuptools<70\n", encoding="utf-8")
    env = {**os.environ, "PIP_CONSTRAINT": str(constraints)}
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        "--dest",
        str(downloads),
        spec,
    ]
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=900, env=env)
    stem = spec.replace("==", "_").replace("-", "_").lower()
    archive = next(p for p in sorted(downloads.iterdir()) if p.name.replace("-", "_").lower().startswith(stem))
    target = work / "src" / archive.name.split(".tar")[0].removesuffix(".zip")
    if not target.exists():
        _unpack(archive, target.parent)
    return target


def _unpack(archive: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as handle:
            handle.extractall(dest)
        return
    with tarfile.open(archive) as handle:
        handle.extractall(dest, filter="data")


# -- running the tool ------------------------------------------------------------------------
def run_cli(root: Path, flags: tuple[str, ...], extra: list[str], jobs: int) -> tuple[list[dict], str | None]:
    """Findings (JSON) of one CLI run on `root`, and why it counts as a crash (None when it does not)."""
    command = [
        sys.executable,
        "-m",
        "neuron_migrate",
        "check",
        str(root),
        "--output-format",
        "json",
        "--exit-zero",
        "--no-cache",
        "--quiet",
        "-j",
        str(jobs),
        *flags,
        *extra,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, cwd=root, check=False)
    if done.returncode != 0 or "Traceback" in done.stderr:
        return [], f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:] or ['']}"
    try:
        findings = json.loads(done.stdout or "[]")
    except json.JSONDecodeError as exc:
        return [], f"unreadable JSON output: {exc}"
    return findings, None


def python_files(root: Path) -> dict[str, str]:
    """Relative path -> text of every `.py` file under `root`."""
    files = {}
    for path in sorted(root.rglob("*.py")):
        try:
            files[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return files


def imports_module(text: str, module: str) -> bool:
    """Whether `text` uses the source framework `module` (the CUDA marker: see MARKERS)."""
    if module == MARKERS["cuda"]:
        return _CUDA_USE.search(text) is not None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return module in text
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == module for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == module:
            return True
    return False


# -- torch_xla call sites -------------------------------------------------------------------
XLA = "torch_xla"
# Files that use these are SPMD / NxD programs: their torch_xla calls are reported apart.
_SPMD_OR_NXD = ("torch_xla.distributed.spmd", "torch_xla.experimental.xla_sharding", "neuronx_distributed")


def xla_call_sites(text: str, path: str) -> list[XlaSite]:
    """Every call whose callee resolves (alias-aware, neuron-migrate's own resolver) to torch_xla."""
    from neuron_migrate.analysis.names import Resolver

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    resolver = Resolver(tree)
    spmd_or_nxd = _uses_spmd_or_nxd(tree)
    found: list[XlaSite] = []

    def visit(node: ast.AST, scope: object) -> None:
        if node in resolver.scope_of:
            scope = resolver.scope_for(node)
        if isinstance(node, ast.Call):
            names = sorted(n for n in resolver.qualified_names(node.func, scope) if n.split(".")[0] == XLA)  # type: ignore[arg-type]
            if names:
                found.append(XlaSite(path, node.lineno, names[0], spmd_or_nxd=spmd_or_nxd))
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, resolver.module_scope)
    return found


def _uses_spmd_or_nxd(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        if any(m == p or m.startswith(p + ".") for m in modules for p in _SPMD_OR_NXD):
            return True
    return False


def with_blockers(sites: list[XlaSite], text: str, path: str, source: str) -> list[XlaSite]:
    """`sites` with `blocker` set where a blocker finding of neuron-migrate starts on their line."""
    from dataclasses import replace

    from neuron_migrate.engine.pipeline import check_source
    from neuron_migrate.settings import Settings

    if not sites:
        return sites
    result = check_source(text, path, Settings(select=("NM",), families=(source,)))
    lines = {line for f in result.findings if f.blocker for line in range(f.start.line, f.end.line + 1)}
    return [replace(s, blocker=s.line in lines) for s in sites]


def undefined_names(text: str, filename: str) -> collections.Counter[str]:
    """pyflakes' undefined-name messages for `text`, by name."""
    from pyflakes import checker  # a test dependency; only this script needs it

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text, filename=filename)
    except (SyntaxError, ValueError):
        return collections.Counter()
    found = checker.Checker(tree, filename=filename)
    return collections.Counter(
        f"{type(m).__name__}:{m.message_args[0]}" for m in found.messages if type(m).__name__ in _UNDEFINED
    )


QUALITY = {
    "rank_guards": "rank guards added",
    "dead_blocks": "blocks left with only `pass`",
    "orphaned_comments": "comments left without their code",
    "helpers": "helper definitions added",
}
_RANK_GUARD = re.compile(r"^\s*(?:el)?if\b.*(?:\bRANK\b|\bLOCAL_RANK\b|get_rank\(\)|\brank\b)")


def quality_counts(old: str, new: str) -> collections.Counter[str]:
    """How much of what a fix wrote into `new` (from `old`) an expert would not write; see QUALITY.

    - rank guards: `if` lines testing `RANK`, `LOCAL_RANK`, `get_rank()` or a `rank`, new minus old;
    - dead blocks: `if`/`for`/`while`/`with`/`try` blocks and functions whose body is only `pass`
      (and a docstring), new minus old;
    - orphaned comments: a comment line kept whose next line was code at its indentation and is
      now a blank line, the end of its block or the end of the file;
    - helpers: top-level functions and classes defined in `new` and not in `old`.
    """
    counts: collections.Counter[str] = collections.Counter()
    old_lines, new_lines = old.splitlines(), new.splitlines()
    guards = sum(bool(_RANK_GUARD.match(line)) for line in new_lines) - sum(
        bool(_RANK_GUARD.match(line)) for line in old_lines
    )
    counts["rank_guards"] = max(0, guards)
    counts["dead_blocks"] = max(0, _dead_blocks(new) - _dead_blocks(old))
    counts["helpers"] = len(_top_level_names(new) - _top_level_names(old))
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag != "equal":
            continue
        for offset in range(i2 - i1):
            i, j = i1 + offset, j1 + offset
            if not old_lines[i].lstrip().startswith("#"):
                continue
            indent = len(old_lines[i]) - len(old_lines[i].lstrip())
            before_next = old_lines[i + 1] if i + 1 < len(old_lines) else ""
            after_next = new_lines[j + 1] if j + 1 < len(new_lines) else ""
            was_code = before_next.strip() and not before_next.lstrip().startswith("#")
            was_code = was_code and len(before_next) - len(before_next.lstrip()) == indent
            now = after_next.strip()
            gone = not now or len(after_next) - len(after_next.lstrip()) < indent
            if was_code and gone and before_next != after_next:
                counts["orphaned_comments"] += 1
    return counts


def _parsed(text: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _dead_blocks(text: str) -> int:
    tree = _parsed(text)
    if tree is None:
        return 0
    blocks = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef, ast.AsyncFunctionDef)
    count = 0
    for node in ast.walk(tree):
        if not isinstance(node, blocks):
            continue
        body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) == 1 and isinstance(body[0], ast.Pass) and not getattr(node, "orelse", None):
            count += 1
    return count


def _top_level_names(text: str) -> set[str]:
    tree = _parsed(text)
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {s.name for s in tree.body if isinstance(s, kinds)} if tree is not None else set()


def compiles(text: str, filename: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def run_mode(
    src: Path, work: Path, mode: str, before: dict[str, str], marker: str, extra: list[str], jobs: int
) -> ModeResult:
    """Run one mode on a fresh copy of the package and measure what it changed."""
    result = ModeResult()
    root = work / mode / src.name
    if mode != "check":
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(src, root, symlinks=True)  # a checkout may hold dangling links
    else:
        root = src
    started = time.monotonic()
    findings, crash = run_cli(root, MODES[mode], extra, jobs)
    result.seconds = time.monotonic() - started
    if crash:
        result.crashes.append(crash)
    result.crashes += [f"{f['filename']}: {f['message']}" for f in findings if f["code"] == "NM908"]
    result.findings = collections.Counter(f["code"] for f in findings)
    if mode == "check":
        return result
    after = python_files(root)
    result.changed = sorted(p for p in before if after.get(p) != before[p])
    diff: list[str] = []
    for path in result.changed:
        old, new = before[path], after.get(path, "")
        diff += difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}")
        if compiles(old, path) and not compiles(new, path):
            result.not_compiling.append(path)
        added = undefined_names(new, path) - undefined_names(old, path)
        result.new_undefined += [f"{path}: {name}" for name in sorted(added)]
        if imports_module(old, marker) and not imports_module(new, marker):
            result.off_source.append(path)
        result.quality.update(quality_counts(old, new))
        result.review.update(review_counts(old, new))
    if marker == XLA:
        result.xla_sites = [
            site
            for path, text in sorted(after.items())
            for site in with_blockers(xla_call_sites(text, path), text, path, "xla")
        ]
    result.diff = "".join(diff)
    _, crash = run_cli(root, MODES[mode], extra, jobs)  # a second --fix must change nothing
    if crash:
        result.crashes.append(f"second run: {crash}")
    again = python_files(root)
    result.not_idempotent = sorted(p for p in after if again.get(p) != after[p])
    return result


def check_package(spec: str, work: Path, source: str, extra: list[str], jobs: int) -> PackageResult:
    package = PackageResult(spec)
    try:
        src = Path(spec) if Path(spec).is_dir() else fetch(spec, work)
    except (subprocess.SubprocessError, StopIteration, OSError, tarfile.TarError) as exc:
        package.error = f"download failed: {type(exc).__name__}: {str(exc)[:200]}"
        return package
    before = python_files(src)
    package.files = len(before)
    package.source_files = sorted(p for p, text in before.items() if imports_module(text, MARKERS[source]))
    if source == "xla":
        package.xla_sites = [site for path in package.source_files for site in xla_call_sites(before[path], path)]
    for mode in MODES:
        package.modes[mode] = run_mode(src, work, mode, before, MARKERS[source], extra, jobs)
    return package


# -- the report ------------------------------------------------------------------------------
HEADER = [
    "# Ecosystem check",
    "",
    "Generated by `python scripts/ecosystem.py --from xla,cuda --output docs/ecosystem.md` (pinned sdists from",
    "the package index, downloaded with pip into a temporary folder; do not edit by hand). Each fix mode runs on",
    "its own copy; pass `--diffs DIR` to get the diffs, and read them before calling a change done.",
]


def render(results: list[PackageResult], source: str) -> str:
    """One source framework's section: the summary table, findings per rule, and the problems."""
    marker = MARKERS[source]
    uses = (
        "imports it" if source != "cuda" else 'calls `.cuda()` or `torch.cuda`, or names a `"cuda"` device or `"nccl"`'
    )
    lines = [
        "",
        f"## `--from {source}`",
        "",
        f'A file "uses {marker}" when it {uses}.',
        "",
        (
            f"| package | .py files | files using {marker} | findings | crashes | files changed (safe / +unsafe) "
            f"| no longer compiling | new undefined names | not idempotent | fully off {marker} (safe / +unsafe) |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for package in results:
        if package.error:
            lines.append(f"| {package.spec} | {package.error} |  |  |  |  |  |  |  |  |")
            continue
        check = package.modes["check"]
        crashes = sum(len(m.crashes) for m in package.modes.values())

        def pair(attr: str, package: PackageResult = package) -> str:
            safe, unsafe = package.modes["fix"], package.modes["unsafe"]
            return f"{len(getattr(safe, attr))} / {len(getattr(unsafe, attr))}"

        lines.append(
            f"| {package.spec} | {package.files} | {len(package.source_files)} | {sum(check.findings.values())} | {crashes} "
            f"| {pair('changed')} | {pair('not_compiling')} | {pair('new_undefined')} | {pair('not_idempotent')} "
            f"| {pair('off_source')} |"
        )
    lines += _quality_table(results)
    lines += _review_table(results)
    lines += _rule_table(results)
    if source == "xla":
        lines += _xla_site_table(results)
    lines += _problems(results)
    return "\n".join(lines) + "\n"


def _quality_table(results: list[PackageResult]) -> list[str]:
    """What the fixes wrote that an expert would not (see `quality_counts`), per package."""
    lines = [
        "",
        "### What a reviewer would not merge (safe / +unsafe)",
        "",
        "| package | " + " | ".join(QUALITY.values()) + " |",
        "|---|" + "---|" * len(QUALITY),
    ]
    for package in results:
        if package.error:
            continue
        safe, unsafe = package.modes["fix"].quality, package.modes["unsafe"].quality
        lines.append(f"| {package.spec} | " + " | ".join(f"{safe[k]} / {unsafe[k]}" for k in QUALITY) + " |")
    return lines


def _review_table(results: list[PackageResult]) -> list[str]:
    """The finer counts of `review_counts.REVIEW`, one row per count, one column per package."""
    shown = [p for p in results if not p.error]
    lines = [
        "",
        "### Patterns a reviewer would rewrite (safe / +unsafe; added by the fixes)",
        "",
        "| pattern | " + " | ".join(p.spec for p in shown) + " | total |",
        "|---|" + "---|" * (len(shown) + 1),
    ]
    for key, label in REVIEW.items():
        cells = [(p.modes["fix"].review[key], p.modes["unsafe"].review[key]) for p in shown]
        total = (sum(c[0] for c in cells), sum(c[1] for c in cells))
        lines.append(f"| {label} | " + " | ".join(f"{a} / {b}" for a, b in [*cells, total]) + " |")
    return lines


def _rule_table(results: list[PackageResult]) -> list[str]:
    totals: dict[str, collections.Counter[str]] = {mode: collections.Counter() for mode in MODES}
    for package in results:
        for mode, result in package.modes.items():
            totals[mode].update(result.findings)
    codes = sorted(set().union(*totals.values()))
    lines = [
        "",
        "### Findings per rule (all packages)",
        "",
        "| rule | check | left after `--fix` | left after `--fix --unsafe-fixes` |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {code} | {totals['check'][code]} | {totals['fix'][code]} | {totals['unsafe'][code]} |" for code in codes
    ]
    return lines


def share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _xla_site_table(results: list[PackageResult]) -> list[str]:
    """torch_xla calls before and after `--fix --unsafe-fixes`; the share no blocker accounts for."""
    lines = [
        "",
        "### torch_xla call sites left after `--fix --unsafe-fixes`",
        "",
        "A call site is a call whose callee resolves to a torch_xla API. *Not blockers* are the calls left that",
        "no blocker finding accounts for; their share is of the call sites before any fix. *Outside SPMD and NxD*",
        "leaves out the files that use SPMD sharding or neuronx_distributed.",
        "",
        (
            "| package | call sites before | left | left, blockers | left, not blockers | share not blockers "
            "| outside SPMD and NxD: before | left, not blockers | share |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    every_before: list[XlaSite] = []
    every_left: list[XlaSite] = []
    for package in results:
        if package.error or "unsafe" not in package.modes:
            continue
        before, left = package.xla_sites, package.modes["unsafe"].xla_sites
        every_before += before
        every_left += left
        lines.append(_site_row(package.spec, before, left))
    lines.append(_site_row("**all**", every_before, every_left))
    names = collections.Counter(s.name for s in every_left if not s.blocker and not s.spmd_or_nxd)
    if names:
        lines += ["", "Not-blocker calls left outside SPMD and NxD, by API:", ""]
        lines += [f"- `{name}`: {count}" for name, count in names.most_common(40)]
    return lines


def _site_row(label: str, before: list[XlaSite], left: list[XlaSite]) -> str:
    loose = [s for s in left if not s.blocker]
    plain_before = [s for s in before if not s.spmd_or_nxd]
    plain_loose = [s for s in loose if not s.spmd_or_nxd]
    return (
        f"| {label} | {len(before)} | {len(left)} | {len(left) - len(loose)} | {len(loose)} "
        f"| {share(len(loose), len(before))} | {len(plain_before)} | {len(plain_loose)} "
        f"| {share(len(plain_loose), len(plain_before))} |"
    )


def _problems(results: list[PackageResult]) -> list[str]:
    lines = ["", "### Problems", ""]
    found = False
    for package in results:
        for mode, result in package.modes.items():
            problems = (
                ("crash", result.crashes),
                ("no longer compiles", result.not_compiling),
                ("new undefined name", result.new_undefined),
                ("not idempotent", result.not_idempotent),
            )
            for label, items in problems:
                for item in items:
                    found = True
                    lines.append(f"- {package.spec} ({mode}): {label}: `{item}`")
    if not found:
        lines.append("None.")
    return lines


# The revision the NxD section compares with: the last one before the NxD rules (one NM214 entry).
NXD_BEFORE = "afafe6b"


def _nxd_section(roots: list[Path], revision: str) -> str:
    """The NxD references of the local folders, and their terminal actions before and after."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import ecosystem_nxd

    with tempfile.TemporaryDirectory(prefix="nm-before-") as temp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", revision, "neuron_migrate", "rules"],
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", temp], input=archive.stdout, check=True)
        lines = ecosystem_nxd.section(roots, Path(temp), f"`{revision}`")
    return "\n".join(lines) + "\n" if lines else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--package", action="append", help="pip requirement to check (repeatable); default: the pinned list"
    )
    parser.add_argument(
        "--from",
        dest="source",
        default="xla",
        help=f"source frameworks, comma-separated ({', '.join(sorted(MARKERS))}); passed to the CLI",
    )
    parser.add_argument(
        "--path", action="append", default=[], help="local folder to check as a package (repeatable; a checkout)"
    )
    parser.add_argument("--output", type=Path, help="write the Markdown summary here (default: stdout)")
    parser.add_argument("--diffs", type=Path, help="write one unified diff per package and mode into this folder")
    parser.add_argument("--work", type=Path, help="work folder (default: a temporary folder, removed afterwards)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="worker processes for each CLI run")
    parser.add_argument(
        "--nxd-before",
        default=NXD_BEFORE,
        help="git revision whose neuron-migrate the NxD section compares with (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    sources = [s.strip() for s in args.source.split(",") if s.strip()]
    unknown = [s for s in sources if s not in MARKERS]
    if unknown or not sources:
        parser.error(
            f"--from: unknown source {', '.join(unknown) or '(none)'}; choose from {', '.join(sorted(MARKERS))}"
        )
    sections, results = [], []
    for source in sources:
        extra = ["--from", source] if source != "xla" else []  # xla is the CLI's default
        specs = [
            *(args.package or ([] if args.path else PACKAGES[source])),
            *(str(Path(p).resolve()) for p in args.path),
        ]
        with tempfile.TemporaryDirectory(prefix="nm-ecosystem-") as temp:
            work = (args.work / source) if args.work else Path(temp)
            found = [check_package(spec, work, source, extra, args.jobs) for spec in specs]
        sections.append(render(found, source))
        if source == "xla" and args.path:
            sections.append(_nxd_section([Path(p) for p in args.path], args.nxd_before))
        results += found
        if args.diffs:
            args.diffs.mkdir(parents=True, exist_ok=True)
            for package in found:
                for mode, result in package.modes.items():
                    if result.diff:
                        label = Path(package.spec).name if Path(package.spec).is_dir() else package.spec
                        name = f"{source}.{label.replace('==', '-')}.{mode}.diff"
                        (args.diffs / name).write_text(result.diff, encoding="utf-8")
    report = "\n".join(HEADER) + "\n" + "".join(sections)
    if args.output:
        args.output.write_text(report, encoding="utf-8")
    else:
        sys.stdout.write(report)
    bad = any(
        m.crashes or m.not_compiling or m.new_undefined or m.not_idempotent for p in results for m in p.modes.values()
    )
    return 1 if bad or any(p.error for p in results) else 0


if __name__ == "__main__":
    sys.exit(main())
