"""docs/migration-guide.md is generated from the rules' docs and must be complete (tests/test_generated.py: fresh)."""

from __future__ import annotations

from neuron_migrate.catalogue import CONCEPTS, load_catalogue
from neuron_migrate.guide import CHAPTERS, guided_codes, render


def test_every_migration_rule_belongs_to_one_chapter() -> None:
    """Membership is data: each rule's TOML names its concept, and each concept is in one chapter."""
    concepts = [c for chapter in CHAPTERS for c in chapter.concepts]
    assert len(concepts) == len(set(concepts)), "a concept is listed under two chapters"
    assert set(concepts) <= set(CONCEPTS), "a chapter names a concept the catalogue does not know"
    codes = [c for chapter in CHAPTERS for c in chapter.codes()]
    assert len(codes) == len(set(codes))
    wanted = {
        s.code for s in load_catalogue() if not s.retired and not s.code.startswith("NM9") and "xla" in s.families
    }
    assert guided_codes() == wanted


def test_manual_rules_say_how_to_port() -> None:
    guide = render()
    assert 'init_device_mesh("neuron", (dp, tp)' in guide  # NM312's 2-D mesh recipe
    assert "fsdp.fully_shard" in guide  # NM311's rewrite
    section = guide.split("## Sharding: FSDP and SPMD", 1)[1].split("\n## ", 1)[0]
    assert "### What stays manual, and how" in section and "[NM312]" in section.split("### What stays manual", 1)[1]
