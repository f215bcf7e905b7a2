"""The versioned compat data (rules/compat/<version>/apis.toml) and how rules use it."""

from __future__ import annotations

import re
import sys
from dataclasses import replace

import pytest

from neuron_migrate import compat
from neuron_migrate.catalogue import RuleSpecError, load_catalogue
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

VERSIONS = compat.available_versions()
COMPAT_RULES = [s for s in load_catalogue() if s.compat]


def test_every_supported_target_has_data() -> None:
    assert VERSIONS == ("2.13", "2.14")
    for version in VERSIONS:
        release = compat.load_release(version)
        assert release.torch_neuronx.startswith(version + ".")
        assert release.torch.startswith(version + ".")
        assert release.apis


@pytest.mark.parametrize("version", VERSIONS)
def test_entries_have_a_status_and_a_cited_source(version: str) -> None:
    release = compat.load_release(version)
    for entry in release.apis:
        assert entry.status in compat.STATUSES
        assert "torchneuron-facts §" in entry.source
        assert any(mark in entry.source for mark in ("[C]", "[C-old]", "[I]", "[B]"))


def test_versions_share_entries_where_the_facts_do_not_differ() -> None:
    """The facts do not tell 2.13 and 2.14 apart, so the data says so: same entries, same sources."""
    old, new = (compat.load_release(v) for v in VERSIONS)
    assert old.apis == new.apis
    assert old.compile == new.compile
    assert (old.torch_neuronx, old.torch) != (new.torch_neuronx, new.torch)


@pytest.mark.parametrize("rule", COMPAT_RULES, ids=lambda s: s.code)
def test_every_map_entry_of_a_compat_rule_has_data(rule) -> None:
    """A `[[map]]` entry with no compat entry would never fire: rules and data must agree."""
    for version in VERSIONS:
        names = [e.name for e in compat.load_release(version).apis]
        for entry in rule.maps:
            below = entry.prefix and any(n.startswith(entry.old + ".") for n in names)
            assert entry.old in names or below, f"{rule.code}: `{entry.old}` has no entry in compat/{version}"


def test_status_lookup_prefers_the_longest_entry() -> None:
    release = compat.load_release("2.14")
    assert release.status_of("torch.fft.rfft").status == "cpu-fallback"
    assert release.status_of("torch.fft.fftfreq").status == "native"
    assert release.status_of("torch.fft.some_new_function").name == "torch.fft"
    assert release.status_of("torchao.prototype.mx_formats.MXLinearConfig").name == "torchao.prototype.mx_formats"
    assert release.status_of("torch.linalg.norm") is None
    assert release.status_of("torch.sparse_coo_tensorx") is None


def test_target_version_reaches_the_messages() -> None:
    source = "import torch\ntorch.fft.rfft(x)\n"
    for version in VERSIONS:
        result = check_source(source, "m.py", Settings(select=("NM406",), target_version=version))
        assert [f.message for f in result.findings] == [
            f"Move `torch.fft.rfft` off the hot path; torch-neuronx {version} runs it on the CPU"
        ]


def test_a_new_release_is_a_data_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """Marking an API native in the data silences its rule; marking it unsupported makes it an error."""
    real = compat.load_release("2.14")

    def with_status(name: str, status: str) -> compat.Release:
        apis = tuple(replace(e, status=status) if e.name == name else e for e in real.apis)
        return replace(real, version="9.9", apis=apis)

    source = "import torch\ntorch.sparse.mm(a, b)\ntorch.fft.rfft(x)\n"
    settings = Settings(select=("NM401", "NM406"), target_version="9.9")
    monkeypatch.setattr(compat, "load_release", lambda version: with_status("torch.sparse", "native"))
    assert [f.code for f in check_source(source, "m.py", settings).findings] == ["NM406"]
    monkeypatch.setattr(compat, "load_release", lambda version: with_status("torch.fft.rfft", "unsupported"))
    found = check_source(source, "m.py", settings).findings
    assert [(f.code, f.severity.value) for f in found] == [("NM401", "error"), ("NM406", "error")]
    assert found[1].message.endswith("torch-neuronx 9.9 does not support it")


def test_compile_support_comes_from_the_data(monkeypatch: pytest.MonkeyPatch) -> None:
    real = compat.load_release("2.14")
    source = 'import torch\ntorch.compile(m, dynamic=True, mode="max-autotune", options={"max_autotune": 1})\n'
    settings = Settings(select=("NM502", "NM504", "NM505"))
    assert [f.code for f in check_source(source, "m.py", settings).findings] == ["NM502", "NM504", "NM505"]
    wider = replace(real.compile, dynamic=True, modes=("default", "max-autotune"), options=("max_autotune",))
    monkeypatch.setattr(compat, "load_release", lambda version: replace(real, compile=wider))
    assert check_source(source, "m.py", settings).findings == ()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["api"][0].update(status="maybe"), "`status` must be one of"),
        (lambda d: d["api"][0].update(source="somewhere"), "must cite a torchneuron-facts section"),
        (lambda d: d["api"][0].update(colour="red"), "unknown key `colour`"),
        (lambda d: d.pop("release"), "`[release]` is required"),
        (lambda d: d["api"].append(dict(d["api"][0])), "is listed twice"),
    ],
)
def test_malformed_data_names_the_file_and_key(edit, message: str) -> None:
    data = tomllib.loads((compat.compat_dir() / "2.14" / "apis.toml").read_text(encoding="utf-8"))
    edit(data)
    with pytest.raises(RuleSpecError, match=re.escape(message)) as raised:
        compat.parse_release(data, "2.14", "compat/2.14/apis.toml")
    assert "compat/2.14/apis.toml" in str(raised.value)
