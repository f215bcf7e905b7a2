"""docs/api-coverage.md is generated from the rules and rules/signatures.toml, and every API has a decision."""

from __future__ import annotations

from conftest import ROOT

from neuron_migrate import api_coverage
from neuron_migrate.catalogue import load_catalogue
from neuron_migrate.signatures import load_signatures


def test_every_api_real_code_calls_has_a_decision_in_the_rules() -> None:
    """No API is left to the NM299 catch-all: each has a map entry (its own or its module's) saying what happens."""
    undecided = sorted(name for name in load_signatures() if api_coverage.api_decision(name) is None)
    assert not undecided, f"give these a [[map]] entry: {undecided}"


def test_actions_follow_the_entries() -> None:
    specs = load_catalogue()
    decide = {name: api_coverage.api_action(*api_coverage.api_decision(name, specs)) for name in load_signatures()}  # type: ignore[misc]
    assert decide["torch_xla.distributed.spmd.mark_sharding"] == ("blocker", "manual")
    assert decide["torch_xla.utils.serialization.save"] == ("blocker", "manual")
    assert decide["torch_xla.experimental.custom_kernel.flash_attention"] == ("blocker", "manual")
    assert decide["torch_xla.runtime.initialize_cache"] == ("drop", "safe")
    assert decide["torch_xla.debug.profiler.trace_detached"] == ("drop", "unsafe")
    assert decide["torch_xla.test.test_utils.write_to_summary"] == ("helper", "safe")
    assert decide["torch_xla.core.xla_model.wait_device_ops"] == ("port", "safe")
    assert decide["torch_xla.distributed.xla_backend"] == ("drop", "safe")  # the import goes
    assert decide["torch_xla.runtime.is_spmd"] == ("port", "unsafe")  # an entry's blocker = false wins


def test_the_document_names_each_api_once_with_its_rule() -> None:
    text = (ROOT / "docs" / "api-coverage.md").read_text(encoding="utf-8")
    for name in load_signatures():
        assert text.count(f"| `{name}` |") == 1, name
    assert "| `torch_xla.core.xla_model.master_print` | function |" in text
