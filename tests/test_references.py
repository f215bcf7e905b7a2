"""Every reference form of every mapped torch_xla API gets the action its call form has.

A name read without being called keeps the torch_xla import alive as surely as a call, so each
form (a value assigned, passed, given as a default, held by an attribute or chosen by a
conditional expression; a class named by a type test) is built for each API the rules map, as
tests/test_signatures.py does for arguments: the finding at the reference has the action
docs/api-coverage.md documents for that form (a fix where the call is ported, replaced by a
helper or dropped; a message saying what to write otherwise), and where every form is fixed,
`--fix --unsafe-fixes` leaves no torch_xla import behind.
"""

from __future__ import annotations

import ast

import pytest

from neuron_migrate.api_coverage import api_decision, form_action
from neuron_migrate.catalogue import MapEntry, RuleSpec, load_catalogue
from neuron_migrate.engine.check import BLOCKS_THE_RUN
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.engine.references import MANUAL_MESSAGE, TYPE_TEST, VALUE
from neuron_migrate.model import Finding
from neuron_migrate.settings import Settings
from neuron_migrate.signatures import load_signatures

SPECS = load_catalogue()
TABLE = load_signatures()

# Each form on its own line; `target` is the API, imported under that name.
VALUE_FORMS = {
    "assigned": "f = target",
    "passed": "print(target)",
    "attribute value": "holder.f = target",
    "default argument": "def use(f=target):\n    return f",
    "conditional expression": "g = target if a1 else None",
}
TYPE_FORMS = {
    "isinstance": "print(isinstance(a1, target))",
    "issubclass tuple": "print(issubclass(type(a1), (int, target)))",
    "except": "try:\n    pass\nexcept target:\n    pass",
}
PRELUDE = "import types\n\na1 = object()\nholder = types.SimpleNamespace()\n"
# A file that tests a class usually builds one too (the device loader's type test relies on it).
BUILT = "\n\ndef build(*args, **kwargs):\n    return target(*args, **kwargs)\n"


def _mapped() -> list[tuple[str, RuleSpec, MapEntry]]:
    found = []
    for name in sorted(TABLE):
        decision = api_decision(name, SPECS)
        if not name.startswith("torch_xla.") or decision is None:
            continue  # neuronx_distributed's APIs (signatures-nxd.toml) have their NxD rules' findings
        if decision[1].old != name or decision[0].detector != "qualified":
            continue
        found.append((name, *decision))
    return found


MAPPED = _mapped()


def _source(api: str, forms: dict[str, str], built: bool) -> tuple[str, dict[str, int]]:
    """The module, and the line each form's `target` stands on."""
    module, _, name = api.rpartition(".")
    text = f"from {module} import {name} as target\n{PRELUDE}"
    lines: dict[str, int] = {}
    for form, code in forms.items():
        text += "\n"
        first = text.count("\n") + 1
        lines[form] = first + next(i for i, line in enumerate(code.split("\n")) if "target" in line)
        text += code + "\n"
    return text + (BUILT if built else ""), lines


def _at(findings: tuple[Finding, ...], code: str, line: int) -> Finding:
    found = [f for f in findings if f.code == code and f.start.line == line and f.snippet == "target"]
    assert len(found) == 1, (code, line, findings)
    return found[0]


def _check(spec: RuleSpec, entry: MapEntry, finding: Finding, form: str, where: str) -> bool:
    """Assert the finding has the documented action of `form`; whether it is fixed."""
    action, safety = form_action(spec, entry, form)
    if action in ("port", "helper", "drop"):
        assert finding.fix is not None, f"{where}: documented {action}, but no fix: {finding.message}"
        if safety != "manual":
            assert finding.fix.applicability.value in (safety, "unsafe"), where
        return True
    assert finding.fix is None, f"{where}: documented {action}, but fixed"
    if action == "blocker":
        assert finding.message.endswith(BLOCKS_THE_RUN), where
    elif api_action_rewrites(spec, entry):
        expected = (entry.ref_message or MANUAL_MESSAGE).split("{old}")[0]
        assert finding.message.startswith(expected) or "referenced" in finding.message, (where, finding.message)
    return False


def api_action_rewrites(spec: RuleSpec, entry: MapEntry) -> bool:
    return form_action(spec, entry, "call")[0] in ("port", "helper", "drop")


@pytest.mark.parametrize(("api", "spec", "entry"), MAPPED, ids=[m[0] for m in MAPPED])
def test_every_reference_form_gets_its_documented_action(api: str, spec: RuleSpec, entry: MapEntry) -> None:
    forms = dict(VALUE_FORMS)
    is_class = TABLE[api].get("kind") == "class"
    if is_class:
        forms.update(TYPE_FORMS)
    text, lines = _source(api, forms, built=is_class)
    findings = check_source(text, "train.py", Settings(select=("NM",))).findings
    fixed = [
        _check(spec, entry, _at(findings, spec.code, lines[form]), TYPE_TEST if form in TYPE_FORMS else VALUE, form)
        for form in forms
    ]
    if not all(fixed):
        return
    result = check_source(text, "train.py", Settings(select=("NM",), fix=True, unsafe_fixes=True))
    source = result.fixed_source or text
    compile(source, "train.py", "exec")
    remaining = [f.code for f in result.findings if f.snippet == "target"]
    assert not remaining, (source, result.findings)
    imported = [
        n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.module == api.rpartition(".")[0]
    ]
    assert not imported or is_class, source  # the import went with its last reference (a class is also built)
