"""Mappings are signature-complete: each torch_xla and NxD API a rule maps declares every parameter it has.

rules/signatures.toml holds torch_xla's signatures, read from the torch_xla 2.5 and 2.8 wheels, and
rules/signatures-nxd.toml neuronx_distributed's, read from its 0.10.1 and 0.18.0 sources, both by
scripts/signatures.py. NxD entries declare their parameters whenever their tier is not manual:
the declarations are the mapping's spec, and a declined argument already words the finding. Each `[[map]]` entry that rewrites an API declares, in `[map.params]`, what
its fix does with each parameter (keep, rename, drop, decline). The tests check the declarations
against the table, then check that the fixes do what the declarations say: an argument declared
keep or drop never stops a fix, and one declared decline stops it with the declared reason.
"""

from __future__ import annotations

import pytest

from neuron_migrate.catalogue import MapEntry, RuleSpec, RuleSpecError, load_catalogue, parse_rule
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings
from neuron_migrate.signatures import load_signatures, param_name, signature_row, signature_versions

SPECS = load_catalogue()
TABLE = load_signatures()
MARKERS = ("*", "/")


def _rewrites(entry: MapEntry) -> bool:
    return bool(entry.fix or entry.new_call or entry.new)


def _row(api: str) -> dict:
    """The table row of `api` (through `inherits` for a class that only forwards its arguments)."""
    return signature_row(api)


def _signature_names(api: str) -> dict[str, list[str]]:
    """Each version's parameter names, in order, without the `*` and `/` markers."""
    versions = signature_versions(_row(api))
    return {v: [param_name(t) for t in tokens if t not in MARKERS] for v, tokens in versions.items()}


LIBRARIES = ("torch_xla.", "neuronx_distributed.")


def _torch_xla_entries() -> list[tuple[RuleSpec, MapEntry]]:
    """The exact entries for torch_xla and NxD APIs (both tables)."""
    return [(s, m) for s in SPECS for m in s.maps if m.old.startswith(LIBRARIES) and not m.prefix]


def _declares(spec: RuleSpec, entry: MapEntry) -> bool:
    """Whether the entry must declare its parameters: it rewrites, or it is an NxD mapping that is not manual."""
    return _rewrites(entry) or (entry.old.startswith("neuronx_distributed.") and spec.tier_of(entry) != "manual")


MAPPED = [
    (spec, entry)
    for spec, entry in _torch_xla_entries()
    if _declares(spec, entry)
    and TABLE.get(entry.old, {}).get("kind") in ("function", "class")
    and any(_signature_names(entry.old).values())
]


def test_the_table_lists_every_api_a_rule_names() -> None:
    named = {entry.old for _, entry in _torch_xla_entries()}
    missing = sorted(named - set(TABLE))
    assert not missing, f"run scripts/signatures.py: {missing}"
    stale = sorted(api for api, row in TABLE.items() if row["mapped"] and api not in named)
    assert not stale, f"no rule maps these any more; run scripts/signatures.py: {stale}"


def test_the_nxd_table_has_both_releases_and_the_mapped_apis() -> None:
    row = TABLE["neuronx_distributed.parallel_layers.layers.ColumnParallelLinear"]
    assert set(signature_versions(row)) == {"0.10.1", "0.18.0"}
    assert row["0.18.0"][:4] == ["input_size", "output_size", "bias=True", "gather_output=True"]
    alias = TABLE["neuronx_distributed.parallel_layers.ColumnParallelLinear"]  # re-exported by the package
    assert alias["defined"] == "neuronx_distributed.parallel_layers.layers.ColumnParallelLinear"
    zero = TABLE["neuronx_distributed.optimizer.zero_redundancy_optimizer.NeuronZero1Optimizer"]
    assert zero["inherits"] == "torch_xla.distributed.zero_redundancy_optimizer.ZeroRedundancyOptimizer"


def test_every_export_of_a_mapped_nxd_api_is_decided_by_the_same_rule() -> None:
    """A package re-export (`parallel_layers.ColumnParallelLinear`) gets the finding its definition gets."""
    from neuron_migrate.api_coverage import api_decision

    def rule_of(api: str) -> str | None:
        decision = api_decision(api, SPECS)
        return decision[0].code if decision else None

    exported: dict[str, set[str]] = {}
    for api, row in TABLE.items():
        if api.startswith("neuronx_distributed."):
            exported.setdefault(row.get("defined", api), set()).add(api)
    for names in exported.values():
        if any(TABLE[n]["mapped"] for n in names):
            assert len({rule_of(n) for n in names}) == 1, {n: rule_of(n) for n in sorted(names)}


