"""Entry point of one smoke child process: `python -m neuron_migrate.smoke.child.bootstrap CONFIG`.

Sets up the device (real `torch_neuronx` or the emulation), seeds, installs the stop hooks and
the op recorder, runs the user's script with `runpy`, and writes this rank's JSON report.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import time
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuron_migrate.smoke.protocol import ChildConfig, rank_report_name
from neuron_migrate.smoke.sites import UserFiles, traceback_sites

_HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass
class DeviceSession:
    """The device this child runs on, and what to read back from it at the end."""

    name: str  # "neuron" or "emulated"
    keep: list[object] = field(default_factory=list)
    neuronx: types.ModuleType | None = None
    notes: list[str] = field(default_factory=list)

    def measured(self) -> dict[str, list[str]] | None:
        if self.neuronx is None:
            return None
        return {
            "fallback_ops": sorted({str(op) for op in self.neuronx.get_fallback_ops()}),
            "executed_ops": sorted({str(op) for op in self.neuronx.get_executed_ops()}),
        }


def setup_device(config: ChildConfig) -> DeviceSession:
    """Use the real `neuron` device (clearing op tracking) or register the emulated one."""
    if config.device == "neuron":
        import torch
        import torch_neuronx  # type: ignore[import-not-found]  # only on a Neuron host; ships no types

        if torch.neuron.device_count() < 1:  # type: ignore[attr-defined]  # registered by torch_neuronx at run time
            raise RuntimeError("torch_neuronx imports but reports no `neuron` device")
        torch_neuronx.clear_op_tracking()
        return DeviceSession("neuron", neuronx=torch_neuronx)
    from neuron_migrate.smoke.child import device_module, emulate

    keep = emulate.install(emulate.EmulationConfig(config.device_count, autocast=not config.reference))
    sys.modules["torch_neuronx"] = device_module.build_torch_neuronx_stub()
    session = DeviceSession("emulated", keep)
    _make_compile_eager(session)
    return session


def _make_compile_eager(session: DeviceSession) -> None:
    import torch

    def compile(model: Any = None, **kwargs: Any) -> Any:
        note = "`torch.compile` ran eagerly: the emulation cannot compile for `neuron`"
        if note not in session.notes:
            session.notes.append(note)
        return (lambda fn: fn) if model is None else model

    torch.compile = compile
    torch.nn.Module.compile = lambda self, *a, **k: compile(self)  # type: ignore[method-assign]  # patched on purpose


def run(config: ChildConfig, rank: int) -> dict[str, Any]:
    """Run the user's script once and describe what happened as JSON data."""
    from neuron_migrate.smoke import xla_imports
    from neuron_migrate.smoke.child import hooks, recorder

    started = time.monotonic()
    files = UserFiles.for_script(config.script, config.user_roots)
    session = setup_device(config)
    rec = recorder.EmulatedOpRecorder(files) if session.name == "emulated" else recorder.OpRecorder(files)
    state = hooks.RunState(
        config.steps, files, quiet=rec.suspended, triggered_by=rec.triggered_by, value_name=config.parity_value
    )
    # Ranks get different seeds, as separate processes do: replicas that agree at the end agree
    # because the ranks exchanged data, not because each drew the same numbers. `--parity` seeds
    # every rank alike, as the 1-rank run it is compared with.
    hooks.seed_everything(config.seed + (0 if config.same_seed else rank))
    hooks.install(state)
    recorder.enable_forward_tracebacks(rec.finder)
    if session.name != "emulated":
        recorder.warm_up()  # the emulated recorder's dispatch does not import torch._dynamo
    probes = xla_imports.XlaImportRecorder(files).install()
    status, failure = _run_script(config, rec, files)
    checksums = _safe_checksums(state, session) if status == "ok" else None
    _add_device_notes(session)
    return {
        "rank": rank,
        "status": status,
        "device": session.name,
        "reference": config.reference,
        "steps": state.steps,
        "forwards": state.forwards,
        "backwards": state.backwards,
        "stop_reason": state.stop_reason,
        "wall_time_s": round(time.monotonic() - started, 3),
        **recorder.to_json(rec),
        "losses": [{"value": v, "site": s.to_json() if s else None} for v, s in state.losses],
        "output": hooks.output_values(state),
        "named": {"values": state.named, "problem": state.named_problem} if config.parity_value else None,
        "checksums": checksums,
        "step_site": state.step_site.to_json() if state.step_site else None,
        "measured": _safe_measured(session),
        "failure": failure,
        "xla_imports": xla_imports.to_json(probes),
        "notes": session.notes,
    }


