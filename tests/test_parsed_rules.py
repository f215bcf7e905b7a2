"""The wheel's parsed rule tables (`neuron_migrate/parsed_rules.py`): used only for the exact
rule files they were made from, and giving the same rules as parsing them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from neuron_migrate import catalogue, parsed_rules
from neuron_migrate.data import rules_dir


@pytest.fixture
def shipped(tmp_path: Path) -> Path:
    """A copy of the rule files with the JSON the build hook writes beside them."""
    folder = tmp_path / "rules"
    folder.mkdir()
    for path in sorted(rules_dir().glob("NM*.toml")):
        shutil.copyfile(path, folder / path.name)
    (folder / parsed_rules.PARSED).write_text(parsed_rules.dumps(folder), encoding="utf-8")
    return folder


def _no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path, where: str) -> object:
        raise AssertionError(f"{where} was parsed")

    monkeypatch.setattr(catalogue, "_read_rule_file", refuse)


def test_the_parsed_tables_give_the_rules_parsing_gives(shipped: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = catalogue.load_rule_folder(rules_dir())
    _no_parsing(monkeypatch)
    assert catalogue.load_rule_folder(shipped) == parsed
    assert len(parsed) > 90


@pytest.mark.parametrize("change", ["edit", "add", "remove", "corrupt", "other_digest"])
def test_rule_files_that_differ_from_the_tables_are_parsed(shipped: Path, change: str) -> None:
    if change == "edit":
        path = shipped / "NM101.toml"
        path.write_text(path.read_text(encoding="utf-8").replace("code = ", "# edited\ncode = ", 1), encoding="utf-8")
        data = path.read_text(encoding="utf-8").replace('name = "', 'name = "renamed_', 1)
        path.write_text(data, encoding="utf-8")
    elif change == "add":
        text = (shipped / "NM101.toml").read_text(encoding="utf-8").replace('code = "NM101"', 'code = "NM199"')
        (shipped / "NM199.toml").write_text(text, encoding="utf-8")
    elif change == "remove":
        (shipped / "NM101.toml").unlink()
    elif change == "corrupt":
        (shipped / parsed_rules.PARSED).write_text('{"digest": ', encoding="utf-8")
    else:
        kept = json.loads((shipped / parsed_rules.PARSED).read_text(encoding="utf-8"))
        kept["digest"] = "0" * 32
        (shipped / parsed_rules.PARSED).write_text(json.dumps(kept), encoding="utf-8")
    paths = sorted(shipped.glob("NM*.toml"))
    assert parsed_rules.load(shipped, paths) is None
    codes = {spec.code: spec for spec in catalogue.load_rule_folder(shipped)}
    assert ("NM199" in codes) is (change == "add")
    assert ("NM101" in codes) is (change != "remove")
    if change == "edit":
        assert codes["NM101"].name.startswith("renamed_")


def test_a_project_rule_folder_is_always_parsed(shipped: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for path in shipped.glob("NM*.toml"):
        if path.name not in ("NM101.toml", parsed_rules.PARSED):
            path.unlink()
    (shipped / "NM101.toml").rename(shipped / "NMX101.toml")
    text = (shipped / "NMX101.toml").read_text(encoding="utf-8").replace('code = "NM101"', 'code = "NMX101"')
    (shipped / "NMX101.toml").write_text(text, encoding="utf-8")
    _no_parsing(monkeypatch)
    with pytest.raises(AssertionError, match="was parsed"):
        catalogue.load_rule_folder(shipped, project=True)


def test_a_source_checkout_ships_no_tables() -> None:
    assert not (rules_dir() / parsed_rules.PARSED).exists()  # they would go stale as rules are edited
