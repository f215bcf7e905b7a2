"""A fix whose result does not compile is dropped alone; the file's other fixes still apply."""

from __future__ import annotations

import pytest

from neuron_migrate.analysis.source import fit_quotes
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings

SOURCE = 'import torch\nimport torch_xla.core.xla_model as xm\n\nprint(f"dev {xm.xla_device()}")\ndevice = xm.xla_device()\nxm.mark_step()\n'


def test_a_breaking_fix_is_dropped_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FixContext, "enclosing_quotes", lambda self, node: ())  # the quote clash of old
    result = check_source(SOURCE, "train.py", Settings(select=("NM",), fix=True))
    assert result.fixed_source == (
        'import torch\nimport torch_xla.core.xla_model as xm\n\nprint(f"dev {xm.xla_device()}")\ndevice = torch.device("neuron")\n'
    )
    remaining = {(f.code, f.start.line, f.fix is not None) for f in result.findings}
    assert ("NM101", 4, False) in remaining  # reported as unfixable: no `[*]`
    assert ("NM906", 4, False) in remaining
    assert {f.code for f in result.fixed} == {"NM101", "NM201"}


def test_the_quote_clash_is_avoided() -> None:
    result = check_source(SOURCE, "train.py", Settings(select=("NM",), fix=True))
    assert result.fixed_source is not None
    assert "print(f\"dev {torch.device('neuron')}\")" in result.fixed_source
    assert not [f for f in result.findings if f.code == "NM906"]


@pytest.mark.parametrize(
    ("code", "quotes", "expected"),
    [
        ('torch.device("neuron")', ('"',), "torch.device('neuron')"),
        ("torch.device('neuron')", ('"',), "torch.device('neuron')"),
        ('torch.device("neuron")', ("'",), 'torch.device("neuron")'),
        ('torch.device("neuron")', ('"', "'"), None),
        ('f("it\'s")', ('"',), None),
        ('f("a\\n")', ('"',), None),
    ],
)
def test_fit_quotes(code: str, quotes: tuple[str, ...], expected: str | None) -> None:
    assert fit_quotes(code, quotes) == expected


PAIR = (
    "import torch_xla.core.xla_model as xm\n\n\ndef step(ready):\n"
    "    if ready():\n        xm.mark_step()\n        xm.mark_step()\n    return xm.xla_device()\n"
)


def test_two_fixes_that_break_the_file_only_together_drop_one_and_keep_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the empty-block repair, deleting both statements leaves `if ready():` empty: each
    deletion compiles alone, not both. The second is dropped, the rest applies, NM906 says so."""
    from neuron_migrate.engine import apply

    monkeypatch.setattr(
        apply, "repair_empty_blocks", lambda analysis, accepted, planned: [e for p in planned for e in p]
    )
    result = check_source(PAIR, "train.py", Settings(select=("NM",), fix=True))
    assert result.fixed_source is not None, "the whole file was rolled back"
    assert 'return torch.device("neuron")' in result.fixed_source
    assert result.fixed_source.count("xm.mark_step()") == 1
    codes = [(f.code, f.fix is not None) for f in result.findings]
    assert ("NM906", False) in codes
    assert ("NM201", False) in codes  # the dropped one: no `[*]`
    assert not [f for f in result.findings if f.fix is not None]


def test_a_file_rolled_back_whole_shows_no_fixable_marks(monkeypatch: pytest.MonkeyPatch) -> None:
    from neuron_migrate.engine import fix_loop

    monkeypatch.setattr(fix_loop, "verify", lambda text, path: "NameError: the fixes broke it")
    result = check_source(SOURCE, "train.py", Settings(select=("NM",), fix=True))
    assert result.fixed_source is None
    assert any(f.code == "NM906" for f in result.findings)
    assert not [f for f in result.findings if f.fix is not None]


# Errors that `ast.parse` lets through and only the compiler's own passes find.
COMPILER_ERRORS = [
    "return 1\n",
    "await f()\n",
    "nonlocal x\n",
    "break\n",
    "continue\n",
    "yield 1\n",
    "def f(a, a):\n    pass\n",
    "def f():\n    x = 1\n    global x\n",
    "def f():\n    from os import *\n",
    "a, *b, *c = d\n",
    "def f():\n    nonlocal y\n",
    "async def g():\n    yield from x\n",
    "def h():\n    [x async for x in y]\n",
    "from __future__ import nope\n",
    "import os\nfrom __future__ import annotations\n",
    "x: int = 1\ndef f():\n    global x\n    x: int\n",
    "try:\n    pass\nexcept:\n    pass\nexcept ValueError:\n    pass\n",
]


@pytest.mark.parametrize("tail", COMPILER_ERRORS)
def test_a_file_that_parses_but_does_not_compile_is_nm901_where_compile_puts_it(tail: str) -> None:
    """The check compiles the parsed tree, not the text: the NM901 says what compiling the text says."""
    text = "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n" + tail
    with pytest.raises(SyntaxError) as raised:
        compile(text, "t.py", "exec", dont_inherit=True)
    for fix in (False, True):
        result = check_source(text, "t.py", Settings(fix=fix))
        (error,) = result.findings
        assert (error.code, error.message) == ("NM901", f"Fix the syntax error before migrating: {raised.value.msg}")
        assert (error.start.line, error.start.column) == (raised.value.lineno, raised.value.offset)
        assert result.fixed_source is None
