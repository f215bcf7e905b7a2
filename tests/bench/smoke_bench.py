"""Benchmark `neuron-migrate smoke --device emulate` against the same script on the plain CPU.

Run from the repository root (not collected by pytest, not run in CI):

    python3 tests/bench/smoke_bench.py                         # about 2-4 minutes on 2 cores
    python3 tests/bench/smoke_bench.py --baseline /tmp/nm-base # also time another checkout

For each benchmark script (`smoke_cnn.py`, `smoke_transformer.py` in this folder: a small CNN
and a small transformer, a few dozen training steps each) it times, interleaved, best of
`--repeat`:

- `plain`: the script with its device strings replaced by "cpu" (tokenize-based, in a temp
  folder), run with plain `python`;
- `plain_exit`: the same, ending in `os._exit(0)` as a smoke child does: no interpreter
  teardown, which costs the plain CNN about a second of CPU time on this machine;
- `emulation`: the script on the emulated `neuron` device with nothing of smoke around it (no
  hooks, no op recorder, no anomaly metadata): the cost of the tensor subclass alone;
- `child`: one smoke child process (`python -m neuron_migrate.smoke.child.bootstrap`), i.e.
  emulation + hooks + op recorder + report, without the parent CLI;
- `smoke`: `neuron-migrate smoke --device emulate --steps 100000 SCRIPT`, the whole command.

`--steps` is high so that smoke never stops the script early: every variant runs the same
training steps. Wall time and CPU time (user + system, children included) are each the least
of the repeats; peak RSS is that of the largest process of the fastest run (`os.wait4`). A
smoke child ends with `os._exit` (no interpreter teardown); `plain` and `emulation` do not,
`plain_exit` does, and the targets are shown against both.
Every run gets one intra-op thread (`--threads 1`, the default): on a machine shared with
other work, a second OpenMP thread spins waiting for a busy core, and the figures then measure
the other work; `--threads 0` keeps torch's default. It prints a Markdown table with the ratios
to `plain` and the issue's targets, and writes JSON (`--json`).
`tests/bench/bench.py` runs the same measurement as its smoke section.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sys
import tempfile
import tokenize
from dataclasses import asdict, dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# `tests/` (not this folder, where `bench` would be bench.py) makes `bench.timing` importable.
sys.path[:] = [str(REPO / "tests")] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

from bench.timing import run_measured  # noqa: E402 - after sys.path is set above

SCRIPTS = {"cnn": HERE / "smoke_cnn.py", "transformer": HERE / "smoke_transformer.py"}
MODES = ("plain", "plain_exit", "emulation", "child", "smoke")
# A smoke child ends with `os._exit`; this ending gives the plain run the same (no teardown).
_EXIT_NOW = "\nimport os as _os, sys as _sys\n_sys.stdout.flush()\n_os._exit(0)\n"
TIME_TARGET = 1.5  # smoke / plain wall time
RSS_TARGET = 1.2  # smoke / plain peak RSS
SMOKE_STEPS = "100000"

# The emulated device alone: what `bootstrap.setup_device` installs, then the script.
_EMULATION_ONLY = """\
import runpy, sys
from neuron_migrate.smoke.child import emulate
keep = emulate.install(emulate.EmulationConfig())
script = sys.argv[1]
sys.argv = [script]
sys.path.insert(0, __import__("os").path.dirname(script))
runpy.run_path(script, run_name="__main__")
"""

# `neuron-migrate smoke ...`; a checkout whose group does not resolve `smoke` gets the command itself.
_SMOKE_CLI = """\
import sys
from neuron_migrate.cli import main
if main.get_command(None, "smoke") is not None:
    main(["smoke", *sys.argv[1:]], prog_name="neuron-migrate")
from neuron_migrate.smoke.command import smoke_command
smoke_command(sys.argv[1:], prog_name="neuron-migrate smoke")
"""


@dataclass
class Run:
    """One variant's repeats: the fastest wall time (and the peak RSS of that run), the least
    CPU time (user + system, children included)."""

    label: str
    wall_s: float | None = None
    cpu_s: float | None = None
    peak_rss_mb: float | None = None
    exit_code: int | None = None
    note: str = ""


def cpu_variant(source: str) -> str:
    """`source` with every string literal "neuron" / "neuron:N" replaced by "cpu"."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    out = []
    for tok in tokens:
        if tok.type == tokenize.STRING and tok.string[0] in "'\"":
            value = tok.string[1:-1]
            if value == "neuron" or value.startswith("neuron:"):
                tok = tok._replace(string=tok.string[0] + "cpu" + tok.string[0])
        out.append(tok)
    return tokenize.untokenize(out)


