"""scripts/ecosystem_nxd.py: NxD references in code, their tiers, and what a tool did at each."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "ecosystem_nxd.py"
_SPEC = importlib.util.spec_from_file_location("ecosystem_nxd", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
ecosystem_nxd = importlib.util.module_from_spec(_SPEC)
sys.modules["ecosystem_nxd"] = ecosystem_nxd
_SPEC.loader.exec_module(ecosystem_nxd)

TEXT = """\
import neuronx_distributed as nxd
from neuronx_distributed.parallel_layers import parallel_state as ps
from neuronx_distributed.modules.moe import MoE

ps.initialize_model_parallel(tensor_model_parallel_size=2)
size = ps.get_tensor_model_parallel_size()
layer = MoE()
nxd.save_checkpoint("d", "t", model=layer)
print(size)
"""


def test_references_are_uses_not_imports_and_a_chain_counts_once() -> None:
    found = ecosystem_nxd.references(TEXT, "train.py")
    assert [(r.line, r.column, r.name.rsplit(".", 1)[-1]) for r in found] == [
        (5, 1, "initialize_model_parallel"),
        (6, 8, "get_tensor_model_parallel_size"),
        (7, 9, "MoE"),
        (8, 1, "save_checkpoint"),
    ]


def test_tiers_come_from_the_rules() -> None:
    state = "neuronx_distributed.parallel_layers.parallel_state."
    assert ecosystem_nxd.tier_of(state + "get_tensor_model_parallel_size") == "mechanical"
    assert ecosystem_nxd.tier_of(state + "get_context_model_parallel_size") == "manual"  # the entry's own tier
    assert ecosystem_nxd.tier_of("neuronx_distributed.parallel_layers.layers.ColumnParallelLinear") == "semi-mechanical"
    assert ecosystem_nxd.tier_of("neuronx_distributed.modules.moe.MoE") == "manual"


def test_actions_read_the_findings_at_the_reference() -> None:
    ref = ecosystem_nxd.Reference("train.py", 6, 8, "x")
    assert ecosystem_nxd.action(ref, [["NM320", 6, 8, True]]) == "fixed"
    assert ecosystem_nxd.action(ref, [["NM320", 6, 8, False]]) == "exact"
    assert ecosystem_nxd.action(ref, [["NM214", 6, 8, False]]) == "generic"  # the old one-size NxD finding
    assert ecosystem_nxd.action(ref, [["NM320", 7, 8, True]]) == "none"  # another place


def test_the_table_counts_terminal_actions_by_tier() -> None:
    refs = ecosystem_nxd.references(TEXT, "train.py")
    before = {"train.py": [["NM214", r.line, r.column, False] for r in refs]}
    after = {"train.py": [["NM320", 5, 1, True], ["NM320", 6, 8, True], ["NM330", 7, 9, False]]}
    table = "\n".join(ecosystem_nxd.render(refs, before, after, "`old`"))
    assert "| mechanical | 2 | 0 / 0 / 2 / 0 | 0.0% (0/2) | 2 / 0 / 0 / 0 | 100.0% (2/2) |" in table
    assert "| all | 4 | 0 / 0 / 4 / 0 | 0.0% (0/4) | 2 / 1 / 0 / 1 | 75.0% (3/4) |" in table
    assert "`neuronx_distributed.save_checkpoint`: 1" in table  # not terminal after
