"""Suppressions, as a post-processing step over one file's findings.

- `# noqa: NM101, NM201` or a bare `# noqa` on a finding's first or last line (or, when the
  finding starts inside a multi-line string or a backslash continuation, on the line where that
  ends, which is where `--add-noqa` puts it); a bare one never hides a torch_xla import (NM601,
  NM602): it is usually flake8's F401, and the import fails where torch_xla is not installed;
- `# neuron-migrate: noqa` (optionally `: NM101`) anywhere in the file, for the whole file;
- `per-file-ignores` from the config (globs -> code prefixes).

A listed `NM` code that suppresses nothing is reported as NM910 with a safe fix that removes it.
Bare `# noqa` and codes of other tools (`E501`) may belong to other linters and are never
reported; nor are codes of rules that are disabled for the file, since a narrower run cannot
tell whether they are needed.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import warnings
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from neuron_migrate.analysis.index import IMPORT_RULE
from neuron_migrate.analysis.source import SourceText
from neuron_migrate.catalogue import RuleSpec, load_catalogue
from neuron_migrate.engine.budget import over_budget
from neuron_migrate.engine.check import tool_finding
from neuron_migrate.engine.directives import (
    RAW_DIRECTIVES,
    Directive,
    Layout,
    layout_of,
    line_layout,
    noqa_edit,
    parse_directives,
    removal_edit,
)
from neuron_migrate.engine.ruleset import enabled_codes
from neuron_migrate.model import FileResult, Finding, Fix, Position, Requirement, Safety, TextEdit
from neuron_migrate.patterns import PathMatcher
from neuron_migrate.registry import registry
from neuron_migrate.settings import RuleSources, Settings

UNUSED = "NM910"
# Findings that mean the file was not (fully) analysed: no suppression can be judged unused.
_INCOMPLETE = frozenset({"NM901", "NM902", "NM903", "NM904", "NM905", "NM906", "NM911"})


def ignored_prefixes(path: str, settings: Settings) -> tuple[str, ...]:
    """The code prefixes `per-file-ignores` turns off for `path`."""
    if not settings.per_file_ignores:
        return ()
    out: list[str] = []
    for glob, codes in settings.per_file_ignores:
        negate = glob.startswith("!")
        body = glob[1:] if negate else glob
        hit = _glob(body, os.getcwd()).match(path)  # anchored at the config's folder already
        if hit != negate:
            out.extend(codes)
    return tuple(out)


@functools.lru_cache(maxsize=16)
def _import_codes(sources: RuleSources) -> frozenset[str]:
    """The codes of the import rules (a torch_xla import, which fails without torch_xla)."""
    rules = registry(sources)
    return frozenset(
        spec.code
        for spec in rules.specs
        if spec.detector in rules.detectors and getattr(rules.detectors[spec.detector][1], IMPORT_RULE, False)
    )


@functools.lru_cache(maxsize=256)
def _glob(glob: str, cwd: str) -> PathMatcher:
    return PathMatcher((glob,), cwd)


class Suppressor:
    """Decides, for one file's text, which findings are suppressed and by what."""

    def __init__(self, text: str, path: str, settings: Settings, line_comments: bool = False) -> None:
        self.src = SourceText(text)
        if line_comments:  # not Python: find noqa comments by a line scan, never by tokenizing
            from neuron_migrate.engine.formats.kinds import file_kind

            self.__dict__["layout"] = line_layout(self.src, file_kind(path))
        self.ignored = ignored_prefixes(path, settings)
        self.import_codes = _import_codes(settings.rule_sources)
        # Text that does not tokenize has no comments we can trust (a directive may sit inside a
        # string), and its only findings say it is broken: nothing is suppressed by comment.
        relevant = _mentions_noqa(text) if settings.add_noqa else _mentions_our_noqa(text)
        mentioned = relevant and self.layout.line_ends is not None
        self.directives = parse_directives(self.src, self.layout) if mentioned else ()
        self.by_line: dict[int, list[Directive]] = {}
        for directive in self.directives:
            if not directive.file_level:
                self.by_line.setdefault(directive.line, []).append(directive)

    @cached_property
    def layout(self) -> Layout:
        return layout_of(self.src)

    def reason(self, finding: Finding) -> Directive | str | None:
        """The per-file-ignores prefix or the directive that suppresses `finding`, else None."""
        prefix = next((p for p in self.ignored if finding.code.startswith(p)), None)
        if prefix is not None:
            return prefix
        for directive in self.directives:
            if directive.file_level and self._covers(directive, finding):
                return directive
        if not self.by_line:
            return None
        lines = {finding.start.line, finding.end.line, self.layout.comment_line(finding.start.line)}
        for line in sorted(lines):
            for directive in self.by_line.get(line, ()):
                if self._covers(directive, finding):
                    return directive
        return None

    def _covers(self, directive: Directive, finding: Finding) -> bool:
        if finding.code == UNUSED and not directive.codes and self.src.position(directive.start) == finding.start:
            return False  # a bare directive cannot hide the report about itself; naming NM910 can
        if not directive.codes and not directive.file_level and finding.code in self.import_codes:
            return False  # a bare noqa directive is flake8's F401 on a torch_xla import, which blocks the run
        return not directive.codes or finding.code in directive.codes

    def reported(self, finding: Finding) -> bool:
        return self.reason(finding) is None


