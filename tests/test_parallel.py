"""The process pool and `--shard`: the same findings, in the same order, however the work is split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench.corpus import write_corpus
from click.testing import CliRunner

from neuron_migrate.cli import main
from neuron_migrate.model import FileResult
from neuron_migrate.run import cache_codec as codec
from neuron_migrate.run import parallel
from neuron_migrate.run.discover import Target, discover
from neuron_migrate.run.parallel import run_targets
from neuron_migrate.run.shard import ShardError, parse_shard, select_shard, shard_of
from neuron_migrate.settings import Settings

pytestmark = pytest.mark.slow  # starts worker pools


@pytest.fixture
def targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Target]:
    write_corpus(tmp_path / "src", files=10, per_folder=4)
    (tmp_path / "src" / "clean.py").write_text("print('hello')\n")
    monkeypatch.chdir(tmp_path)
    return discover([tmp_path / "src"], Settings(), tmp_path)


def _findings(results: list[FileResult]) -> list[tuple[object, ...]]:
    return [(r.path, f.code, f.start, f.message, f.fix) for r in results for f in r.findings]


def test_two_jobs_give_the_same_results_in_order(targets: list[Target], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "_MIN_FILES_PER_JOB", 1)  # use the pool even for a few files
    used: list[int] = []
    monkeypatch.setattr(parallel, "_unpack", lambda packed: used.append(1) or codec.loads(packed))
    one = run_targets(targets, Settings(), jobs=1, write=False)
    two = run_targets(targets, Settings(), jobs=2, write=False)
    assert [r.path for r in two] == [t.display for t in targets]
    assert _findings(two) == _findings(one)
    assert len(_findings(one)) > 100
    assert len(used) == len(targets), "every result came back from a pool worker"


@pytest.mark.parametrize("count", [0, 1])
def test_pool_with_no_or_one_file(targets: list[Target], count: int) -> None:
    results = run_targets(targets[:count], Settings(), jobs=2, write=False)
    assert [r.path for r in results] == [t.display for t in targets[:count]]


def test_cli_empty_folder_with_two_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["check", "empty", "--jobs", "2"])
    assert result.exit_code == 0, result.output
    assert "All checks passed!" in result.output


def test_shards_are_disjoint_and_cover_everything(targets: list[Target]) -> None:
    unsharded = _findings(run_targets(targets, Settings(), write=False))
    for count in (1, 2, 3, 7):
        shards = [select_shard(targets, k, count) for k in range(1, count + 1)]
        displays = [t.display for shard in shards for t in shard]
        assert sorted(displays) == sorted(t.display for t in targets)
        assert len(set(displays)) == len(displays)
        merged = [f for shard in shards for f in _findings(run_targets(shard, Settings(), write=False))]
        assert sorted(merged, key=repr) == sorted(unsharded, key=repr)


def test_shard_of_is_stable_across_runs() -> None:
    # crc32, not Python's per-process salted hash(): these values never change.
    assert [shard_of(p, 4) for p in ("a.py", "src/train.py", "pkg/models/llama.py")] == [3, 4, 4]


@pytest.mark.parametrize("value", ["0/2", "3/2", "1/0", "x/2", "2", "1/2/3", ""])
def test_bad_shard_values(value: str) -> None:
    with pytest.raises(ShardError):
        parse_shard(value)


def test_cli_shards_merge_to_the_unsharded_json(targets: list[Target]) -> None:
    runner = CliRunner()
    args = ["check", "src", "--output-format", "json", "--exit-zero", "--no-cache"]
    whole = json.loads(runner.invoke(main, args).output)
    parts = [json.loads(runner.invoke(main, [*args, "--shard", f"{k}/3"]).output) for k in (1, 2, 3)]
    merged = [item for part in parts for item in part]  # what `jq -s add` does

    def key(f: dict) -> tuple:
        return (f["filename"], f["location"]["row"], f["location"]["column"], f["code"])

    assert sorted(merged, key=key) == whole
    assert all(part for part in parts), "10 files over 3 shards leave no shard empty"


def test_cli_rejects_a_bad_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", ".", "--shard", "3/2"])
    assert result.exit_code == 2
    assert "1 <= K <= N" in result.output


def test_chunks_balance_bytes_and_cover_every_file(tmp_path: Path) -> None:
    paths = []
    for i, size in enumerate([50_000, 10, 20, 30_000, 5, 5, 5, 5, 40, 60, 70, 80]):
        path = tmp_path / f"f{i}.py"
        path.write_bytes(b"x" * size)
        paths.append(path)
    chunks = parallel._chunks(paths + [tmp_path / "missing.py"], jobs=2)
    flat = [i for chunk in chunks for i in chunk]
    assert sorted(flat) == list(range(len(paths) + 1))
    assert chunks[0] == [0] and chunks[1] == [3], "the largest files go first, each alone"
    assert len(chunks) >= 2
