"""A fix whose result does not compile is dropped alone; the file's other fixes still apply."""

from __future__ import annotations

import pytest

from neuron_migrate.checks.fixes import FixContext, fit_quotes
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
