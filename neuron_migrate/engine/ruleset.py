"""The cheap prefilter: can any enabled rule fire on this text at all?

A file is parsed only when its text contains one of the enabled rules' substring triggers, or
one of their qualified names' identifying parts as a whole identifier. The rule index is built
once per rule set (engine/check.py `build_ruleset`); this module holds the test itself.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from neuron_migrate.engine.check import Ruleset


def minimal_triggers(triggers: set[str]) -> tuple[str, ...]:
    """Drop every trigger that contains another one: `xla` already catches `torch_xla`."""
    return tuple(sorted(t for t in triggers if not any(o != t and o in t for o in triggers)))


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
