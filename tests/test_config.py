"""Config files: discovery, validation, and precedence (CLI > nearest file > defaults)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuron_migrate.cli import main
from neuron_migrate.config import (
    Config,
    ConfigError,
    Overrides,
    find_config,
    load_config,
    merge,
    parse_config,
)
from neuron_migrate.engine.ruleset import enabled_codes
from neuron_migrate.output_formats import NAMES as FORMATS
from neuron_migrate.settings import DEFAULT_EXCLUDES, Settings

CODE = """import torch_xla.core.xla_model as xm

device = xm.xla_device()
xm.mark_step()
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _codes(result_output: str) -> list[str]:
    return [line.split(": ")[1].split()[0] for line in result_output.splitlines() if line.count(":") >= 3]


# -- parsing and validation ---------------------------------------------------------------


def test_reads_every_key_from_pyproject(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "pyproject.toml",
        """
[project]
name = "demo"

[tool.neuron-migrate]
select = ["NM1", "NM2"]
ignore = ["NM201"]
extend-select = ["NM601"]
exclude = ["legacy"]
extend-exclude = ["gen_*.py"]
per-file-ignores = { "tests/*.py" = ["NM1"], "conftest.py" = ["NM2"] }
target-version = "2.13"
unsafe-fixes = true
output-format = "json"
""",
    )
    config = load_config(path)
    assert config.select == ("NM1", "NM2")
    assert config.ignore == ("NM201",)
    assert config.extend_select == ("NM601",)
    assert config.exclude == ("legacy",)
    assert config.extend_exclude == ("gen_*.py",)
    assert config.per_file_ignores == (
        ((tmp_path.resolve() / "tests/*.py").as_posix(), ("NM1",)),
        ("conftest.py", ("NM2",)),
    )
    assert (config.target_version, config.unsafe_fixes, config.output_format) == ("2.13", True, "json")


def test_neuron_migrate_toml_uses_top_level_keys(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path / "neuron-migrate.toml", 'ignore = ["NM6"]\n'))
    assert config.ignore == ("NM6",)


@pytest.mark.parametrize("fmt", FORMATS)
def test_accepts_every_output_format(tmp_path: Path, fmt: str) -> None:
    assert parse_config({"output-format": fmt}, tmp_path / "neuron-migrate.toml").output_format == fmt


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"per_file_ignores": {}}, ["unknown key `per_file_ignores`", "did you mean `per-file-ignores`"]),
        ({"colour": True}, ["unknown key `colour`", "known keys"]),
        ({"select": "NM1"}, ["`select` must be a list of strings, not a string"]),
        ({"ignore": [1]}, ["`ignore` must be a list of strings"]),
        ({"extend-select": ["E501"]}, ["`extend-select` has 'E501'", "not a rule code"]),
        ({"unsafe-fixes": "yes"}, ["`unsafe-fixes` must be true or false, not a string"]),
        ({"target-version": 2.14}, ["`target-version` must be one of 2.13, 2.14"]),
        ({"output-format": "xml"}, ["`output-format` must be one of text, concise, full, json"]),
        ({"per-file-ignores": ["a"]}, ["`per-file-ignores` must be a table"]),
        ({"per-file-ignores": {"a.py": "NM1"}}, ["`per-file-ignores.a.py` must be a list of strings"]),
    ],
)
def test_bad_config_names_key_and_file(tmp_path: Path, table: dict, words: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(table, tmp_path / "neuron-migrate.toml")
    message = str(caught.value)
    assert "neuron-migrate.toml" in message
    for word in words:
        assert word in message


def test_invalid_toml_is_a_config_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "neuron-migrate.toml", "select = [\n")
    with pytest.raises(ConfigError, match=re.escape("neuron-migrate.toml: invalid TOML")):
        load_config(path)


def test_valid_config_is_not_an_error(tmp_path: Path) -> None:
    assert parse_config({}, tmp_path / "neuron-migrate.toml") == Config(path=tmp_path / "neuron-migrate.toml")


# -- discovery ----------------------------------------------------------------------------


