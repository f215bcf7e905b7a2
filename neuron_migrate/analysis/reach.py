"""Which statements of a module can hold a match: the walk skips the others.

A rule matches at a node through a qualified name (a map entry, the catch-all, a detector's test
of `call_names`) or through what the node's own source spells (a keyword, a method name). Both
leave words in the source of the statement that holds the node:

- a name or chain that resolves to `a.b.c` either spells its last part (`x.c`, `b.c`) or is a
  bare name bound to `a.b.c` itself, by an import (`from a.b import c as x`) or by an alias whose
  source spells one of these words (`x = b.c`, `y = x`);
- a name that resolves to `p` or below it either spells the last part of `p` or is bound to `p`
  or below it;
- a detector declares the identifiers its node must spell (`analysis.index.needles`).

So a statement whose lines contain none of these words, as whole identifiers, holds no match and
is skipped. What would break the argument turns skipping off for the file: a star import (a name
bound by no statement), an identifier that Unicode normalisation changes (the `ast` name is then
not the spelling), and alias chains whose resolution could depend on the order names are asked
about (a cycle, a chain near the resolver's depth bound, `nonlocal`, more bindings than its step
budget), since skipping changes that order.
"""

from __future__ import annotations

import ast
import functools
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

from neuron_migrate.analysis.names import MAX_ALIAS_DEPTH, MAX_ALIAS_STEPS, Resolver
from neuron_migrate.analysis.source import SourceText

_IDENTIFIER = re.compile(r"\w+")
_NON_ASCII_WORD = re.compile(r"\w*[^\x00-\x7f]\w*")
_SAFE_DEPTH = MAX_ALIAS_DEPTH // 2  # alias chains shorter than this never meet the resolver's bound
_FEW_WORDS = 64  # up to this many words, `_spelled_at` searches for each (tests/bench/skip_scan.py)


@dataclass(frozen=True)
class Reach:
    """What a rule set can match through, for every file it checks."""

    words: frozenset[str]  # identifiers some match needs spelled in its statement
    fragments: tuple[str, ...]  # or an identifier containing one of these (any case)
    names: frozenset[str]  # qualified names matched exactly
    under: frozenset[str]  # qualified names matched with everything below them

    @functools.cached_property
    def spelled(self) -> frozenset[str]:
        """The words plus the last part of every name: what a chain resolving to one spells."""
        return self.words | {name.rsplit(".", 1)[-1] for name in self.names | self.under}

    def leads_to(self, target: str) -> bool:
        """Whether a name bound to the import `target` itself resolves to a name matched."""
        if target in self.names:
            return True
        parts = target.split(".")
        return any(".".join(parts[:i]) in self.under for i in range(1, len(parts) + 1))


def skipper(reach: Reach, resolver: Resolver, src: SourceText) -> Callable[[ast.stmt], bool] | None:
    """A test of whether a statement can hold no match, or None when this file must be walked whole."""
    words = _bound_words(reach, resolver)
    text = src.text
    if words is None or not _spelled_as_parsed(text):
        return None
    found = _spelled_at(text, words)
    for fragment in reach.fragments:
        found += [m.start() for m in re.finditer(re.escape(fragment), text, re.IGNORECASE)]
    found.sort()
    line_start = src.line_start

    def skip(stmt: ast.stmt) -> bool:
        first = stmt.lineno
        for decorator in getattr(stmt, "decorator_list", ()):
            first = min(first, decorator.lineno)
        start, end = line_start(first), line_start((stmt.end_lineno or stmt.lineno) + 1)
        index = bisect_left(found, start)
        return index == len(found) or found[index] >= end

    return skip


def _spelled_at(text: str, words: set[str]) -> list[int]:
    """Where `text` spells one of `words` as a whole identifier (a maximal run of `\\w`), in order.

    One pass over every identifier costs the same whatever the words; a search per word costs
    in proportion to their number. Files without torch_xla leave few words (those of the rules
    narrowing keeps), and for up to `_FEW_WORDS` of them the searches are the cheaper."""
    if len(words) > _FEW_WORDS or not all(_IDENTIFIER.fullmatch(word) for word in words):
        return spelled_by_pass(text, words)
    return spelled_by_search(text, words)


