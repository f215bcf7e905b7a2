"""The enabled rules indexed for the walk, and the markers a detector declares itself with.

`resolved_only`, `needles` and `import_rule` tell the walk (and `check`) what a detector can
match, so that it is asked only where it may fire; `RuleIndex` is what the walk looks the rules
up in.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from neuron_migrate.analysis.analyze import Detector
from neuron_migrate.analysis.reach import Reach
from neuron_migrate.catalogue import MapEntry, RuleSpec

XLA_ROOT = "torch_xla"


RESOLVED_ONLY = "nm_resolved_only"  # attribute of a detector marked with `resolved_only`


def resolved_only(detector: Detector) -> Detector:
    """Mark a detector that never matches a call, name or attribute chain which resolves to no
    qualified name (a local variable, `self.x`, a method of a local object).

    The walk skips it for those nodes (most calls in a module), so it need not be asked.
    It is still run for every other node type it declares.
    """
    setattr(detector, RESOLVED_ONLY, True)
    return detector


def resolved_only_on(*kinds: type[ast.AST]) -> Callable[[Detector], Detector]:
    """`resolved_only` for these node types alone: the detector never matches a name, attribute
    chain or call of these types that resolves to nothing, and is asked about the rest."""

    def mark(detector: Detector) -> Detector:
        setattr(detector, RESOLVED_ONLY, kinds)
        return detector

    return mark


NEEDLES = "nm_needles"  # attribute of a detector marked with `needles`


@dataclass(frozen=True)
class Needles:
    """What the source of a node must hold for a detector to match at it (see `needles`)."""

    words: frozenset[str] = frozenset()  # identifiers, written whole (an attribute, keyword or name)
    fragments: tuple[str, ...] = ()  # or an identifier holding one of these, in any case
    names: frozenset[str] = frozenset()  # or a name or chain that resolves to one of these
    under: frozenset[str] = frozenset()  # or to one of these or a name below it
    maps: str = ""  # "words": the last part of each rule entry's `old` too; "names": each `old` as a name


def needles(
    *words: str, fragments: tuple[str, ...] = (), names: Any = (), under: Any = (), maps: str = ""
) -> Callable[[Detector], Detector]:
    """Declare that a detector matches at a node only when the node's own source (its decorators
    included) holds one of `words` as an identifier, an identifier containing one of `fragments`
    (case-insensitively), or a name or attribute chain that resolves to one of `names`, or to one of
    `under` or below it; `maps` adds the rule's entries (see `Needles`).

    The walk skips the statements that hold none of them for any enabled rule. Declare only what
    the detector's code proves: a test of a string's value is no needle (`"cu" "da"`, escapes),
    nor is anything read from other nodes. A detector without needles turns skipping off in the
    files it may fire on.
    """
    declared = Needles(frozenset(words), tuple(fragments), frozenset(names), frozenset(under), maps)

    def mark(detector: Detector) -> Detector:
        setattr(detector, NEEDLES, declared)
        return detector

    return mark


IMPORT_RULE = "nm_import_rule"  # attribute of a detector marked with `import_rule`


def import_rule(detector: Detector) -> Detector:
    """Mark a detector that matches imports which its fix removes once nothing uses them.

    Rules with such a detector are the analysis's `import_rules`: an import still used gets a fix
    that requires the fixes of its uses when they take every use away
    (`engine/waiting_imports.py`), found without running them.
    """
    setattr(detector, IMPORT_RULE, True)
    return detector


@dataclass
class RuleIndex:
    """Enabled rules, indexed for the walk."""

    exact: dict[str, list[tuple[RuleSpec, MapEntry]]] = field(default_factory=dict)
    prefix: dict[str, list[tuple[RuleSpec, MapEntry]]] = field(default_factory=dict)
    detectors: dict[type, list[tuple[RuleSpec, Detector]]] = field(default_factory=dict)
    unresolved: dict[type, list[tuple[RuleSpec, Detector]]] = field(default_factory=dict)  # those not `resolved_only`
    import_rules: tuple[RuleSpec, ...] = ()
    catch_all: RuleSpec | None = None
    # The names every rule maps, enabled or not (exact, and those under a prefix entry): the
    # catch-all reports only names no rule decides, whatever `--select` / `--ignore` enable.
    decided: frozenset[str] = frozenset()
    decided_under: frozenset[str] = frozenset()
    _entries: dict[str, list[tuple[RuleSpec, MapEntry]]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def import_codes(self) -> frozenset[str]:
        """The codes of the `import_rules`."""
        return frozenset(spec.code for spec in self.import_rules)

    def known(self, name: str) -> bool:
        """Whether `name` is, or leads to, an API some enabled rule maps (for star imports)."""
        if self.entries_for(name):
            return True
        prefix = name + "."
        return any(key.startswith(prefix) for key in self.exact) or any(key.startswith(prefix) for key in self.prefix)

    @functools.cached_property
    def reach(self) -> Reach | None:
        """What the enabled rules can match through, or None when a detector declares no `needles`."""
        words: set[str] = set()
        fragments: list[str] = []
        names, under = set(self.exact), set(self.prefix)
        if self.catch_all is not None:
            under.add(XLA_ROOT)
        for pairs in self.detectors.values():
            for rule, detector in pairs:
                declared = getattr(detector, NEEDLES, None)
                if not isinstance(declared, Needles):
                    return None
                words |= declared.words
                fragments += declared.fragments
                names |= declared.names
                under |= declared.under
                olds = [entry for entry in rule.maps if entry.old]
                if declared.maps == "words":
                    words.update(entry.old.rsplit(".", 1)[-1] for entry in olds)
                elif declared.maps == "names":
                    names.update(entry.old for entry in olds if not entry.prefix)
                    under.update(entry.old for entry in olds if entry.prefix)
        return Reach(frozenset(words), tuple(sorted(set(fragments))), frozenset(names), frozenset(under))

    def undecided(self, name: str) -> bool:
        """Whether no rule of the catalogue (enabled or not) maps `name`: the catch-all's names."""
        if name in self.decided:
            return False
        parts = name.split(".")
        return not any(".".join(parts[:i]) in self.decided_under for i in range(len(parts), 0, -1))

    def entries_for(self, name: str) -> list[tuple[RuleSpec, MapEntry]]:
        """The rules' entries for a qualified name: its own and its prefixes' (memoised per name)."""
        known = self._entries.get(name)
        if known is None:
            known = self._entries[name] = self._find_entries(name)
        return known

    def _find_entries(self, name: str) -> list[tuple[RuleSpec, MapEntry]]:
        found = list(self.exact.get(name, ()))
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            found.extend(self.prefix.get(".".join(parts[:i]), ()))
        return found