def _env(pythonpath: Path, threads: int) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(pythonpath)
    if threads:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    return env


def once(label: str, argv: list[str], env: dict[str, str], timeout: float, cwd: Path = REPO) -> Run:
    """Run `argv` in `cwd` once; wall time, CPU time and peak RSS of its largest process (wait4).

    `cwd` is the checkout measured: `python -m` (the smoke children) imports from it first.
    """
    done = run_measured(argv, cwd, env, timeout)
    if done.wall_s is None:
        return Run(label, note=f"stopped after {timeout:.0f} s")
    run = Run(label, done.wall_s, done.cpu_s, done.peak_rss_mb, done.exit_code)
    if done.exit_code != 0:
        run.note = done.error_line or f"exit {done.exit_code}"
    return run


def commands(name: str, work: Path, python: str) -> dict[str, list[str]]:
    """The argv of each variant of benchmark script `name` (files written into `work`)."""
    script = SCRIPTS[name]
    plain = work / f"plain_{name}.py"
    plain.write_text(cpu_variant(script.read_text()))
    plain_exit = work / f"plain_exit_{name}.py"
    plain_exit.write_text(cpu_variant(script.read_text()) + _EXIT_NOW)
    driver = work / "emulation_only.py"
    driver.write_text(_EMULATION_ONLY)
    cli = work / "smoke_cli.py"
    cli.write_text(_SMOKE_CLI)
    report_dir = work / f"child_{name}"
    report_dir.mkdir(exist_ok=True)
    config = {
        "script": str(script), "args": [], "device": "emulate", "steps": int(SMOKE_STEPS),
        "timeout_s": 600.0, "report_dir": str(report_dir),
    }  # fmt: skip
    config_path = work / f"child_{name}.json"
    config_path.write_text(json.dumps(config))
    return {
        "plain": [python, str(plain)],
        "plain_exit": [python, str(plain_exit)],
        "emulation": [python, str(driver), str(script)],
        "child": [python, "-m", "neuron_migrate.smoke.child.bootstrap", str(config_path)],
        "smoke": [python, str(cli), "--device", "emulate", "--steps", SMOKE_STEPS, str(script)],
    }


def bench(
    names: list[str], repeat: int, threads: int, baseline: Path | None, timeout: float
) -> dict[str, dict[str, Run]]:
    """Best of `repeat` for every (script, variant), the variants interleaved in each round."""
    checkouts = {"": REPO, **({"base ": baseline} if baseline else {})}
    results: dict[str, dict[str, Run]] = {name: {} for name in names}
    with tempfile.TemporaryDirectory(prefix="smoke-bench-") as tmp:
        plan = []
        for name in names:
            work = Path(tmp, name)
            work.mkdir()
            for prefix, root in checkouts.items():
                argvs = commands(name, work, sys.executable)
                env = _env(root, threads)
                if "TORCH_DEVICE_BACKEND_AUTOLOAD" not in env:
                    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
                for mode in MODES:
                    if prefix and mode.startswith("plain"):
                        continue
                    child_env = {**env, "RANK": "0"} if mode == "child" else env
                    plan.append((name, prefix + mode, argvs[mode], child_env, root))
        for round_ in range(repeat):
            for name, label, argv, env, root in plan:
                print(f"[smoke-bench] round {round_ + 1}/{repeat}: {name} {label}", file=sys.stderr, flush=True)
                run = once(label, argv, env, timeout, root)
                results[name][label] = best_of(results[name].get(label), run)
    return results


def best_of(best: Run | None, run: Run) -> Run:
    """The fastest wall time and, separately, the least CPU time of the runs so far.

    On a loaded machine the two minima come from different runs: wall time counts the time a
    run waited for a core, CPU time does not. A failed run is kept: it is shown, never hidden.
    """
    if best is None or run.wall_s is None or run.exit_code != 0:
        return run
    if best.wall_s is None or best.exit_code != 0:
        return best
    fastest = run if run.wall_s < best.wall_s else best
    return replace(fastest, cpu_s=min(best.cpu_s or 0.0, run.cpu_s or 0.0))


def ratio(a: Run | None, b: Run | None, field: str) -> float | None:
    x, y = (getattr(r, field) if r else None for r in (a, b))
    return x / y if x and y else None