def _mentions_noqa(text: str) -> bool:
    return "noqa" in text.lower()


def _mentions_our_noqa(text: str) -> bool:
    """Whether a directive here can matter without `--add-noqa`: a bare one, or one naming an
    `NM` code. `# noqa: E501` and its like cover no finding of ours and are never reported, so
    a file that has only those needs no tokenize pass (most of a check's time on real code that
    uses other linters' directives). A cheap over-approximation: directives inside strings count.
    """
    if not _mentions_noqa(text):
        return False
    for pattern in RAW_DIRECTIVES:
        for match in pattern.finditer(text):
            codes = match.group("codes")
            if not codes or any(code.upper().startswith("NM") for code in re.split(r"[\s,]+", codes)):
                return True
    return False


@dataclass(frozen=True)
class Outcome:
    """A file's findings split by suppression, plus NM910 findings for unused suppressions."""

    kept: tuple[Finding, ...]
    suppressed: tuple[Finding, ...]
    unused: tuple[Finding, ...]


def split(
    text: str, path: str, findings: Sequence[Finding], settings: Settings, suppressor: Suppressor | None = None
) -> Outcome:
    """Suppress what the comments and per-file-ignores say; report suppressions that do nothing."""
    suppressor = suppressor or Suppressor(text, path, settings)
    kept, suppressed, used = _partition(suppressor, findings)
    unused: list[Finding] = []
    if not settings.add_noqa and _judge_unused(findings, settings, suppressor):
        specs = registry(settings.rule_sources).specs
        candidates = unused_findings(suppressor, path, used, enabled_codes(settings), specs, settings.families)
        more_kept, more_suppressed, _ = _partition(suppressor, candidates)
        unused, suppressed = list(more_kept), [*suppressed, *more_suppressed]
    return Outcome(tuple(kept), tuple(suppressed), tuple(unused))


def _partition(
    suppressor: Suppressor, findings: Iterable[Finding]
) -> tuple[list[Finding], list[Finding], dict[Directive, set[str]]]:
    kept: list[Finding] = []
    suppressed: list[Finding] = []
    used: dict[Directive, set[str]] = {}
    for finding in findings:
        reason = suppressor.reason(finding)
        if reason is None:
            kept.append(finding)
            continue
        suppressed.append(finding)
        if isinstance(reason, Directive):
            used.setdefault(reason, set()).add(finding.code)
    return kept, suppressed, used


def _judge_unused(findings: Sequence[Finding], settings: Settings, suppressor: Suppressor) -> bool:
    if not suppressor.directives or any(f.code in _INCOMPLETE for f in findings):
        return False
    if suppressor.layout.line_ends is None:
        return False  # the text does not tokenize: a "comment" may be inside a string
    return UNUSED in enabled_codes(settings) and not any(UNUSED.startswith(p) for p in suppressor.ignored)


def unused_findings(
    suppressor: Suppressor,
    path: str,
    used: dict[Directive, set[str]],
    enabled: frozenset[str],
    specs: tuple[RuleSpec, ...] | None = None,
    families: tuple[str, ...] | None = None,
) -> list[Finding]:
    """An NM910 finding, with its removal fix, for each directive that lists unused codes.

    A blanket file-level directive is judged only when every rule of the `--from` families is on.
    """
    specs = load_catalogue() if specs is None else specs
    known = frozenset(spec.code for spec in specs)
    runnable = {s.code for s in specs if not s.retired and (families is None or set(s.families) & set(families))}
    every_rule_on = runnable <= enabled and not suppressor.ignored
    out = []
    for directive in suppressor.directives:
        hits = used.get(directive, set())
        if not directive.codes:
            if directive.file_level and not hits and every_rule_on:
                out.append(_unused_finding(suppressor.src, path, directive, (), ()))
            continue
        unused = tuple(c for c in directive.codes if _is_unused(c, hits, enabled, known, suppressor.ignored))
        if unused:
            unknown = tuple(c for c in unused if c not in known)
            out.append(_unused_finding(suppressor.src, path, directive, unused, unknown))
    return out