def test_no_nxd_api_is_matched_by_two_rules() -> None:
    """The NxD rules split the library between them: a name (or a prefix above it) in one rule only."""
    for api in (a for a in TABLE if a.startswith("neuronx_distributed.")):
        parts = api.split(".")
        owners = {
            spec.code
            for spec in SPECS
            for entry in spec.maps
            if entry.old == api
            or (entry.prefix and entry.old in {".".join(parts[:i]) for i in range(1, len(parts) + 1)})
            if spec.detector == "qualified"
        }
        assert len(owners) <= 1, f"{api} is matched by {sorted(owners)}"


def test_the_table_has_both_versions() -> None:
    versions = set()
    for row in TABLE.values():
        versions |= set(signature_versions(row))
    assert {v.rsplit(".", 1)[0] for v in versions} >= {"2.5", "2.8"}
    assert TABLE["torch_xla.core.xla_model.master_print"]["2.5.0"] == [
        "*args",
        "fd=sys.stdout",
        "local=False",
        "flush=False",
    ]


@pytest.mark.parametrize(("spec", "entry"), MAPPED, ids=lambda x: x.old if isinstance(x, MapEntry) else x.code)
def test_every_parameter_is_declared(spec: RuleSpec, entry: MapEntry) -> None:
    """The declared names are the union of the versions' parameters, each version's in its order."""
    declared = [p.name for p in entry.params]
    versions = _signature_names(entry.old)
    union = {name for names in versions.values() for name in names}
    missing = sorted(union - set(declared))
    assert not missing, f"{spec.code}: declare {missing} of `{entry.old}` in its [map.params]"
    historical = {p.name for p in entry.params if "before 2.5" in p.note}  # real code still passes them
    extra = sorted(set(declared) - union - historical)
    forwards = any(name.startswith("**") for name in union)  # `**kwargs` forwarded: its keys may be declared
    assert forwards or not extra, f"{spec.code}: `{entry.old}` has no parameters {extra}"
    for version, names in versions.items():
        order = [name for name in declared if name in names]
        assert order == names, f"{spec.code}: declare `{entry.old}`'s parameters in {version}'s order: {names}"


def test_a_declaration_needs_a_known_action_and_its_reason() -> None:
    base = {"code": "NM100", "name": "x", "message": "M", "severity": "error", "safety": "safe"}
    for params, error in (
        ({"flush": "maybe"}, "must start with one of keep, rename, drop, decline"),
        ({"flush": "drop"}, "needs its reason"),
        ({"flush": "decline:  "}, "needs its reason"),
        ({"flush": 1}, "must be a string"),
    ):
        with pytest.raises(RuleSpecError, match=error):
            parse_rule({**base, "map": [{"old": "a.b", "fix": "f", "params": params}]}, "NM100.toml")
    spec = parse_rule({**base, "map": [{"old": "a.b", "params": {"x": "keep", "y": "drop: unused"}}]}, "NM100.toml")
    assert [(p.name, p.action, p.note) for p in spec.maps[0].params] == [("x", "keep", ""), ("y", "drop", "unused")]


# -- the fixes do what the declarations say ------------------------------------------------------
# A call is tried in these statement shapes; the first in which the bare call (its required
# arguments only) gets a fix is the shape its fix expects.
SHAPES = (
    "{call}\n",
    "x = {call}\nprint(x)\n",
    "with {call}:\n    pass\n",
    "print({call})\n",
    "for batch in {call}.per_device_loader(a1):\n    pass\n",
    'if {call} == "CUDA":\n    pass\n',
    "class Model:\n    def __init__(self):\n        self.layer = {call}\n",  # an NxD layer, planned by its class
    "def step():\n    loss = {call}\n    loss.backward()\n",  # NxD's parallel loss, with its backward
)
PRELUDE = "def a0(*args, **kwargs):\n    pass\n\n\na1 = a2 = a3 = a4 = a5 = a6 = opaque = object()\n"
# NxD's mesh, which the NxD fixes need in the file (for every NxD API but the mesh's own init).
NXD_MESH = (
    "from neuronx_distributed.parallel_layers.parallel_state import initialize_model_parallel as init_mesh\n"
    "init_mesh(tensor_model_parallel_size=2)\n"
)


