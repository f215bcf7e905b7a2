"""Time `check` and `--fix` of two source trees side by side, on the benchmark's corpora.

    git worktree add --detach /tmp/nm-main main
    python3 tests/bench/compare.py --base /tmp/nm-main            # this tree against main's
    python3 tests/bench/compare.py --base /tmp/nm-main --modes cold,warm,startup

Each round runs every (tree, mode) once, interleaved, so a busy moment on a shared machine hits
both trees alike; the fastest of `--repeat` rounds counts. `--fix` works on a fresh copy of the
corpus each time. Modes: `check` and `fix` (`--no-cache`), `cold` (the cache emptied first) and
`warm` (nothing changed since the last run, which filled it; each tree has its own cache
folder), `warm-seed0` (warm with `PYTHONHASHSEED=0`, for trees whose cache key followed the hash
seed), `startup` (`--version`, and a `--no-cache` check of 5 small files; once, not per corpus)
and `python` (`python -c "import click"`, the floor under every run). Prints a Markdown table
with the ratios (this tree / base), and for `warm` the warm/cold ratio of each tree.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:] = [str(REPO), str(REPO / "tests")] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

from bench.bench import (  # noqa: E402 - needs the sys.path set above
    OPTIMUM_NEURON,
    TRANSFORMERS,
    download_package,
    generated_corpus,
    sampled,
)

MODES = {
    "check": ["--no-cache", "--jobs", "1"],
    "fix": ["--no-cache", "--jobs", "1", "--fix", "--unsafe-fixes"],
    "cold": ["--jobs", "1"],
    "warm": ["--jobs", "1"],
    "warm-seed0": ["--jobs", "1"],
}
CORPUS_FREE = ("startup", "python")  # measured once, not per corpus
STARTUP_FILE = (
    "import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
    "def step(model, batch):\n    loss = model(batch.to(xm.xla_device()))\n"
    "    loss.backward()\n    xm.mark_step()\n    return loss\n"
)


def _env(tree: Path, mode: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode compiled
    env.pop("PYTHONHASHSEED", None)
    if mode == "warm-seed0":
        env["PYTHONHASHSEED"] = "0"
    return env


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def run(tree: Path, mode: str, corpus: Path, work: Path, label: str = "tree") -> float:
    """Wall seconds of one run of `tree`'s neuron-migrate on `corpus` (a copy when fixing)."""
    target = corpus
    if mode == "fix":
        target = work / "fix-copy"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(corpus, target, ignore=shutil.ignore_patterns(".neuron_migrate_cache"))
    argv = [sys.executable, "-m", "neuron_migrate", "check", ".", "-q", "--exit-zero", *MODES[mode]]
    env = _env(tree, mode)
    if mode in ("cold", "warm", "warm-seed0"):
        cache = work / f"cache-{label}-{mode}-{corpus.name}"  # its own folder per tree and mode
        argv += ["--cache-dir", str(cache)]
        if mode == "cold":
            shutil.rmtree(cache, ignore_errors=True)
        elif not cache.exists():
            subprocess.run(argv, cwd=target, env=env, check=True, stdout=subprocess.DEVNULL)  # fill it, untimed
    return _timed(argv, target, env)


def startup_runs(tree: Path, work: Path) -> dict[str, float]:
    """`--version` and a `--no-cache` check of 5 small files (as tests/bench/bench.py times them)."""
    folder = work / "startup"
    if not folder.exists():
        folder.mkdir(parents=True)
        for i in range(5):
            (folder / f"script_{i}.py").write_text(STARTUP_FILE.replace("step(", f"step_{i}("))
    env = _env(tree, "startup")
    return {
        "--version": _timed([sys.executable, "-m", "neuron_migrate", "--version"], folder, env),
        "check of 5 small files": _timed(
            [sys.executable, "-m", "neuron_migrate", "check", ".", "-q", "--exit-zero", "--no-cache"], folder, env
        ),
    }


def python_floor(work: Path) -> float:
    return _timed([sys.executable, "-c", "import click"], work, _env(REPO, "python"))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the other tree (e.g. a worktree of main)")
    parser.add_argument("--files", type=int, default=300, help="files in generated corpus (a)")
    parser.add_argument("--b-files", type=int, default=200, help="corpus (b): this many transformers files")
    parser.add_argument("--corpora", default="a,b,c")
    parser.add_argument("--modes", default="check,fix", help=f"of {', '.join((*MODES, *CORPUS_FREE))}")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "neuron-migrate-bench")
    opts = parser.parse_args(argv)
    work = opts.work_dir
    work.mkdir(parents=True, exist_ok=True)
    makers = {
        "a": lambda: generated_corpus(work, opts.files),
        "b": lambda: sampled(download_package(TRANSFORMERS, work), work, opts.b_files),
        "c": lambda: download_package(OPTIMUM_NEURON, work),
    }
    trees = {"base": opts.base.resolve(), "this": REPO}
    modes = [m for m in opts.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES and m not in CORPUS_FREE]
    if unknown:
        parser.error(f"unknown modes: {', '.join(unknown)}")
    print("| corpus | mode | base s | this s | this / base |")
    print("|---|---|---|---|---|")
    if any(m in CORPUS_FREE for m in modes):
        _corpus_free(modes, trees, work, opts.repeat)
    per_corpus = [m for m in modes if m in MODES]
    for name in opts.corpora.split(",") if per_corpus else ():
        corpus = makers[name]()
        best: dict[tuple[str, str], float] = {}
        for _ in range(opts.repeat):
            for mode in per_corpus:
                for label, tree in trees.items():
                    seconds = run(tree, mode, corpus, work, label)
                    best[label, mode] = min(seconds, best.get((label, mode), seconds))
        for mode in per_corpus:
            base, this = best["base", mode], best["this", mode]
            print(f"| {name} | {mode} | {base:.3f} | {this:.3f} | {this / base:.2f} |", flush=True)
        for mode in ("warm", "warm-seed0"):
            if mode in per_corpus and "cold" in per_corpus:
                ratios = " | ".join(f"{best[label, mode] / best[label, 'cold'] * 100:.1f} %" for label in trees)
                print(f"| {name} | {mode} / cold | {ratios} | |", flush=True)


def _corpus_free(modes: list[str], trees: dict[str, Path], work: Path, repeat: int) -> None:
    best: dict[tuple[str, str], float] = {}
    for _ in range(max(repeat, 5)):  # short runs: more rounds
        if "python" in modes:
            seconds = python_floor(work)
            best["-", "python"] = min(seconds, best.get(("-", "python"), seconds))
        if "startup" in modes:
            for label, tree in trees.items():
                for what, seconds in startup_runs(tree, work).items():
                    best[label, what] = min(seconds, best.get((label, what), seconds))
    if ("-", "python") in best:
        print(
            f"| - | `python -c 'import click'` (the floor) | {best['-', 'python']:.3f} | {best['-', 'python']:.3f} | |"
        )
    for what in ("--version", "check of 5 small files"):
        if ("base", what) in best:
            base, this = best["base", what], best["this", what]
            print(f"| - | {what} | {base:.3f} | {this:.3f} | {this / base:.2f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