def test_nearest_config_wins(tmp_path: Path) -> None:
    outer = _write(tmp_path / "pyproject.toml", "[tool.neuron-migrate]\nignore = ['NM1']\n")
    inner = _write(tmp_path / "pkg" / "neuron-migrate.toml", "ignore = ['NM2']\n")
    (tmp_path / "pkg" / "sub").mkdir()
    (tmp_path / "other").mkdir()
    assert find_config(tmp_path / "pkg" / "sub") == inner.resolve()
    assert find_config(tmp_path / "other") == outer.resolve()


def test_own_file_beats_pyproject_in_same_folder(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", "[tool.neuron-migrate]\nignore = ['NM1']\n")
    own = _write(tmp_path / "neuron-migrate.toml", "ignore = ['NM2']\n")
    assert find_config(tmp_path) == own.resolve()


def test_pyproject_without_table_is_skipped(tmp_path: Path) -> None:
    outer = _write(tmp_path / "neuron-migrate.toml", "")
    _write(tmp_path / "pkg" / "pyproject.toml", "[tool.ruff]\nline-length = 100\n")
    assert find_config(tmp_path / "pkg") == outer.resolve()


# -- precedence ---------------------------------------------------------------------------


def test_defaults_without_config() -> None:
    settings = merge(Config(), Overrides())
    assert settings == Settings()


def test_config_selection_applies() -> None:
    settings = merge(Config(select=("NM2",), ignore=("NM201",)), Overrides())
    codes = enabled_codes(settings)
    assert "NM202" in codes and "NM201" not in codes and "NM101" not in codes


def test_cli_select_replaces_config_selection() -> None:
    codes = enabled_codes(merge(Config(select=("NM2",), ignore=("NM101",)), Overrides(select=("NM1",))))
    assert "NM101" in codes and "NM201" not in codes


def test_cli_ignore_and_extend_select_adjust_config_selection() -> None:
    config = Config(select=("NM2",), ignore=("NM201",))
    codes = enabled_codes(merge(config, Overrides(ignore=("NM202",), extend_select=("NM101", "NM201"))))
    assert {"NM101", "NM201"} <= codes and "NM202" not in codes and "NM102" not in codes


def test_cli_scalars_override_config() -> None:
    config = Config(target_version="2.13", unsafe_fixes=True)
    assert merge(config, Overrides()).target_version == "2.13"
    assert merge(config, Overrides()).unsafe_fixes is True
    assert merge(config, Overrides(target_version="2.14", unsafe_fixes=False)).target_version == "2.14"
    assert merge(config, Overrides(unsafe_fixes=False)).unsafe_fixes is False


def test_exclude_replaces_defaults_and_extend_exclude_adds() -> None:
    assert merge(Config(exclude=("gen",)), Overrides()).exclude == ("gen",)
    cli = merge(Config(exclude=("gen",), extend_exclude=("e",)), Overrides(exclude=("x",), extend_exclude=("y",)))
    assert cli.exclude == ("x",) and cli.extend_exclude == ("e", "y")  # --exclude replaces, --extend-exclude adds
    settings = merge(Config(extend_exclude=("gen",)), Overrides())
    assert settings.exclude == DEFAULT_EXCLUDES and settings.extend_exclude == ("gen",)


# -- end to end ---------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    _write(tmp_path / "src" / "train.py", CODE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_cli_uses_config_and_flags_override_it(project: Path) -> None:
    _write(project / "pyproject.toml", "[tool.neuron-migrate]\nignore = ['NM201', 'NM299', 'NM6']\n")
    runner = CliRunner()
    assert _codes(runner.invoke(main, ["src"]).stdout) == ["NM101"]
    assert _codes(runner.invoke(main, ["src", "--select", "NM201"]).stdout) == ["NM201"]
    assert _codes(runner.invoke(main, ["src", "--extend-select", "NM201"]).stdout) == ["NM101", "NM201"]


def test_cli_nearest_config_per_path(project: Path) -> None:
    _write(project / "pyproject.toml", "[tool.neuron-migrate]\nignore = ['NM6']\n")
    _write(project / "src" / "neuron-migrate.toml", "ignore = ['NM6', 'NM1', 'NM299']\n")
    _write(project / "scripts" / "run.py", CODE)
    result = CliRunner().invoke(main, ["src", "scripts"])
    assert [
        line.split(":")[0] + " " + code for line, code in zip(result.stdout.splitlines(), _codes(result.stdout))
    ] == [
        "scripts/run.py NM101",
        "scripts/run.py NM201",
        "src/train.py NM201",
    ]


def test_cli_config_flag_overrides_search(project: Path) -> None:
    _write(project / "pyproject.toml", "[tool.neuron-migrate]\nignore = ['NM6']\n")
    other = _write(project / "ci.toml", "select = ['NM201']\n")
    assert _codes(CliRunner().invoke(main, ["src", "--config", str(other)]).stdout) == ["NM201"]


def test_cli_output_format_from_config(project: Path) -> None:
    _write(project / "neuron-migrate.toml", "output-format = 'json'\n")
    result = CliRunner().invoke(main, ["src"])
    assert result.stdout.lstrip().startswith("[")
    assert CliRunner().invoke(main, ["src", "--output-format", "text"]).stdout.startswith("src/train.py:")


def test_cli_unsafe_fixes_from_config(project: Path) -> None:
    _write(project / "neuron-migrate.toml", "select = ['NM210']\nunsafe-fixes = true\n")
    _write(project / "src" / "save.py", "import torch_xla.core.xla_model as xm\nxm.save({}, 'a.pt')\n")
    result = CliRunner().invoke(main, ["src/save.py", "--fix"])
    assert result.exit_code == 0, result.output
    assert "xm.save" not in (project / "src" / "save.py").read_text()
    result = CliRunner().invoke(main, ["src/save.py", "--fix", "--no-unsafe-fixes"])
    assert result.exit_code == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[tool.neuron-migrate]\nselct = ['NM1']\n", "pyproject.toml: unknown key `selct` (did you mean `select`?)"),
        ("[tool.neuron-migrate]\nselect = 'NM1'\n", "pyproject.toml: `select` must be a list of strings, not a string"),
        ("[tool.neuron-migrate\n", "pyproject.toml: invalid TOML"),
    ],
)
def test_cli_bad_config_is_one_line_exit_2(project: Path, text: str, expected: str) -> None:
    _write(project / "pyproject.toml", text)
    result = CliRunner().invoke(main, ["src"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"neuron-migrate: error: {expected}")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output and result.stdout == ""


def test_cli_missing_config_file_is_exit_2(project: Path) -> None:
    result = CliRunner().invoke(main, ["src", "--config", "nope.toml"])
    assert result.exit_code == 2
    assert "nope.toml: config file not found" in result.stderr


# -- per-file-ignores ---------------------------------------------------------------------


def test_per_file_ignores_by_path_and_by_name(project: Path) -> None:
    _write(project / "tests" / "test_train.py", CODE)
    _write(project / "src" / "conftest.py", CODE)
    _write(
        project / "neuron-migrate.toml",
        """
select = ["NM101", "NM201"]
[per-file-ignores]
"tests/*.py" = ["NM1"]
"conftest.py" = ["NM2"]
""",
    )
    result = CliRunner().invoke(main, ["."])
    found = sorted(
        f"{line.split(':')[0]} {code}" for line, code in zip(result.stdout.splitlines(), _codes(result.stdout))
    )
    assert found == [
        "src/conftest.py NM101",  # the name glob drops NM2 only here
        "src/train.py NM101",
        "src/train.py NM201",  # neither glob matches: nothing dropped
        "tests/test_train.py NM201",  # the path glob drops NM1 only under tests/
    ]


def test_per_file_ignores_negated_glob(project: Path) -> None:
    _write(project / "tests" / "test_train.py", CODE)
    _write(project / "neuron-migrate.toml", 'select = ["NM101"]\n[per-file-ignores]\n"!src/*" = ["NM1"]\n')
    result = CliRunner().invoke(main, ["."])
    assert [line.split(":")[0] for line in result.stdout.splitlines() if "NM101" in line] == ["src/train.py"]


def test_per_file_ignores_anchor_at_config_folder(project: Path) -> None:
    _write(project / "pkg" / "tests" / "test_a.py", CODE)
    _write(project / "pkg" / "neuron-migrate.toml", 'select = ["NM101"]\n[per-file-ignores]\n"tests/*" = ["NM101"]\n')
    _write(project / "tests" / "test_b.py", CODE)
    result = CliRunner().invoke(main, ["pkg", "tests"])
    assert [line.split(":")[0] for line in result.stdout.splitlines() if "NM101" in line] == ["tests/test_b.py"]
