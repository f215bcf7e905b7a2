"""The alias walk of the resolver stays cheap on names rebound many times (found in transformers)."""

from __future__ import annotations

import ast

import pytest

from neuron_migrate.analysis import names
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings

# transformers' load_tf_weights_* functions walk a model with `pointer = pointer.attr` a dozen
# times; every rebinding is an alias of the name itself, and following each alias to the depth
# limit made one 1,000-line file take 150 s.
REBOUND = (
    "import torch_xla.core.xla_model as xm\n\n\ndef load(model, names):\n    pointer = model\n"
    + "".join(f"    if names[{i}]:\n        pointer = pointer.part{i}\n" for i in range(5))
    + "    pointer.weight.data = xm.mesh_reduce('w', pointer.weight, sum)\n    return pointer\n"
)


def test_rebound_alias_chains_resolve_in_bounded_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = names.Resolver._binding_targets
    monkeypatch.setattr(names.Resolver, "_binding_targets", lambda self, *a: calls.append(1) or original(self, *a))
    resolver = names.Resolver(ast.parse(REBOUND))
    scope = next(s for s in resolver.scope_of.values() if getattr(s.node, "name", "") == "load")
    assert resolver.resolve_dotted("pointer.weight", scope) == set()  # `model` is a parameter: local
    assert len(calls) < 2_000, f"{len(calls)} alias steps"  # 300k without the memo


def test_rebound_alias_chains_still_find_torch_xla() -> None:
    result = check_source(REBOUND, "load.py", Settings(select=("NM306",)))
    assert [f.code for f in result.findings] == ["NM306"]
