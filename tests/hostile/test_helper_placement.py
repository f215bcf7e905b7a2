"""Issue 40 item 1: a helper `--fix` writes into a file (`_optimizer_step`, `_DeviceLoader`, ...)
is defined before the first statement that can call it at import time, module-level calls
included, and a helper name never captures or is captured by a local name.

Before: the definition went after the file's last import, even below a module-level call
(`xm.optimizer_step(opt)` / `import json`): NameError, with "0 remaining" and exit 0; and a
local `_optimizer_step = None` in the calling function made the fixed call call `None`.

The property test runs generated programs after `--fix` with every import and every name the
original program leaves unbound replaced by a permissive stand-in, so the only NameError
possible is a name that is not bound yet where it runs; none may be a name the fix added.
"""

from __future__ import annotations

import ast
import builtins
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostile_helpers import cli, out

from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings

pytestmark = pytest.mark.slow  # subprocesses of the installed script, and generated programs

CALL_BEFORE_IMPORT = """import torch_xla.core.xla_model as xm
import torch

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.ones(1, 2)).sum().backward()
xm.optimizer_step(opt)
import json

print(json.dumps(float(model.weight.sum())))
"""

INDIRECT = """import torch_xla.core.xla_model as xm
import torch
import torch_xla.distributed.parallel_loader as pl

batches = lambda: pl.MpDeviceLoader([torch.ones(2), torch.ones(2)], torch.device("cpu"))
total = sum(float(b.sum()) for b in batches())
import json

print(json.dumps(total))
"""

SHADOWED = """import torch_xla.core.xla_model as xm
import torch


def train(opt):
    _optimizer_step = None
    xm.optimizer_step(opt)
    return _optimizer_step


model = torch.nn.Linear(2, 2)
train(torch.optim.SGD(model.parameters(), lr=0.1))
"""


