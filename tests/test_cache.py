"""The result cache: same findings as without it, invalidated by content, settings and rules."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from bench.corpus import write_corpus
from click.testing import CliRunner

from neuron_migrate.cli import main
from neuron_migrate.model import FileResult
from neuron_migrate.run import cache as cache_module
from neuron_migrate.run import parallel
from neuron_migrate.run.cache import CACHE_DIR_NAME, config_key, open_cache
from neuron_migrate.run.discover import Target, discover
from neuron_migrate.run.parallel import run_targets
from neuron_migrate.settings import Settings

pytestmark = pytest.mark.slow  # checks whole trees again and again, with and without the cache

CLEAN = 'import torch\n\nx = torch.ones(2, device="cpu")\n'
BROKEN = "import torch_xla\ndef broken(:\n"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small project: generated torch_xla files, a clean file and an unparseable one."""
    write_corpus(tmp_path / "src", files=6, per_folder=3)
    (tmp_path / "src" / "clean.py").write_text(CLEAN)
    (tmp_path / "src" / "broken.py").write_text(BROKEN)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _targets(root: Path, settings: Settings) -> list[Target]:
    return discover([root / "src"], settings, root)


def _findings(results: list[FileResult]) -> list[tuple[object, ...]]:
    return [(r.path, f.code, f.start, f.end, f.message, f.fix) for r in results for f in r.findings]