def targets(results: dict[str, dict[str, Run]]) -> list[tuple[str, str, bool | None]]:
    """The issue's smoke targets: (what, measured, met?)."""
    out: list[tuple[str, str, bool | None]] = []
    for name, runs in results.items():
        plain, smoke = runs.get("plain"), runs.get("smoke")
        failed = any(r.exit_code != 0 for r in (plain, smoke) if r)
        t, m = ratio(smoke, plain, "wall_s"), ratio(smoke, plain, "peak_rss_mb")
        cpu = f"{_fmt(t, 2)}x (CPU time {_fmt(ratio(smoke, plain, 'cpu_s'), 2)}x)"
        out.append(
            (f"smoke {name}: wall <= {TIME_TARGET}x plain CPU", cpu, None if t is None or failed else t <= TIME_TARGET)
        )
        strict = ratio(smoke, runs.get("plain_exit"), "wall_s")
        strict_cpu = f"{_fmt(strict, 2)}x (CPU time {_fmt(ratio(smoke, runs.get('plain_exit'), 'cpu_s'), 2)}x)"
        out.append(
            (
                f"smoke {name}: wall <= {TIME_TARGET}x plain CPU ending in `os._exit`",
                strict_cpu,
                None if strict is None or failed else strict <= TIME_TARGET,
            )
        )
        out.append(
            (
                f"smoke {name}: peak RSS <= {RSS_TARGET}x plain CPU",
                _fmt(m, 2) + "x",
                None if m is None or failed else m <= RSS_TARGET,
            )
        )
    return out


def _fmt(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def table(results: dict[str, dict[str, Run]]) -> str:
    """One row per (script, variant): wall, CPU and peak RSS, each with its ratio to `plain`."""
    lines = [
        "| script | run | wall s | x plain | CPU s | x plain | peak RSS MB | x plain | exit |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, runs in results.items():
        plain = runs.get("plain")
        for label, run in runs.items():
            exit_text = str(run.exit_code) + (f" ({run.note})" if run.note else "")
            lines.append(
                f"| {name} | {label} | {_fmt(run.wall_s, 2)} | {_fmt(ratio(run, plain, 'wall_s'), 2)} | {_fmt(run.cpu_s, 2)} "
                f"| {_fmt(ratio(run, plain, 'cpu_s'), 2)} | {_fmt(run.peak_rss_mb, 0)} | {_fmt(ratio(run, plain, 'peak_rss_mb'), 2)} | {exit_text} |"
            )
    return "\n".join(lines)


def markdown(results: dict[str, dict[str, Run]]) -> str:
    lines = [table(results), "", "| target | measured | met |", "|---|---:|---|"]
    for what, measured, met in targets(results):
        lines.append(f"| {what} | {measured} | {({True: 'yes', False: '**MISS**', None: 'not measured'})[met]} |")
    return "\n".join(lines)


def as_json(results: dict[str, dict[str, Run]], argv: list[str]) -> dict[str, object]:
    return {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average_end": os.getloadavg(),
        },
        "command": "python3 tests/bench/smoke_bench.py " + " ".join(argv),
        "scripts": {name: {label: asdict(run) for label, run in runs.items()} for name, runs in results.items()},
        "ratios": {
            name: {
                label: {
                    field: ratio(run, runs.get("plain"), key)
                    for field, key in (("wall", "wall_s"), ("cpu", "cpu_s"), ("rss", "peak_rss_mb"))
                }
                for label, run in runs.items()
            }
            for name, runs in results.items()
        },
        "targets": [{"target": t, "measured": m, "met": ok} for t, m, ok in targets(results)],
    }


def add_arguments(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    parser.add_argument(
        f"--{prefix}scripts", default="cnn,transformer", help="which benchmark scripts: cnn, transformer"
    )
    parser.add_argument(
        f"--{prefix}threads", type=int, default=1,
        help="intra-op threads (OMP/MKL) for every run; 0 keeps torch's default (one per core)",
    )  # fmt: skip
    parser.add_argument(
        f"--{prefix}baseline",
        type=Path,
        default=None,
        help="also time the smoke variants of this checkout (before/after in one run)",
    )
    parser.add_argument(f"--{prefix}timeout", type=float, default=600.0, help="seconds before a run is stopped")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per variant; the fastest counts")
    parser.add_argument("--json", type=Path, default=None, help="where to write the results as JSON")
    add_arguments(parser)
    opts = parser.parse_args(argv)
    baseline = opts.baseline.resolve() if opts.baseline else None
    results = bench(opts.scripts.split(","), opts.repeat, opts.threads, baseline, opts.timeout)
    data = as_json(results, argv)
    if opts.json:
        opts.json.write_text(json.dumps(data, indent=2) + "\n")
    print(markdown(results))


if __name__ == "__main__":
    main(sys.argv[1:])