def spelled_by_pass(text: str, words: set[str]) -> list[int]:
    """`_spelled_at` by one pass over every identifier of `text`."""
    return [m.start() for m in _IDENTIFIER.finditer(text) if m.group() in words]


def spelled_by_search(text: str, words: set[str]) -> list[int]:
    """`_spelled_at` by a search for each word (each made of word characters only)."""
    found: list[int] = []
    find, size = text.find, len(text)
    for word in words:
        at = find(word)
        while at >= 0:
            end = at + len(word)
            if (at == 0 or not _word_char(text[at - 1])) and (end == size or not _word_char(text[end])):
                found.append(at)
            at = find(word, end)  # a later start inside this match follows a word character
    found.sort()
    return found


def _word_char(char: str) -> bool:
    """Whether `re`'s `\\w` matches `char` (in a `str` pattern: alphanumeric, or `_`)."""
    return char.isalnum() or char == "_"


def _bound_words(reach: Reach, resolver: Resolver) -> set[str] | None:
    """`reach.spelled` plus every name bound to a matched name (by import or alias), or None when
    the file's bindings defeat the argument (a star import, or order-dependent alias chains)."""
    words = set(reach.spelled)
    aliases: list[tuple[str, list[str]]] = []
    lists = 0
    for scope in resolver.scope_of.values():
        if scope.stars or scope.nonlocals:
            return None  # a name no statement binds; a rebinding that resolves in an outer scope
        lists += len(scope.bindings)
        for name, bindings in scope.bindings.items():
            for binding in bindings:
                if binding.kind == "import":
                    if name not in words and reach.leads_to(binding.target):
                        words.add(name)
                elif binding.kind == "alias":
                    aliases.append((name, binding.target.split(".")))
                elif binding.kind != "local":
                    return None
    if lists >= MAX_ALIAS_STEPS or not _shallow(aliases):
        return None
    changed = True
    while changed:  # an alias whose source spells a word is one too (`x = xm`, `y = x.mark_step`)
        changed = False
        for name, parts in aliases:
            if name not in words and not words.isdisjoint(parts):
                words.add(name)
                changed = True
    return words


def _shallow(aliases: list[tuple[str, list[str]]]) -> bool:
    """Whether the alias graph (name -> the name its source starts with) has no cycle through two
    or more names and no chain of `_SAFE_DEPTH` names. Then every alias resolves to the same
    names whichever name is asked about first; the resolver's memo cuts a cycle where it is met."""
    edges: dict[str, set[str]] = {}
    for name, parts in aliases:
        if parts[0] != name:
            edges.setdefault(name, set()).add(parts[0])
    depth: dict[str, int] = {}
    for root in edges:
        if root in depth:
            continue
        stack: list[tuple[str, list[str]]] = [(root, list(edges.get(root, ())))]
        active = {root}
        while stack:
            name, pending = stack[-1]
            if pending:
                head = pending.pop()
                if head in active:
                    return False  # a cycle through two or more names
                if head not in depth:
                    if len(stack) >= _SAFE_DEPTH:
                        return False
                    active.add(head)
                    stack.append((head, list(edges.get(head, ()))))
                continue
            depth[name] = 1 + max((depth.get(h, 0) for h in edges.get(name, ())), default=0)
            if depth[name] >= _SAFE_DEPTH:
                return False
            active.discard(name)
            stack.pop()
    return True


def _spelled_as_parsed(text: str) -> bool:
    """Whether every identifier is spelled as `ast` names it (NFKC normalisation changes none)."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):  # so is every part of it
        return True
    words = " ".join(_NON_ASCII_WORD.findall(text))  # strings and comments may not be: the words
    return unicodedata.normalize("NFKC", words) == words
