"""One number per question, through the installed `neuron-migrate` on the fixture corpus and the
e2e programs, and on a real torch_xla package (optimum-neuron's pinned wheel, from the package
index as the bench takes it): `check`'s total and fixable counts, `--statistics`, JSON's findings with a fix,
the report's relation to `check`, and what `--fix` fixes, file by file, agree; the `[~]` ones
(known only once the fixes they wait on are made) are the only room between them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

SCRIPT = Path(sys.executable).with_name("neuron-migrate")
_LINE = re.compile(r"^(?P<path>[^\s].*?):(?:cell \d+:)?\d+:\d+: (?P<code>NM\d+) ")


def _run(*args: str, cwd: Path) -> str:
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    sources = [*FIXTURES.glob("NM*/*.py"), *FIXTURES.glob("_multi/*.py"), *(ROOT / "tests/e2e/programs").glob("*.py")]
    for path in sources:
        if not path.name.endswith(".fixed.py"):
            target = root / path.parent.name / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return root


REAL_PACKAGE = "optimum-neuron==0.0.28"  # 108 files, 63 of them import torch_xla (tests/bench's corpus c)


def _real_package(tmp_path: Path) -> Path:
    """The pinned wheel's Python files, downloaded with pip from the package index."""
    downloads = tmp_path / "downloads"
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", REAL_PACKAGE]
    subprocess.run([*command, "-d", str(downloads), "-q"], check=True, timeout=300)
    root = tmp_path / "corpus"
    with zipfile.ZipFile(next(downloads.glob("*.whl"))) as wheel:
        wheel.extractall(root, [m for m in wheel.namelist() if m.endswith(".py")])
    return root


def _summary(text: str, pattern: str) -> int:
    found = re.search(pattern, text, re.MULTILINE)
    return int(found.group(1)) if found else 0


@pytest.mark.slow
@pytest.mark.parametrize("corpus", [_corpus, _real_package], ids=["fixtures", "optimum-neuron"])
def test_every_count_of_the_same_question_agrees(tmp_path: Path, corpus: Callable[[Path], Path]) -> None:
    root = corpus(tmp_path)
    base = ["check", ".", "--no-cache", "--exit-zero"]
    rows = json.loads(_run(*base, "--output-format", "json", cwd=root))
    safe = [r for r in rows if r["fix"] is not None and r["fix"]["applicability"] == "safe"]
    sure = Counter(r["filename"] for r in safe if r["fix"].get("certain", True))
    maybe = Counter(r["filename"] for r in safe if not r["fix"].get("certain", True))
    total = Counter(r["filename"] for r in rows)

    text = _run(*base, cwd=root)
    assert _summary(text, r"^Found (\d+) findings?\.") == len(rows)
    assert _summary(text, r"^\[\*\] (\d+) fixable with the `--fix` option\.") == sum(sure.values())
    assert _summary(text, r"^\[~\] (\d+) more may be fixable") == sum(maybe.values())

    statistics = json.loads(_run(*base, "--statistics", "--output-format", "json", cwd=root))
    assert sum(r["count"] for r in statistics) == len(rows)
    assert sum(r["fixable_count"] for r in statistics) == sum(sure.values())

    report = json.loads(_run("report", ".", "--no-cache", "--format", "json", cwd=root))["check"]
    assert (report["found"], report["fixable"]) == (len(rows), sum(sure.values()))

    fixed = _run(*base, "--fix", "--show-fixes", cwd=root)
    left = Counter(m["path"] for line in fixed.splitlines() if (m := _LINE.match(line)))
    done: Counter[str] = Counter()
    for block in re.split(r"^- ", fixed, flags=re.MULTILINE)[1:]:  # `- path:` then `    n × CODE (name)` lines
        path, _, per_rule = block.partition(":\n")
        done[path] = sum(int(n) for n in re.findall(r"^    (\d+) × ", per_rule, re.MULTILINE))
    assert [p for p in total if not sure[p] <= done[p] <= sure[p] + maybe[p]] == []
    summary = re.search(
        r"^Found (\d+) findings \((\d+) fixed, (?:(\d+) gone [^,]*, )?(\d+) remaining\)\.", fixed, re.MULTILINE
    )
    assert summary is not None
    found, made, gone, remaining = (int(n or 0) for n in summary.groups())
    assert found == len(rows) and made == sum(done.values()) and found == made + gone + remaining
    assert remaining == sum(left.values()) == report["left_after_fix"]
    assert sum(sure.values()) <= made <= sum(sure.values()) + sum(maybe.values())
