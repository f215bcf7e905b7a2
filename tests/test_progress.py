"""The progress bar: shown on a terminal for many files, never in pipes or CI."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuron_migrate.cli import main
from neuron_migrate.run import progress


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "env", "total", "shown"),
    [
        (Terminal(), {}, 21, True),
        (Terminal(), {}, 20, False),  # few files: no bar
        (io.StringIO(), {}, 500, False),  # a pipe or a file
        (Terminal(), {"CI": "true"}, 500, False),
        (Terminal(), {"TERM": "dumb"}, 500, False),
        (object(), {}, 500, False),  # no isatty at all
    ],
)
def test_wanted_only_for_a_terminal_outside_ci(stream: object, env: dict[str, str], total: int, shown: bool) -> None:
    assert progress.wanted(stream, env, total) is shown  # type: ignore[arg-type]


def test_bar_shows_position_eta_and_elapsed_time_and_ends_its_line() -> None:
    ticks = iter(range(0, 1000, 2))  # 2 s per reading of the clock
    stream = Terminal()
    bar = progress.ProgressBar(stream, 4, width=4, clock=lambda: float(next(ticks)))
    for _ in range(4):
        bar.advance()
    bar.close()
    text = stream.getvalue()
    frames = [f for f in text.split("\r") if f.strip()]
    assert "Checking" in frames[-1] and "4/4" in frames[-1]
    assert "1/4  eta 0:00:12  0:00:04 elapsed" in frames[1]  # 4 s for one file: 12 s for three more
    assert re.search(r"\d:\d\d:\d\d elapsed", frames[-1])
    assert text.endswith("\n")  # the finished bar keeps its line; the report starts below it


@pytest.fixture
def many_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for index in range(25):
        (tmp_path / f"m{index:02}.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CI", raising=False)
    return tmp_path


def test_cli_shows_no_bar_when_stderr_is_not_a_terminal(many_files: Path) -> None:
    result = CliRunner().invoke(main, ["."])
    assert result.stderr == ""


def test_cli_shows_the_bar_on_a_terminal(many_files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("neuron_migrate.cli.common.stderr", lambda: Terminal())
    seen: list[Terminal] = []
    real_bar = progress.ProgressBar

    def recording(stream: Terminal, total: int) -> progress.ProgressBar:
        seen.append(stream)
        return real_bar(stream, total)

    monkeypatch.setattr(progress, "ProgressBar", recording)
    result = CliRunner().invoke(main, [".", "-j", "2"])
    assert result.exit_code == 1
    (stream,) = seen
    assert "25/25" in stream.getvalue() and "elapsed" in stream.getvalue()
    assert "files" not in result.stdout


def test_cli_shows_no_bar_in_ci_even_on_a_terminal(many_files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")
    monkeypatch.setattr("neuron_migrate.cli.common.stderr", lambda: Terminal())
    made: list[object] = []
    monkeypatch.setattr(progress, "ProgressBar", lambda *args: made.append(args))
    assert CliRunner().invoke(main, ["."]).exit_code == 1
    assert made == []
