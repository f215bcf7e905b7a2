"""The rule catalogue is consistent: codes, names, messages, fixtures, generated docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from neuron_migrate.catalogue import (
    RuleSpecError,
    load_catalogue,
    parse_rule,
    rules_dir,
)
from neuron_migrate.model import Safety
from neuron_migrate.registry import BUILTIN_DETECTORS, RUNTIME_DETECTORS, registry

SPECS = load_catalogue()
# Tool rules (NM9xx) are about files, not code patterns; the CLI tests cover them.
PATTERN_RULES = [s for s in SPECS if not s.code.startswith(("NM7", "NM9"))]


def test_codes_and_names_are_unique() -> None:
    assert len({s.code for s in SPECS}) == len(SPECS)
    assert len({s.name for s in SPECS}) == len(SPECS)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.code)
def test_message_style(spec: object) -> None:
    maps = spec.maps  # type: ignore[attr-defined]
    messages = [spec.message] + [text for m in maps for text in (m.message, m.manual_message) if text]
    for message in messages:
        assert not message.endswith("."), message
        assert len(message) <= 110, message
        assert message[0].isupper(), message
        assert not re.search(r"\b(please|should|consider)\b", message, re.IGNORECASE), message
        assert "!" not in message.replace("`", ""), message


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.code)
def test_rule_doc_is_complete(spec: object) -> None:
    doc = spec.doc  # type: ignore[attr-defined]
    assert doc.get("what", "").startswith("Checks "), spec.code  # type: ignore[attr-defined]
    assert doc.get("why")
    if spec.safety is Safety.UNSAFE or any(m.safety is Safety.UNSAFE for m in spec.maps):  # type: ignore[attr-defined]
        assert doc.get("fix_safety"), f"{spec.code} has unsafe fixes but no fix_safety"  # type: ignore[attr-defined]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.code)
def test_fix_and_detector_names_exist(spec: object) -> None:
    assert spec.detector in BUILTIN_DETECTORS or spec.detector in registry().detectors  # type: ignore[attr-defined]
    for entry in spec.maps:  # type: ignore[attr-defined]
        assert entry.fix is None or entry.fix in registry().fixes, entry.fix


@pytest.mark.parametrize("spec", PATTERN_RULES, ids=lambda s: s.code)
def test_every_rule_has_fixtures(spec: object) -> None:
    """A `basic` case that fires and an `ok_` case that must not (a file, or a folder of files)."""
    folder = FIXTURES / spec.code  # type: ignore[attr-defined]
    names = [p.name for p in folder.iterdir()]
    assert any(n.startswith("basic") for n in names), f"{folder} needs a basic case"
    assert any(n.startswith("ok_") for n in names), f"{folder} needs an ok_ case that must not fire"
    expected = [*folder.glob("basic*.findings"), *folder.glob("basic*/*.findings")]
    assert any(p.read_text().strip() for p in expected), "the basic case must fire"


def test_smoke_rules_match_the_smoke_findings() -> None:
    from neuron_migrate.smoke.findings import RULES

    documented = {(s.code, s.name, s.severity) for s in SPECS if s.detector in RUNTIME_DETECTORS}
    assert documented == {(r.code, r.name, r.severity) for r in RULES}
    assert all(rule.severity.value for rule in RULES)  # read from rules/NM7xx.toml, not restated


def test_every_fixture_folder_has_a_rule() -> None:
    codes = {s.code for s in SPECS}
    folders = {p.name for p in FIXTURES.glob("NM*") if p.is_dir()}
    assert folders <= codes, folders - codes


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"code": "NM1", "name": "x", "message": "M", "severity": "error", "safety": "safe"}, "`code` must look like"),
        ({"code": "NM100", "name": "Bad-Name", "message": "M", "severity": "error", "safety": "safe"}, "snake_case"),
        (
            {"code": "NM100", "name": "x", "message": "M", "severity": "fatal", "safety": "safe"},
            "`severity` must be one of",
        ),
        (
            {"code": "NM100", "name": "x", "message": "M", "severity": "error", "safety": "safe", "colour": 1},
            "unknown key `colour`",
        ),
        (
            {
                "code": "NM100",
                "name": "x",
                "message": "M",
                "severity": "error",
                "safety": "safe",
                "map": [{"new": "x"}],
            },
            "`old` is required",
        ),
        ({"code": "NM100", "name": "x", "severity": "error", "safety": "safe"}, "`message` is required"),
    ],
)
def test_bad_rule_specs_name_the_file_and_key(data: dict, error: str) -> None:
    with pytest.raises(RuleSpecError, match=re.escape(error)) as info:
        parse_rule(data, "NM100.toml")
    assert str(info.value).startswith("NM100.toml")


def test_duplicate_code_is_rejected(tmp_path: Path) -> None:
    body = 'code = "NM100"\nname = "{n}"\nmessage = "M"\nseverity = "error"\nsafety = "safe"\n'
    (tmp_path / "NM100.toml").write_text(body.format(n="a"))
    (tmp_path / "NM101.toml").write_text(body.format(n="b"))
    with pytest.raises(RuleSpecError, match=re.escape("NM101.toml: code NM100 is already used by NM100.toml")):
        load_catalogue.__wrapped__(tmp_path)


def test_shipped_rules_dir_is_the_checkout() -> None:
    assert rules_dir() == ROOT / "rules"


def test_blocker_is_rule_data_and_reaches_the_finding() -> None:
    from neuron_migrate.engine.pipeline import check_source
    from neuron_migrate.settings import Settings

    specs = {spec.code: spec for spec in load_catalogue()}
    assert specs["NM312"].blocker and not specs["NM201"].blocker
    with pytest.raises(RuleSpecError, match="`blocker` must be true or false"):
        parse_rule(
            {"code": "NM100", "name": "x", "message": "M", "severity": "error", "safety": "safe", "blocker": "yes"}, "t"
        )
    source = "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.spmd as xs\n\nxs.mark_sharding(t, mesh, (0, 1))\nxm.mark_step()\n"
    result = check_source(source, "spmd.py", Settings())
    assert {(f.code, f.blocker) for f in result.findings} >= {("NM312", True), ("NM201", False)}