def _add_device_notes(session: DeviceSession) -> None:
    if session.name != "emulated":
        return
    from neuron_migrate.smoke.child import device_module

    note = device_module.remapped_note()
    if note:
        session.notes.append(note)


def _run_script(config: ChildConfig, rec: Any, files: UserFiles) -> tuple[str, dict[str, Any] | None]:
    from neuron_migrate.smoke.child import hooks

    sys.argv = [config.script, *config.args]
    sys.path.insert(0, os.path.dirname(config.script))
    try:
        with hooks.time_limit(config.timeout_s), rec:
            runpy.run_path(config.script, run_name="__main__")
    except hooks.StopRun:
        return "ok", None
    except hooks.RunTimeout as exc:
        return "timeout", describe_failure(exc, files)
    except SystemExit as exc:
        if exc.code in (None, 0):
            return "ok", None
        return "failed", describe_failure(exc, files)
    except BaseException as exc:  # noqa: BLE001 - the user's error, whatever it is
        return "failed", describe_failure(exc, files)
    return "ok", None


def _safe_checksums(state: Any, session: DeviceSession) -> list[dict[str, Any]] | None:
    from neuron_migrate.smoke.child import replicas

    try:
        return replicas.parameter_checksums(state)
    except Exception as exc:  # noqa: BLE001 - a checksum failure must not hide the result
        session.notes.append(f"could not checksum the trained parameters: {exc}")
        return None


def _safe_measured(session: DeviceSession) -> dict[str, list[str]] | None:
    try:
        return session.measured()
    except Exception as exc:  # noqa: BLE001 - broken op tracking must not hide the result
        session.notes.append(f"could not read op tracking from torch_neuronx: {exc}")
        return None


def describe_failure(exc: BaseException, files: UserFiles) -> dict[str, Any]:
    """The exception, its traceback without smoke/runpy frames, and the last user line."""
    sites = traceback_sites(exc.__traceback__, files)
    message = str(exc).strip()
    if isinstance(exc, SystemExit):
        message = f"the script exited with status {exc.code}"
    return {
        "type": type(exc).__name__,
        "message": message,
        "traceback": _format_traceback(exc, files, user_only=type(exc).__name__ == "RunTimeout"),
        "site": sites[-1].to_json() if sites else None,
    }


def _format_traceback(exc: BaseException, files: UserFiles, user_only: bool) -> str:
    """The traceback without smoke/runpy frames; only user frames for a timeout (it can strike
    anywhere, so library frames say nothing)."""
    te = traceback.TracebackException.from_exception(exc)
    _prune(te, files, user_only, set())
    return "".join(te.format())


def _prune(te: traceback.TracebackException, files: UserFiles, user_only: bool, seen: set[int]) -> None:
    seen.add(id(te))
    kept = [f for f in te.stack if not _is_internal(f.filename) and (files.contains(f.filename) or not user_only)]
    te.stack = traceback.StackSummary.from_list(kept)
    for nested in (te.__cause__, te.__context__):
        if nested is not None and id(nested) not in seen:
            _prune(nested, files, user_only, seen)


def _is_internal(filename: str) -> bool:
    return filename.startswith((_HERE, "<frozen runpy")) or os.path.basename(filename) == "runpy.py"


def write_report(config: ChildConfig, rank: int, data: dict[str, Any]) -> None:
    """Write this rank's report atomically into the report folder."""
    target = Path(config.report_dir) / rank_report_name(rank)
    partial = target.with_suffix(".partial")
    partial.write_text(json.dumps(data, sort_keys=True))
    partial.replace(target)


def main(argv: list[str]) -> None:
    """Run, report, and exit without waiting for threads the script left behind."""
    config = ChildConfig.from_json(Path(argv[1]).read_text())
    rank = int(os.environ.get("RANK", "0"))
    try:
        data = run(config, rank)
    except BaseException as exc:  # noqa: BLE001 - the smoke setup itself failed
        failure = describe_failure(exc, UserFiles(()))
        failure["traceback"] = traceback.format_exc()
        data = {"rank": rank, "status": "error", "failure": failure}
    write_report(config, rank, data)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if data["status"] == "ok" else 1)


if __name__ == "__main__":
    main(sys.argv)