class Counter:
    """Wraps `parallel._compute` to count the files that were really checked."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.checked: list[str] = []
        original = parallel._compute

        def counting(targets: list[Target], *args: object) -> object:
            self.checked.extend(t.display for t in targets)
            return original(targets, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(parallel, "_compute", counting)


def _run(root: Path, settings: Settings, use_cache: bool = True) -> list[FileResult]:
    cache = open_cache(root / CACHE_DIR_NAME, settings, root) if use_cache else None
    return run_targets(_targets(root, settings), settings, cache=cache, write=False)


def test_findings_identical_with_and_without_cache(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings()
    uncached = _run(tree, settings, use_cache=False)
    counter = Counter(monkeypatch)
    cold = _run(tree, settings)
    warm = _run(tree, settings)
    assert len(counter.checked) == 8, "the warm run must not check any file again"
    assert _findings(cold) == _findings(warm) == _findings(uncached)
    assert {f.code for f in _findings_objects(warm)} >= {"NM201", "NM901", "NM601"}
    assert [r.path for r in warm] == [r.path for r in uncached]


def _findings_objects(results: list[FileResult]) -> list:  # type: ignore[type-arg]
    return [f for r in results for f in r.findings]


def test_cache_folder_holds_gitignore(tree: Path) -> None:
    _run(tree, Settings())
    folder = tree / CACHE_DIR_NAME
    assert folder.joinpath(".gitignore").read_text().splitlines()[-1] == "*"
    assert list(folder.glob("*.idx"))


def test_changed_content_is_checked_again(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings()
    _run(tree, settings)
    target = tree / "src" / "clean.py"
    same_size = CLEAN.replace('"cpu"', '"xla"')  # same size, now an NM102 finding
    assert len(same_size) == len(CLEAN)
    target.write_text(same_size)
    counter = Counter(monkeypatch)
    results = _run(tree, settings)
    assert counter.checked == ["src/clean.py"]
    assert _findings(results) == _findings(_run(tree, settings, use_cache=False))
    assert any(r.path == "src/clean.py" and r.findings for r in results)


def test_old_unchanged_files_are_trusted_by_stat(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings()
    for path in (tree / "src").rglob("*.py"):
        os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # long ago: the mtime vouches for it
    _run(tree, settings)
    reads: list[Path] = []
    original = cache_module.read_stamped
    monkeypatch.setattr(cache_module, "read_stamped", lambda p, m: reads.append(p) or original(p, m))
    _run(tree, settings)
    assert reads == [], "an old file with the same mtime and size needs no read"
    target = tree / "src" / "clean.py"
    target.write_text(CLEAN + "# edited\n")
    counter = Counter(monkeypatch)
    _run(tree, settings)
    assert counter.checked == ["src/clean.py"]


def test_settings_and_rules_are_part_of_the_key(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(tree, Settings())
    counter = Counter(monkeypatch)
    only = _run(tree, Settings(select=("NM201",)))
    assert len(counter.checked) == 8
    assert {f.code for f in _findings_objects(only)} <= {"NM201", "NM901"}
    base = config_key(Settings(), tree, "rules-a")
    assert config_key(Settings(), tree, "rules-b") != base
    assert config_key(Settings(target_version="2.13"), tree, "rules-a") != base
    assert config_key(Settings(ignore=("NM6",)), tree, "rules-a") != base
    assert config_key(Settings(fix=True), tree, "rules-a") == base  # fix runs share clean entries
    monkeypatch.setattr(cache_module, "rules_stamp", lambda sources: "changed-rules")
    counter.checked.clear()
    _run(tree, Settings())
    assert len(counter.checked) == 8, "new rules data must not reuse old results"


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "foreign"])
def test_damaged_index_is_ignored(tree: Path, damage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings()
    expected = _findings(_run(tree, settings))
    index = next((tree / CACHE_DIR_NAME).glob("*.idx"))
    data = index.read_bytes()
    import pickle

    index.write_bytes(
        {
            "garbage": b"\x80\x05not a pickle at all",
            "truncated": data[: len(data) // 2],
            "empty": b"",
            "foreign": pickle.dumps({"something": "else"}),
        }[damage]
    )
    counter = Counter(monkeypatch)
    assert _findings(_run(tree, settings)) == expected
    assert len(counter.checked) == 8
    counter.checked.clear()
    assert _findings(_run(tree, settings)) == expected
    assert counter.checked == [], "the rewritten index serves the next run"


def test_concurrent_saves_merge(tree: Path) -> None:
    settings = Settings()
    targets = _targets(tree, settings)
    first = open_cache(tree / CACHE_DIR_NAME, settings, tree)
    second = open_cache(tree / CACHE_DIR_NAME, settings, tree)
    assert second.entries == {}  # the index is read on first use: make that before `first` saves
    run_targets(targets[:3], settings, cache=first, write=False)
    run_targets(targets[3:], settings, cache=second, write=False)  # loaded before `first` saved
    merged = open_cache(tree / CACHE_DIR_NAME, settings, tree)
    assert sorted(merged.entries) == sorted(t.display for t in targets)
    assert not list((tree / CACHE_DIR_NAME).glob("*.tmp")), "no temporary file is left behind"


def test_deleted_files_leave_the_index(tree: Path) -> None:
    settings = Settings()
    _run(tree, settings)
    (tree / "src" / "clean.py").unlink()
    (tree / "src" / "broken.py").write_text(BROKEN + "\n")
    _run(tree, settings)
    entries = open_cache(tree / CACHE_DIR_NAME, settings, tree).entries
    assert "src/clean.py" not in entries and "src/broken.py" in entries


def test_fix_after_cached_check_still_writes(tree: Path) -> None:
    runner = CliRunner()
    target = tree / "src" / "pkg000" / "train_00000.py"
    before = target.read_text()
    assert runner.invoke(main, ["check", "src", "--exit-zero"]).exit_code == 0
    assert runner.invoke(main, ["check", "src", "--fix", "--exit-zero"]).exit_code == 0
    after = target.read_text()
    assert after != before and "xm.mark_step()" not in after
    uncached = runner.invoke(main, ["check", "src", "--no-cache", "--output-format", "json", "--exit-zero"])
    cached = runner.invoke(main, ["check", "src", "--output-format", "json", "--exit-zero"])
    assert json.loads(cached.output) == json.loads(uncached.output)


def test_no_cache_writes_nothing(tree: Path) -> None:
    result = CliRunner().invoke(main, ["check", "src", "--no-cache", "--exit-zero"])
    assert result.exit_code == 0
    assert not (tree / CACHE_DIR_NAME).exists()


def test_cache_dir_option(tree: Path) -> None:
    result = CliRunner().invoke(main, ["check", "src", "--cache-dir", "elsewhere", "--exit-zero"])
    assert result.exit_code == 0
    assert (tree / "elsewhere" / ".gitignore").exists()
    assert not (tree / CACHE_DIR_NAME).exists()


def index_name(label: str) -> str:
    """An index file name as the cache writes them: 24 hex digits."""
    import hashlib

    return hashlib.blake2b(label.encode(), digest_size=12).hexdigest() + ".idx"


def test_old_indices_of_other_configurations_are_pruned(tmp_path: Path) -> None:
    """Each configuration has an index; those not used lately go when a run saves."""
    cache = cache_module
    folder = tmp_path / "cache"
    folder.mkdir()
    cache._prepare(folder)  # the tag that marks the folder as ours
    now = 1_800_000_000.0
    recent = [index_name(f"recent{i:02}") for i in range(20)]
    for i, name in enumerate(recent):  # recent ones, one second apart
        (folder / name).write_bytes(cache._MAGIC + b"x")
        os.utime(folder / name, (now - i, now - i))
    stale = index_name("stale")
    (folder / stale).write_bytes(cache._MAGIC + b"x")
    os.utime(folder / stale, (now - 40 * 24 * 3600,) * 2)
    (folder / "notes.txt").write_bytes(b"not an index")
    keep = folder / index_name("current")
    keep.write_bytes(cache._MAGIC + b"x")
    os.utime(keep, (now - 50 * 24 * 3600,) * 2)  # this run's index stays however old
    deleted = cache.prune(folder, keep, now=now)
    left = {p.name for p in folder.iterdir()}
    assert keep.name in left and "notes.txt" in left and stale not in left
    assert [n for n in recent if n in left] == recent[: cache._KEEP_INDICES - 1]
    assert len(deleted) == 20 - (cache._KEEP_INDICES - 1) + 1


def test_a_saving_run_prunes_stale_indices(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    folder = tmp_path / ".neuron_migrate_cache"
    folder.mkdir()
    cache_module._prepare(folder)
    old = folder / index_name("old")
    old.write_bytes(cache_module._MAGIC + b"x")
    os.utime(old, (1.0, 1.0))
    settings = Settings()
    targets = discover([tmp_path], settings, tmp_path)
    run_targets(targets, settings, cache=open_cache(folder, settings, tmp_path), write=False)
    names = sorted(p.name for p in folder.glob("*.idx"))
    assert old.name not in names and len(names) == 1