def _is_unused(
    code: str, hits: set[str], enabled: frozenset[str], known: frozenset[str], ignored: tuple[str, ...]
) -> bool:
    if not code.startswith("NM") or code == UNUSED or code in hits:
        return False
    if code not in known:
        return True  # a typo or a retired number: it can never suppress anything
    return code in enabled and not any(code.startswith(p) for p in ignored)


def _unused_finding(
    src: SourceText, path: str, directive: Directive, unused: tuple[str, ...], unknown: tuple[str, ...]
) -> Finding:
    text = src.text[directive.start : directive.end]
    keep = tuple(c for c in directive.codes if c not in unused)
    if keep:
        what = ", ".join(f"`{c}`" for c in unused)
        message = f"Remove the unused {what} from `{text}`"
    else:
        message = f"Remove the unused `{text}`"
    if unknown:
        message += "; no rule has that code" if len(unknown) == 1 else "; no rules have those codes"
    start = src.position(directive.start)
    edit = removal_edit(src, directive, keep)
    fix = Fix(
        Safety.SAFE, "Remove the unused suppression", (TextEdit(src.position(edit[0]), src.position(edit[1]), edit[2]),)
    )
    finding = tool_finding(path, UNUSED, message, start.line, start.column)
    return replace(finding, end=src.position(directive.end), fix=fix, snippet=text)


def apply_removals(text: str, unused: Sequence[Finding]) -> tuple[str, tuple[int, ...]]:
    """Apply the NM910 fixes; returns the new text and the 1-based lines deleted outright."""
    src = SourceText(text)
    edits = []
    for finding in unused:
        assert finding.fix is not None
        for edit in finding.fix.edits:
            edits.append((_offset(src, edit.start), _offset(src, edit.end), edit.content))
    deleted = tuple(sorted(src.position(s).line for s, e, c in edits if not c and _whole_lines(src, s, e)))
    for start, end, content in sorted(edits, reverse=True):
        text = text[:start] + content + text[end:]
    return text, deleted


def _offset(src: SourceText, position: Position) -> int:
    return src.line_start(position.line) + position.column - 1


def _whole_lines(src: SourceText, start: int, end: int) -> bool:
    return src.position(start).column == 1 and end > start and src.position(end).column == 1


def shift(finding: Finding, deleted: Sequence[int]) -> Finding:
    """Move a finding (and its fix) up by the number of deleted lines above it."""
    if not deleted:
        return finding

    def moved(position: Position) -> Position:
        return Position(position.line - bisect_left(deleted, position.line), position.column)

    fix = finding.fix
    if fix is not None:
        edits = tuple(replace(e, start=moved(e.start), end=moved(e.end)) for e in fix.edits)
        fix = replace(fix, edits=edits, requires=tuple(replace(r, start=moved(r.start)) for r in fix.requires))
    return replace(finding, start=moved(finding.start), end=moved(finding.end), fix=fix)


def add_noqa(text: str, findings: Sequence[Finding], suppressor: Suppressor) -> tuple[str, tuple[Finding, ...]]:
    """`text` with a `# noqa: CODE` for every finding, merged into existing directives; also
    the findings that got one (tool findings such as NM901 do not)."""
    wanted: dict[int, set[str]] = {}
    noted = []
    for finding in findings:
        if finding.category == "tool":
            continue  # unreadable or unparseable files are fixed, not silenced
        wanted.setdefault(suppressor.layout.comment_line(finding.start.line), set()).add(finding.code)
        noted.append(finding)
    edits = [noqa_edit(suppressor.by_line.get(line, []), suppressor.src, line, codes) for line, codes in wanted.items()]
    for start, end, content in sorted(edits, reverse=True):
        text = text[:start] + content + text[end:]
    return text, tuple(noted)


_RECENT: dict[tuple[object, ...], Suppressor] = {}
_KEEP = 8


def suppressor_for(text: str, path: str, settings: Settings, line_comments: bool = False) -> Suppressor:
    """The `Suppressor` of this text, shared with the last callers that asked for the same text:
    the rounds of a fix run, the in-memory run of a check and the closing `finish` ask again
    for texts already seen, and a file with directives that matter is tokenized each time.
    A Suppressor is read-only once built, and reads of `settings` only `add_noqa` and
    `per_file_ignores` (matched against the working folder)."""
    key = (text, path, line_comments, settings.add_noqa, settings.per_file_ignores, os.getcwd())
    found = _RECENT.get(key)
    if found is None:
        found = _RECENT[key] = Suppressor(text, path, settings, line_comments)
        while len(_RECENT) > _KEEP:
            del _RECENT[next(iter(_RECENT))]
    return found


def needed(text: str, settings: Settings) -> bool:
    """Whether anything here can suppress or be added: a cheap test before any real work."""
    return bool(settings.per_file_ignores) or settings.add_noqa or _mentions_noqa(text)


