"""Reading requirements out of packaging files, and the version arithmetic behind NM621/NM622."""

from __future__ import annotations

import pytest

from neuron_migrate.engine.formats import packaging
from neuron_migrate.engine.formats.textfiles import file_kind


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("torch-xla", ("torch-xla", (), None)),
        ("Torch_XLA[tpu]==2.9.0", ("torch-xla", (("==", "2.9.0"),), None)),
        ("torch.xla (>=2.1, <2.3) ; python_version > '3.9'", ("torch-xla", ((">=", "2.1"), ("<", "2.3")), None)),
        ("torch-neuronx @ https://example.com/t.whl", ("torch-neuronx", (), "https://example.com/t.whl")),
        ("-r base.txt", None),
        ("torch >= banana", None),
    ],
)
def test_parse_requirement(text: str, expected: object) -> None:
    assert packaging.parse_requirement(text) == expected


@pytest.mark.parametrize(
    ("spec", "family", "xla_era"),
    [
        ("==2.14.*", "2.14", False),
        ("==2.14.3.0", "2.14", False),
        ("~=2.13.0", "2.13", False),
        (">=2.14,<2.15", "2.14", False),
        ("~=2.14", None, False),
        (">=2.13", None, False),
        ("", None, False),
        ("==2.9.0.2.15.32035", "2.9", True),
        ("==2.9.*", "2.9", True),
        ("<2.13", None, True),
        ("<=2.12.9", None, True),
        ("<2.13.1", None, False),
        (">=2.1,<2.10", None, True),
        ("!=2.9.0", None, False),
    ],
)
def test_version_families(spec: str, family: str | None, xla_era: bool) -> None:
    parsed = packaging.parse_requirement("torch-neuronx" + spec)
    assert parsed is not None
    assert packaging.family_of(parsed[1]) == family
    assert packaging.below(parsed[1], "2.13") is xla_era


def test_requirements_txt_positions_continuations_and_index() -> None:
    text = "# c\n-i https://pip.repos.neuron.amazonaws.com\ntorch==2.14.*  # pin\nfoo==1 \\\n  --hash=sha256:00\n-e .\n"
    found = packaging.read_requirements_txt(text)
    assert found.index_hint
    assert [(r.name, text[r.start : r.end]) for r in found.requirements] == [
        ("torch", "torch==2.14.*"),
        ("foo", "foo==1"),
    ]
    foo = found.requirements[1]
    assert foo.lines is not None and text[foo.lines[0] : foo.lines[1]] == "foo==1 \\\n  --hash=sha256:00\n"


def test_pyproject_finds_each_group_and_skips_comments_and_other_tables() -> None:
    text = (
        '[project]\n# "torch-xla"\ndependencies = ["a", "torch-xla"]\n'
        '[project.optional-dependencies]\nx = [\n  "torch-xla>=2",\n]\n'
        '[dependency-groups]\ndev = ["torch-xla==2.1"]\n[tool.x]\ny = "torch-xla"\n'
    )
    found = packaging.read_pyproject(text).requirements
    assert [(r.text, text[r.start : r.end], r.lines is not None) for r in found] == [
        ("a", "a", False),
        ("torch-xla", "torch-xla", False),
        ("torch-xla>=2", "torch-xla>=2", True),
        ("torch-xla==2.1", "torch-xla==2.1", False),
    ]
    assert text.count("\n", 0, found[2].start) == 5


def test_pyproject_that_is_not_toml_raises_value_error() -> None:
    with pytest.raises(ValueError):
        packaging.read_pyproject("[project\n")


def test_setup_cfg_reads_only_requirement_keys() -> None:
    text = "[metadata]\nname = torch-xla\n[options]\npython_requires = >=3.10\ninstall_requires =\n    torch-xla\n[options.extras_require]\ntpu = torch_xla[tpu]\n"
    found = packaging.read_setup_cfg(text).requirements
    assert [(r.name, r.lines is not None) for r in found] == [("torch-xla", True), ("torch-xla", False)]


def test_setup_py_reads_literals_only() -> None:
    text = 'from setuptools import setup\nREQ = ["torch-xla"]\nsetup(install_requires=REQ + other, extras_require={"a": ["neuronx-distributed"]})\n'
    found = packaging.read_setup_py(text).requirements
    assert [r.name for r in found] == ["neuronx-distributed"]
    assert text[found[0].start : found[0].end] == "neuronx-distributed"


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("requirements.txt", "requirements"),
        ("deploy/requirements-dev.txt", "requirements"),
        ("requirements/base.txt", "requirements"),
        ("pyproject.toml", "pyproject"),
        ("pkg/setup.cfg", "setup_cfg"),
        ("setup.py", "setup_py"),
        ("scripts/train.sh", "shell"),
        ("notes.txt", None),
        ("train.py", None),
        ("Cargo.toml", None),
    ],
)
def test_file_kind(path: str, kind: str | None) -> None:
    assert file_kind(path) == kind
