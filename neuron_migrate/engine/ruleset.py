"""The rule set of a run: the enabled rules indexed for the walk, their prefilter, and the
narrowing of the set to the rules that can fire on one text.

A file is parsed only when its text contains one of the enabled rules' substring triggers, or
one of their qualified names' identifying parts as a whole identifier (`might_match`). The
index is built once per rule set (`build_ruleset`, cached); each rule's share of the prefilter
(its `Gate`) lets `narrowed` drop the rules whose triggers a text lacks before the walk.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from neuron_migrate.analysis.index import IMPORT_RULE, RESOLVED_ONLY, RuleIndex
from neuron_migrate.analysis.values import Plan
from neuron_migrate.catalogue import RuleSpec
from neuron_migrate.registry import CATCH_ALL, FILE_DETECTORS, RUNTIME_DETECTORS, registry
from neuron_migrate.registry import enabled_codes as registry_codes
from neuron_migrate.settings import RuleSources, Settings


@dataclass(frozen=True)
class Ruleset:
    """The enabled rules, indexed, plus the prefilter tokens that can trigger them."""

    index: RuleIndex
    triggers: tuple[str, ...]  # substrings: the text must contain one
    codes: frozenset[str]
    target_version: str = "2.14"  # selects rules/compat/<version>/ for `compat = true` rules
    target: str = "neuron"  # `--target`: what the fixes write
    names: tuple[tuple[str, re.Pattern[str]], ...] = ()  # or one of these as a whole identifier
    fixes: Mapping[str, Callable[..., Plan | None]] = field(
        default_factory=lambda: MappingProxyType({}), compare=False
    )  # `fix = "..."` names
    sources: RuleSources = RuleSources()
    gates: tuple[Gate, ...] = ()  # what each indexed rule needs in a text to fire, as the prefilter reads it

    @functools.cached_property
    def gate_words(self) -> tuple[str, ...]:
        """Every substring and identifier the gates name, once."""
        return tuple(sorted({w for g in self.gates for w in (*g.substrings, *g.identifiers)}))

    @functools.cached_property
    def gate_tests(self) -> tuple[tuple[str, frozenset[str]], ...]:
        """The gate words, shortest first, each with the other gate words it contains: a text
        that lacks one of those lacks the word too, and `narrowed` does not search for it."""
        words = sorted(self.gate_words, key=lambda w: (len(w), w))
        return tuple((w, frozenset(o for o in words if o != w and o in w)) for w in words)

    @functools.cached_property
    def narrowings(self) -> dict[frozenset[str], Ruleset]:
        """The narrowed sets made from this one so far, by their codes (see `narrowed`)."""
        return {}

    @functools.cached_property
    def by_code(self) -> tuple[_Placed, ...]:
        """Each index table (exact, prefix, detectors, unresolved), its entries grouped by rule code
        with their places in the table: what `_subset` assembles a narrowed index from."""
        index = self.index
        placed: list[_Placed] = []
        tables: tuple[dict[Any, list[Any]], ...] = (index.exact, index.prefix, index.detectors, index.unresolved)
        for table in tables:
            by: _Placed = {}
            for key_at, (key, pairs) in enumerate(table.items()):
                for pair_at, pair in enumerate(pairs):
                    by.setdefault(pair[0].code, []).append((key_at, pair_at, key, pair))
            placed.append(by)
        return tuple(placed)


_Placed = dict[str, list[tuple[int, int, Any, Any]]]  # code -> (key's place, pair's place, key, pair)


@dataclass(frozen=True)
class Gate:
    """One rule's share of the prefilter: it can fire only on a text that holds one of its
    `substrings`, or one of its `identifiers` as a whole identifier."""

    code: str
    substrings: frozenset[str]
    identifiers: frozenset[str]


@functools.lru_cache(maxsize=256)
def build_ruleset(
    codes: frozenset[str], target_version: str = "2.14", sources: RuleSources = RuleSources(), target: str = "neuron"
) -> Ruleset:
    """Index the enabled rules for the walk; cached per set of codes, target version, sources and target."""
    rules = registry(sources)
    index = RuleIndex()
    triggers: set[str] = set()
    names: set[str] = set()
    import_rules: list[RuleSpec] = []
    for spec in rules.specs:
        if spec.code not in codes or not _indexed(spec):
            continue  # rules for packaging files and scripts run in engine/textfiles.py
        triggers |= _own_triggers(spec)
        if spec.detector == CATCH_ALL:
            index.catch_all = spec
            continue
        if spec.detector == "qualified":
            for entry in spec.maps:
                table = index.prefix if entry.prefix else index.exact
                table.setdefault(entry.old, []).append((spec, entry))
                names.add(entry.old)
            continue
        node_types, detector = rules.detectors[spec.detector]
        for node_type in node_types:
            index.detectors.setdefault(node_type, []).append((spec, detector))
            resolved = getattr(detector, RESOLVED_ONLY, False)  # True, or the node types it holds for
            if not (resolved is True or (isinstance(resolved, tuple) and node_type in resolved)):
                index.unresolved.setdefault(node_type, []).append((spec, detector))
        if getattr(detector, IMPORT_RULE, False):
            import_rules.append(spec)
    index.import_rules = tuple(import_rules)
    index.decided, index.decided_under = _decided(
        [
            s
            for s in rules.specs
            if s.detector == "qualified" or (s.detector in rules.detectors and not _imports(rules, s))
        ]
    )
    substrings = minimal_triggers(triggers)
    patterns = name_patterns(names, substrings)
    gates = tuple(_gate(spec, triggers) for spec in rules.specs if spec.code in codes and _indexed(spec))
    return Ruleset(index, substrings, codes, target_version, target, patterns, rules.fixes, sources, gates)


def _imports(rules: Any, spec: RuleSpec) -> bool:
    """Whether `spec` is an import rule (its entries name the modules whose imports it removes)."""
    return bool(getattr(rules.detectors[spec.detector][1], IMPORT_RULE, False))


def _decided(specs: list[RuleSpec]) -> tuple[frozenset[str], frozenset[str]]:
    """The names the rules' entries map (exact, and prefixes), enabled or not: not import rules,
    whose entries name modules, nor the catch-all."""
    entries = [entry for spec in specs if not spec.retired for entry in spec.maps if entry.old]
    exact = frozenset(entry.old for entry in entries if not entry.prefix)
    return exact, frozenset(entry.old for entry in entries if entry.prefix)


def _indexed(spec: RuleSpec) -> bool:
    return spec.detector not in FILE_DETECTORS and spec.detector not in RUNTIME_DETECTORS


def _own_triggers(spec: RuleSpec) -> set[str]:
    """The substrings a rule names itself: its `triggers`, `torch_xla` for the catch-all, and the
    map entries of a Python detector that names none (a qualified rule's names go to patterns)."""
    own = set(spec.triggers)
    if spec.detector == CATCH_ALL:
        own.add("torch_xla")
    elif spec.detector != "qualified" and not spec.triggers:
        own.update(entry.old for entry in spec.maps if entry.old)
    return own


def _gate(spec: RuleSpec, triggers: set[str]) -> Gate:
    """A rule's own prefilter: its share of the whole one that `build_ruleset` derives."""
    substrings = _own_triggers(spec)
    identifiers: set[str] = set()
    if spec.detector == "qualified":
        for entry in spec.maps:
            parts = entry.old.split(".")
            # the root package is spelled in the import that makes the name resolve: its triggers
            # suffice (`module` in `neuronx_distributed.modules...` would keep the rule in most files)
            root = {t for t in triggers if t in parts[0]}
            covering = root or {t for t in triggers if any(t in part for part in parts)}
            if covering:
                substrings |= covering
            else:
                identifiers.add(parts[-1])
    return Gate(spec.code, frozenset(substrings), frozenset(identifiers))


def narrowed(ruleset: Ruleset, text: str) -> Ruleset:
    """The ruleset of the rules that can fire on `text` at all (by their share of the prefilter).

    A rule whose triggers are absent cannot match, so leaving it out changes no finding; the
    walk then runs fewer detectors per node. An identifier counts as present when the text
    contains it at all (a cheaper test that keeps a few rules more, never fewer). Narrowed
    sets are cached by their codes, per full rule set.
    """
    if not ruleset.gates:
        return ruleset
    present: set[str] = set()
    for word, within in ruleset.gate_tests:  # `torch_xla` is looked for only in a text with `xla`
        if within <= present and word in text:
            present.add(word)
    codes = frozenset(
        g.code for g in ruleset.gates if not present.isdisjoint(g.substrings) or not present.isdisjoint(g.identifiers)
    )
    if len(codes) == len(ruleset.gates):
        return ruleset
    kept = ruleset.narrowings
    found = kept.get(codes)
    if found is None:
        if len(kept) >= _NARROWED_KEPT:
            kept.clear()
        found = kept[codes] = _subset(ruleset, codes)
    return found


_NARROWED_KEPT = 1024  # distinct code sets per rule set; a real tree has a few dozen


def _subset(ruleset: Ruleset, codes: frozenset[str]) -> Ruleset:
    """`ruleset` with only the rules in `codes`: its index filtered, in the same order, which is
    what `build_ruleset(codes, ...)` indexes (without compiling the prefilter's patterns again:
    a narrowed set is used after the prefilter, by the walk). The work is in proportion to the
    kept rules' entries (`Ruleset.by_code`), not to the whole index."""
    index = ruleset.index
    tables = ruleset.by_code
    catch_all = index.catch_all if index.catch_all is not None and index.catch_all.code in codes else None
    sub = RuleIndex(
        exact=_kept(tables[0], codes),
        prefix=_kept(tables[1], codes),
        detectors=_kept(tables[2], codes),
        unresolved=_kept(tables[3], codes),
        import_rules=tuple(spec for spec in index.import_rules if spec.code in codes),
        catch_all=catch_all,
        decided=index.decided,
        decided_under=index.decided_under,
    )
    gates = tuple(g for g in ruleset.gates if g.code in codes)
    return replace(ruleset, index=sub, codes=codes, gates=gates)


def _kept(placed: _Placed, codes: frozenset[str]) -> dict[Any, list[Any]]:
    """The table of `placed` for `codes`, its keys and each key's pairs in the full table's order."""
    entries = sorted(
        (entry for code in codes for entry in placed.get(code, ())), key=lambda entry: (entry[0], entry[1])
    )
    out: dict[Any, list[Any]] = {}
    for _, _, key, pair in entries:
        out.setdefault(key, []).append(pair)
    return out


def enabled_codes(settings: Settings) -> frozenset[str]:
    """The codes enabled for these settings (resolved once by config; else from their selectors)."""
    if settings.enabled is not None:
        return settings.enabled
    return registry_codes(
        settings.rule_sources, settings.select, settings.ignore, settings.extend_select, settings.families
    )


def minimal_triggers(triggers: set[str]) -> tuple[str, ...]:
    """Drop every trigger that contains another one: `xla` already catches `torch_xla`. Shortest
    first: a short substring is the likelier to occur, and the prefilter stops at the first found."""
    kept = (t for t in triggers if not any(o != t and o in t for o in triggers))
    return tuple(sorted(kept, key=lambda t: (len(t), t)))


def name_patterns(qualified: set[str], substrings: tuple[str, ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """For each qualified name, an identifier every spelling of it contains: its last part.

    Each part of a qualified name is written out as an identifier wherever the name is used:
    an import spells the module path and the imported name, an attribute chain the rest, and an
    alias (`f = torch.fft`) spells its source. So `fft` (a whole identifier) must be in any file
    that uses `torch.fft`, and it is far rarer than `torch`, which nearly every PyTorch file
    contains. A name with a part that contains a substring trigger (`torch_xla` and `xla`) needs
    nothing more.
    """
    wanted = set()
    for name in qualified:
        parts = name.split(".")
        if not any(token in part for part in parts for token in substrings):
            wanted.add(parts[-1])
    return tuple((n, re.compile(rf"(?<!\w){re.escape(n)}(?!\w)")) for n in sorted(wanted))


def might_match(text: str, ruleset: Ruleset) -> bool:
    """The cheap prefilter: can any enabled rule fire on this text at all?"""
    if any(token in text for token in ruleset.triggers):
        return True
    return any(name in text and pattern.search(text) is not None for name, pattern in ruleset.names)
