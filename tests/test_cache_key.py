"""The cache key: the same in every process, and changed by whatever can change a result."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from neuron_migrate import registry
from neuron_migrate.config import Config, Overrides, merge
from neuron_migrate.run.cache import config_key, rules_stamp, tree_stamp
from neuron_migrate.settings import RuleSources, Settings

_KEY_PROBE = """
from pathlib import Path
from neuron_migrate.config import Config, Overrides, merge
from neuron_migrate.run.cache import open_cache
from neuron_migrate.settings import Settings
for settings in (merge(Config(), Overrides()), merge(Config(ignore=("NM6",)), Overrides()), Settings(enabled=frozenset({"NM201", "NM202", "NM301"}))):
    print(open_cache(Path("cache"), settings, Path("/somewhere")).index_path.name)
"""


def _keys(seed: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _KEY_PROBE], capture_output=True, text=True, check=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": seed},
    )  # fmt: skip
    return done.stdout.split()


def test_the_key_is_the_same_whatever_the_hash_seed() -> None:
    """A set in the key (the enabled codes) once made every process miss the cache."""
    first, second = _keys("1"), _keys("2")
    assert len(first) == 3
    assert first == second


def test_enabled_codes_are_left_to_the_selectors() -> None:
    base = config_key(Settings(), Path("/w"), "rules")
    assert config_key(Settings(enabled=frozenset({"NM201"})), Path("/w"), "rules") == base
    assert config_key(Settings(select=("NM201",)), Path("/w"), "rules") != base
    assert config_key(Settings(families=("xla", "cuda")), Path("/w"), "rules") != base
    assert config_key(Settings(target="accelerator"), Path("/w"), "rules") != base
    assert config_key(Settings(per_file_ignores=(("a.py", ("NM2",)),)), Path("/w"), "rules") != base
    assert config_key(Settings(rule_sources=RuleSources(("/rules",))), Path("/w"), "rules") != base
    assert config_key(Settings(), Path("/elsewhere"), "rules") != base


def test_cli_selectors_resolve_codes_lazily() -> None:
    """Without a config that selects, merging loads no rules: the codes are resolved on use."""
    settings = merge(Config(), Overrides(select=("NM2",), ignore=("NM201",)))
    assert settings.enabled is None
    from neuron_migrate.engine.ruleset import enabled_codes

    codes = enabled_codes(settings)
    assert "NM202" in codes and "NM201" not in codes and not any(c.startswith("NM3") for c in codes)


def _write(path: Path, text: str, mtime_ns: int | None = None) -> None:
    path.write_text(text)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))


def test_tree_stamp_sees_content_mtime_and_files(tmp_path: Path) -> None:
    old = 1_000_000_000_000_000_000
    _write(tmp_path / "NMX001.toml", 'code = "NMX001"\n', old)
    (tmp_path / "sub").mkdir()
    _write(tmp_path / "sub" / "apis.toml", "a = 1\n", old)
    _write(tmp_path / "README.md", "not a rule\n", old)
    first = tree_stamp(tmp_path, ".toml")
    assert tree_stamp(tmp_path, ".toml") == first
    _write(tmp_path / "README.md", "still not a rule\n")
    assert tree_stamp(tmp_path, ".toml") == first, "only files with the suffix count"
    _write(tmp_path / "sub" / "apis.toml", "a = 2\n", old)  # same size, same (old) mtime
    assert tree_stamp(tmp_path, ".toml") == first, "an old mtime vouches for the content (as in git)"
    _write(tmp_path / "sub" / "apis.toml", "a = 2\n", old + 1)
    changed = tree_stamp(tmp_path, ".toml")
    assert changed != first
    _write(tmp_path / "NMX002.toml", 'code = "NMX002"\n', old)
    assert tree_stamp(tmp_path, ".toml") != changed, "a new rule file changes the stamp"


def test_a_recent_file_is_stamped_by_its_content(tmp_path: Path) -> None:
    """Rewritten within the clock's granularity, a file can keep its size and mtime."""
    now = time.time_ns()
    _write(tmp_path / "NMX001.toml", 'message = "a"\n', now)
    first = tree_stamp(tmp_path, ".toml")
    _write(tmp_path / "NMX001.toml", 'message = "b"\n', now)
    assert tree_stamp(tmp_path, ".toml") != first


def test_rules_stamp_follows_extend_rules_and_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "rules"
    folder.mkdir()
    _write(folder / "NMX001.toml", 'code = "NMX001"\n', 1_000_000_000_000_000_000)
    shipped = rules_stamp(RuleSources())
    project = rules_stamp(RuleSources((str(folder),)))
    assert project != shipped and project.startswith(shipped)
    _write(folder / "NMX001.toml", 'code = "NMX001"\n# edited\n')
    assert rules_stamp(RuleSources((str(folder),))) != project
    monkeypatch.setattr(registry, "rules_digest", lambda sources: f"plugin digest {sources.plugins}")
    assert rules_stamp(RuleSources(plugins=("nm_plugin",))) == "plugin digest ('nm_plugin',)"


def test_the_shipped_rules_stamp_builds_no_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "registry", lambda *a: pytest.fail("the registry was built"))
    assert rules_stamp(RuleSources())
    assert registry.rules_digest(RuleSources())


def test_rules_digest_without_plugins_equals_the_registry_digest() -> None:
    assert registry.rules_digest(RuleSources()) == registry.registry(RuleSources()).digest


def test_a_check_that_shows_fix_edits_is_cached_apart_from_a_plain_one(tmp_path: Path) -> None:
    """JSON and SARIF carry the edits of structural fixes (their transforms run), a plain check
    does not: the two results must never answer for each other from the cache."""
    plain = merge(Config(), Overrides(output_format="concise"))
    shown = merge(Config(), Overrides(output_format="json"))
    assert not plain.fix_edits and shown.fix_edits
    assert config_key(plain, tmp_path, "rules") != config_key(shown, tmp_path, "rules")
