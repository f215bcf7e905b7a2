"""Which files a check parses: those whose text passes the enabled rules' substring prefilter."""

from __future__ import annotations

from collections.abc import Iterable

from neuron_migrate.engine.check import build_ruleset, enabled_codes, might_match
from neuron_migrate.engine.pipeline import read_source
from neuron_migrate.model import Finding
from neuron_migrate.run.discover import Target
from neuron_migrate.settings import Settings


def files_to_parse(targets: Iterable[Target], settings: Settings) -> list[Target]:
    """The targets a check would parse: readable, decodable, and passing the prefilter."""
    ruleset = build_ruleset(enabled_codes(settings), settings.target_version, settings.rule_sources)
    chosen = []
    for target in targets:
        read = read_source(target.path, target.display, settings)
        if not isinstance(read, Finding) and might_match(read[0], ruleset):
            chosen.append(target)
    return chosen
