"""The report's concepts: which concept each rule's manual work belongs to, and the minutes a
person needs per manual finding of each concept, or of each effort tier (the effort estimate's
defaults).

Data shared by `config` (which validates `[tool.neuron-migrate.report-effort]` against
`CONCEPTS`) and `report.model` (which builds the estimate), so neither room imports the other.
These concepts group manual work for the report; the migration guide's chapters are
`catalogue.CONCEPTS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# Concept of each rule, by the longest matching code prefix. The effort table is keyed by these.
_CONCEPT_PREFIXES: Mapping[str, str] = MappingProxyType(
    {
        "NM1": "device",
        "NM105": "dtypes",
        "NM2": "execution",
        "NM204": "distributed",
        "NM207": "profiling",
        "NM208": "checkpoints",
        "NM209": "checkpoints",
        "NM210": "checkpoints",
        "NM211": "internals",
        "NM299": "internals",
        "NM3": "distributed",
        "NM306": "collectives",
        "NM308": "data-loading",
        "NM309": "launch",
        "NM310": "launch",
        "NM311": "fsdp",
        "NM312": "spmd",
        "NM32": "nxd",
        "NM33": "nxd",
        "NM340": "nxd",
        "NM4": "unsupported-api",
        "NM411": "dtypes",
        "NM412": "dtypes",
        "NM413": "dtypes",
        "NM5": "compile",
        "NM60": "environment",
        "NM601": "imports",
        "NM602": "imports",
        "NM62": "packaging",
        "NM624": "packaging",
        "NM63": "environment",
        "NM631": "launch",
        "NM7": "smoke",
        "NM9": "tool",
    }
)
CONCEPTS: Mapping[str, str] = MappingProxyType(
    {
        "launch": "launch: spawn, process groups, launcher scripts",
        "collectives": "collectives",
        "spmd": "SPMD sharding",
        "fsdp": "FSDP",
        "nxd": "neuronx-distributed (NxD), built on torch_xla",
        "distributed": "ranks, barriers, optimizer step",
        "data-loading": "data loading",
        "device": "device placement",
        "execution": "execution model",
        "compile": "torch.compile",
        "unsupported-api": "APIs the beta lacks",
        "dtypes": "dtypes (float64, autocast)",
        "profiling": "profiling and metrics",
        "checkpoints": "checkpoints and RNG state",
        "internals": "torch_xla internals",
        "imports": "imports",
        "environment": "environment variables",
        "packaging": "packaging: requirements and pins",
        "smoke": "smoke run findings",
        "tool": "files the tool could not check",
    }
)
# Minutes a person needs per manual finding of each concept: an estimate, overridable in config
# (`[tool.neuron-migrate.report-effort]`). Documented in docs/report.md. A finding whose rule
# names an effort tier is costed by TIER_EFFORT instead (every `nxd` finding is), so `nxd` has
# no row here.
DEFAULT_EFFORT: Mapping[str, int] = MappingProxyType(
    {
        "launch": 30,
        "collectives": 20,
        "spmd": 240,
        "fsdp": 120,
        "distributed": 15,
        "data-loading": 20,
        "device": 10,
        "execution": 15,
        "compile": 15,
        "unsupported-api": 60,
        "dtypes": 15,
        "profiling": 15,
        "checkpoints": 20,
        "internals": 45,
        "imports": 5,
        "environment": 10,
        "packaging": 10,
        "smoke": 30,
        "tool": 10,
    }
)

# Minutes a person needs for a finding of each effort tier (`catalogue.TIERS`, named by the rule
# or its `[[map]]` entry) that no fix resolves; a finding `--fix` or `--fix --unsafe-fixes`
# resolves costs nothing. Overridable in the same config table. Documented in docs/report.md.
TIER_EFFORT: Mapping[str, int] = MappingProxyType({"mechanical": 5, "semi-mechanical": 30, "manual": 60})
TIER_MEANING: Mapping[str, str] = MappingProxyType(
    {
        "mechanical": "a local rewrite the message names (what `--fix` / `--unsafe-fixes` writes where it can)",
        "semi-mechanical": "a rewrite a person checks against the model's own code (a parallel plan, ZeRO-1, DCP)",
        "manual": "a person ports it by hand (pipeline, MoE, kernels, inference APIs, fused projections)",
    }
)
# The concept whose findings are all costed by tier: one that names none counts as `manual`.
TIERED_CONCEPT = "nxd"


def tier_for(code: str, tier: str) -> str:
    """The tier a finding of rule `code` is costed by: its own, `manual` for an `nxd` finding
    that names none, "" (costed by concept) otherwise."""
    return tier or ("manual" if concept_of(code) == TIERED_CONCEPT else "")


def concept_of(code: str) -> str:
    """The concept a rule belongs to (see CONCEPTS)."""
    best = max((p for p in _CONCEPT_PREFIXES if code.startswith(p)), key=len, default="")
    return _CONCEPT_PREFIXES.get(best, "tool")
