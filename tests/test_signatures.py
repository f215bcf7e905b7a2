"""Mappings are signature-complete: each torch_xla API a rule maps declares every parameter it has.

rules/signatures.toml holds the signatures, read from the torch_xla 2.5 and 2.8 wheels by
scripts/signatures.py. Each `[[map]]` entry that rewrites an API declares, in `[map.params]`, what
its fix does with each parameter (keep, rename, drop, decline). The tests check the declarations
against the table, then check that the fixes do what the declarations say: an argument declared
keep or drop never stops a fix, and one declared decline stops it with the declared reason.
"""

from __future__ import annotations

import pytest

from neuron_migrate.catalogue import MapEntry, RuleSpec, RuleSpecError, load_catalogue, parse_rule
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings
from neuron_migrate.signatures import load_signatures, param_name, signature_versions

SPECS = load_catalogue()
TABLE = load_signatures()
MARKERS = ("*", "/")


def _rewrites(entry: MapEntry) -> bool:
    return bool(entry.fix or entry.new_call or entry.new)


def _signature_names(api: str) -> dict[str, list[str]]:
    """Each version's parameter names, in order, without the `*` and `/` markers."""
    versions = signature_versions(TABLE[api])
    return {v: [param_name(t) for t in tokens if t not in MARKERS] for v, tokens in versions.items()}


def _torch_xla_entries() -> list[tuple[RuleSpec, MapEntry]]:
    return [(s, m) for s in SPECS for m in s.maps if m.old.startswith("torch_xla.") and not m.prefix]


MAPPED = [
    (spec, entry)
    for spec, entry in _torch_xla_entries()
    if _rewrites(entry)
    and TABLE.get(entry.old, {}).get("kind") in ("function", "class")
    and any(_signature_names(entry.old).values())
]


def test_the_table_lists_every_api_a_rule_names() -> None:
    named = {entry.old for _, entry in _torch_xla_entries()}
    missing = sorted(named - set(TABLE))
    assert not missing, f"run scripts/signatures.py: {missing}"
    stale = sorted(api for api, row in TABLE.items() if row["mapped"] and api not in named)
    assert not stale, f"no rule maps these any more; run scripts/signatures.py: {stale}"


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
)
PRELUDE = "def a0(*args, **kwargs):\n    pass\n\n\na1 = a2 = a3 = a4 = a5 = a6 = opaque = object()\n"


def _source(api: str, arguments: list[str], shape: str) -> str:
    module, _, name = api.rpartition(".")
    call = f"target({', '.join(arguments)})"
    return f"from {module} import {name} as target\n\n{PRELUDE}\n" + shape.format(call=call)


def _finding(api: str, code: str, arguments: list[str], shape: str):  # type: ignore[no-untyped-def]
    text = _source(api, arguments, shape)
    result = check_source(text, "train.py", Settings(select=("NM",)))
    found = [f for f in result.findings if f.code == code and f.snippet.startswith("target(")]
    assert len(found) == 1, (text, result.findings)
    return found[0]


def _required(api: str) -> list[str]:
    tokens = signature_versions(TABLE[api])
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
    for tokens in signature_versions(TABLE[api]).values():
        for token in tokens:
            if param_name(token) == name and "=" in token:
                value = token.split("=", 1)[1]
                return None if value == "..." else value
    return None


CHECKED = [(s, e) for s, e in MAPPED if (e.fix or e.new_call) and not any(p.name == "..." for p in e.params)]


@pytest.mark.parametrize(("spec", "entry"), CHECKED, ids=lambda x: x.old if isinstance(x, MapEntry) else x.code)
def test_fixes_follow_the_declarations(spec: RuleSpec, entry: MapEntry) -> None:
    api, base = entry.old, _required(entry.old)
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