def reporter(text: str, path: str, settings: Settings, line_comments: bool = False) -> Callable[[Finding], bool]:
    """A test for the fix loop: is this finding reported (so its fix may be applied)?"""
    if not needed(text, settings):
        return lambda finding: True
    return suppressor_for(text, path, settings, line_comments).reported


def finish(result: FileResult, settings: Settings, line_comments: bool = False) -> FileResult:
    """Apply suppressions to a checked file; with `--fix`, also apply the NM910 removals.

    `line_comments`: the file is a requirements file, shell script or other text file whose
    `#` comments are found line by line (see `directives.line_layout`).
    """
    text = result.fixed_source if result.fixed_source is not None else result.source
    if text is None or not needed(text, settings):
        return result
    suppressor = suppressor_for(text, result.path, settings, line_comments)
    outcome = _keep_imports_of_suppressed_uses(split(text, result.path, result.findings, settings, suppressor))
    if settings.add_noqa:
        new_text, noted = add_noqa(text, outcome.kept, suppressor)
        changed = new_text if new_text != result.source else None
        unannotated = tuple(f for f in outcome.kept if f not in noted)
        return replace(result, findings=(*noted, *unannotated), fixed_source=changed, suppressed=outcome.suppressed)
    unjudged = _unjudged(text, result.path) if outcome.unused and not line_comments else None
    if unjudged is not None:  # the comments of a file Python refuses are neither judged nor removed
        return replace(result, findings=_sorted([*outcome.kept, unjudged]), suppressed=outcome.suppressed)
    fixable = [f for f in outcome.unused if settings.allows(Safety.SAFE.value)]
    if fixable and line_comments and not _parses(text, result.path):
        fixable = []  # a file that does not parse is never changed
    if not fixable:
        return replace(result, findings=_sorted([*outcome.kept, *outcome.unused]), suppressed=outcome.suppressed)
    new_text, deleted = apply_removals(text, fixable)
    return replace(
        result,
        findings=_sorted(shift(f, deleted) for f in outcome.kept),
        fixed=(*result.fixed, *fixable),
        fixed_source=new_text if new_text != result.source else None,
        suppressed=tuple(shift(f, deleted) for f in outcome.suppressed),
    )


def _keep_imports_of_suppressed_uses(outcome: Outcome) -> Outcome:
    """A suppressed finding is not fixed, so a fix that requires its fix (an import that was to
    go with its uses, `engine/waiting_imports.py`) is not made either: it is dropped, and so is
    one that requires a dropped one (suppressed or not)."""
    missing = {Requirement(f.code, f.start) for f in outcome.suppressed}
    groups = [list(outcome.kept), list(outcome.suppressed)]
    if not missing or not any(f.fix is not None and f.fix.requires for group in groups for f in group):
        return outcome
    changed = True
    while changed:
        changed = False
        for group in groups:
            for index, finding in enumerate(group):
                if finding.fix is not None and missing.intersection(finding.fix.requires):
                    missing.add(Requirement(finding.code, finding.start))
                    group[index] = replace(finding, fix=None)
                    changed = True
    return Outcome(tuple(groups[0]), tuple(groups[1]), outcome.unused)


def _parses(text: str, text_file: str) -> bool:
    """Whether a text file (`text_file`, its path) parses as what it is: a TOML file as TOML; a
    shell script, requirements file or setup.cfg has no parser here (its comments come from the
    line scan, which knows its quoting), so it counts as parsed."""
    from neuron_migrate.engine.formats.kinds import file_kind, valid_toml

    return file_kind(text_file) != "pyproject" or valid_toml(text)


def _unjudged(text: str, path: str) -> Finding | None:
    """Why the unused suppressions of Python `text` cannot be judged: NM904 for a file over the
    parse budget, NM901 for one Python does not compile (`return` outside a function parses);
    None when they can. A file that can match no rule reaches here unparsed."""
    too_costly = over_budget(text, fixing=False)
    if too_costly is not None:
        return tool_finding(path, "NM904", f"Exclude this file or split it; {too_costly}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if ".ipynb" in path else 0  # IPython runs `await` in cells
            compile(text, path, "exec", flags=flags, dont_inherit=True)
    except SyntaxError as exc:
        message = f"Fix the syntax error before migrating: {exc.msg}"
        return tool_finding(path, "NM901", message, exc.lineno or 1, max(exc.offset or 1, 1))
    except (ValueError, RecursionError, MemoryError) as exc:
        return tool_finding(path, "NM901", f"Fix the file before migrating: {type(exc).__name__}")
    return None


def _sorted(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    return tuple(sorted(findings, key=lambda f: f.sort_key))