def run(path: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(path.parent)}
    return subprocess.run([sys.executable, path.name], cwd=path.parent, env=env, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


@pytest.mark.parametrize(
    ("source", "printed"), [(CALL_BEFORE_IMPORT, None), (INDIRECT, "4.0")], ids=["call", "indirect"]
)
def test_a_helper_is_defined_before_module_level_code_calls_it(
    tmp_path: Path, source: str, printed: str | None
) -> None:
    (tmp_path / "train.py").write_text(source)
    done = cli(["check", "--no-cache", "--fix", "train.py"], tmp_path)
    assert done.returncode == 0 and "0 remaining" in out(done), out(done)
    fixed = (tmp_path / "train.py").read_text()
    assert "import torch_xla" not in fixed
    ran = run(tmp_path / "train.py")
    assert ran.returncode == 0, ran.stderr + fixed
    if printed is not None:
        assert ran.stdout.strip() == printed


def test_a_local_name_never_captures_the_helper_call(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SHADOWED)
    done = cli(["check", "--no-cache", "--fix", "train.py"], tmp_path)
    text = out(done)
    assert done.returncode == 1 and "train.py:7:5: NM204 Replace `xm.optimizer_step(opt)`" in text, text
    assert "[*]" not in text  # no fix offered: a human renames the local or writes the step
    assert (tmp_path / "train.py").read_text() == SHADOWED


# -- generated programs ------------------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402 - after the importorskip above
from hypothesis import strategies as st  # noqa: E402 - after the importorskip above
from test_hostile_fuzz import FALLBACK, XLA_STATEMENTS, _indent  # noqa: E402 - the fuzz test's pieces

EXAMPLES = int(os.environ.get("NEURON_MIGRATE_FUZZ_EXAMPLES", "150"))
IMPORTS = ["import json", "import torch", "import os", "import torch.distributed as dist", "import math"]
HELPER_USES = [
    "xm.optimizer_step(opt)",
    "loader = pl.MpDeviceLoader(loader, device)",
    "xm.save(state, 'ckpt.pt')",
    "xm.all_gather(t)",
    "xm.mesh_reduce('loss', t, sum)",
]
SHADOWS = ["_optimizer_step = None", "_DeviceLoader = None", "_to_cpu = None", "_move_to_device = 0"]


@st.composite
def programs(draw: st.DrawFn) -> str:
    """Statements in any order: imports after code, helper uses at module level or in functions
    called at module level (before or after later imports), locals named like the helpers."""
    lines = ["import torch_xla.core.xla_model as xm\n", "import torch_xla.distributed.parallel_loader as pl\n"]
    for index in range(draw(st.integers(2, 8))):
        kind = draw(st.sampled_from(["import", "xla", "use", "function", "shadowed", "plain"]))
        if kind == "import":
            lines.append(draw(st.sampled_from(IMPORTS)) + "\n")
        elif kind == "xla":
            statement = draw(st.sampled_from(XLA_STATEMENTS))
            lines.append(statement + "\n" if not statement.startswith("try") else "")
        elif kind == "use":
            lines.append(draw(st.sampled_from(HELPER_USES)) + "\n")
        elif kind in ("function", "shadowed"):
            body = draw(st.sampled_from(HELPER_USES))
            if kind == "shadowed":
                body = draw(st.sampled_from(SHADOWS)) + "\n" + body
            lines.append(f"def fn_{index}():\n{_indent(body)}\n")
            if draw(st.booleans()):
                lines.append(f"fn_{index}()\n")  # called at import time, maybe before a later import
        else:
            lines.append(draw(st.sampled_from(FALLBACK)) + "\n")
    return "".join(lines)


class Stub:
    """Anything: every attribute, call, item and operation gives a Stub; false, empty, zero."""

    def __getattr__(self, name: str) -> Stub:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Stub()

    def __call__(self, *args: object, **kwargs: object) -> Stub:
        return Stub()

    def __getitem__(self, key: object) -> Stub:
        return Stub()

    def __setitem__(self, key: object, value: object) -> None: ...
    def __setattr__(self, name: str, value: object) -> None: ...
    def __bool__(self) -> bool:
        return False

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __index__(self) -> int:
        return 0

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *args: object) -> None: ...

    def _same(self, *args: object) -> Stub:
        return Stub()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _same
    __neg__ = __floordiv__ = __mod__ = __pow__ = __matmul__ = _same

    def __lt__(self, other: object) -> bool:
        return False

    __gt__ = __le__ = __ge__ = __lt__


def _bound_or_read(code: str) -> tuple[set[str], set[str]]:
    """The names `code` binds anywhere, and the names it reads."""
    bound, read = set(), set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound, read


def _name_error(code: str, stubs: set[str]) -> str | None:
    """Run `code` with every import a Stub and `stubs` bound to Stubs; the name of the NameError
    it raises, if any (other errors end the run quietly)."""
    safe = dict(vars(builtins))
    safe["__import__"] = lambda *args, **kwargs: Stub()
    safe["open"] = lambda *args, **kwargs: Stub()
    namespace: dict[str, object] = {"__builtins__": safe, "__name__": "fuzz", "__file__": "fuzz.py"}
    namespace.update({name: Stub() for name in stubs})
    try:
        exec(compile(code, "fuzz.py", "exec", dont_inherit=True), namespace)  # generated from the fixed pieces above
    except NameError as exc:
        return exc.name
    except Exception:  # noqa: BLE001 - a stand-in cannot do everything; only names are judged here
        return None
    return None


@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None
)
@given(programs())
def test_no_fixed_program_raises_name_error_on_a_name_the_fix_added(code: str) -> None:
    try:
        compile(code, "fuzz.py", "exec", dont_inherit=True)
    except SyntaxError:
        return  # the mix made it invalid (`global` after a use): nothing to fix
    bound, read = _bound_or_read(code)
    unbound = read - bound - set(vars(builtins))
    for fixes in (Settings(fix=True), Settings(fix=True, unsafe_fixes=True)):
        fixed = check_source(code, "fuzz.py", fixes).fixed_source
        if fixed is None:
            continue
        added = _bound_or_read(fixed)[0] - bound
        missing = _name_error(fixed, unbound)
        assert missing not in added, f"NameError: {missing!r} (added by the fix)\n{fixed}"