def _source(api: str, arguments: list[str], shape: str) -> str:
    module, _, name = api.rpartition(".")
    call = f"target({', '.join(arguments)})"
    mesh = NXD_MESH if api.startswith("neuronx_distributed.") and not api.endswith(".initialize_model_parallel") else ""
    return f"from {module} import {name} as target\n{mesh}\n{PRELUDE}\n" + shape.format(call=call)


def _finding(api: str, code: str, arguments: list[str], shape: str):  # type: ignore[no-untyped-def]
    text = _source(api, arguments, shape)
    result = check_source(text, "train.py", Settings(select=("NM",)))
    found = [f for f in result.findings if f.code == code and f.snippet.startswith("target(")]
    assert len(found) == 1, (text, result.findings)
    return found[0]


# Arguments an NxD fix needs besides the required ones: a checkpoint is saved from (and loaded into)
# a model and its optimizer.
CONTEXT = {
    f"neuronx_distributed.{path}{verb}_checkpoint": ["model=a2", "optimizer=a3"]
    if verb == "save"
    else ["tag=a1", "model=a2", "optimizer=a3"]
    for path in ("", "trainer.", "trainer.checkpoint.")
    for verb in ("save", "load")
}


def _required(api: str) -> list[str]:
    tokens = signature_versions(_row(api))
    first = next(iter(tokens.values()))
    required: list[str] = []
    for token in first:
        if token in MARKERS or token.startswith("*") or "=" in token:
            if token == "*":
                break
            continue
        required.append(f"a{len(required)}")
    return required


def _default(api: str, name: str) -> str | None:
    for tokens in signature_versions(_row(api)).values():
        for token in tokens:
            if param_name(token) == name and "=" in token:
                value = token.split("=", 1)[1]
                return None if value == "..." else value
    return None


CHECKED = [(s, e) for s, e in MAPPED if (e.fix or e.new_call) and not any(p.name == "..." for p in e.params)]


@pytest.mark.parametrize(("spec", "entry"), CHECKED, ids=lambda x: x.old if isinstance(x, MapEntry) else x.code)
def test_fixes_follow_the_declarations(spec: RuleSpec, entry: MapEntry) -> None:
    api, base = entry.old, _required(entry.old) + CONTEXT.get(entry.old, [])
    shape = next((s for s in SHAPES if _finding(api, spec.code, base, s).fix is not None), None)
    if shape is None and not base:  # `torch_xla.compile(f=None, ...)`: the first argument, though optional
        base = ["a0"]
        shape = next((s for s in SHAPES if _finding(api, spec.code, base, s).fix is not None), None)
    assert shape is not None, f"{spec.code}: `{api}` with only its required arguments gets no fix in any shape"
    given = {p.name for p in entry.params[: len(base)]}  # passed by position in the bare call
    for param in entry.params:
        default = _default(api, param.name)
        if param.name.startswith("*") or default is None or param.name in given:
            continue  # required (already in the bare call) or starred: no value to pass on its own
        if param.action in ("keep", "drop", "rename"):
            finding = _finding(api, spec.code, [*base, f"{param.name}={default}"], shape)
            assert finding.fix is not None, f"{spec.code}: `{param.name}={default}` ({param.action}) stops the fix"
        else:  # decline: its default changes nothing; another value stops the fix, saying why
            assert _finding(api, spec.code, [*base, f"{param.name}={default}"], shape).fix is not None
            finding = _finding(api, spec.code, [*base, f"{param.name}=opaque"], shape)
            assert finding.fix is None, f"{spec.code}: `{param.name}=` is declared decline but is fixed"
            assert param.note in finding.message


def test_an_unknown_keyword_is_named_in_the_finding() -> None:
    finding = _finding("torch_xla.core.xla_model.master_print", "NM304", ["a1", "bogus=1"], SHAPES[0])
    assert finding.fix is None
    assert "`master_print` has no parameter `bogus`" in finding.message
