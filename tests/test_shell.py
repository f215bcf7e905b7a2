"""Splitting shell scripts into commands, settings and launched programs."""

from __future__ import annotations

from neuron_migrate.engine.formats import shell


def _settings(text: str) -> list[str]:
    return [s.name for command in shell.commands(text) for s in shell.settings(command)]


def test_settings_in_every_position() -> None:
    text = (
        "export A=1 B\nC=2 D=3 python x.py\nenv -u X E=4 cmd\ndeclare -x F=5\nreadonly G\nlocal H=1; I=2 && J=3 cmd\n"
    )
    assert _settings(text) == ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"]


def test_quotes_comments_heredocs_and_reads_are_not_settings() -> None:
    text = (
        "# export A=1\necho \"export B=1\" 'C=1'\ncat <<EOF\nexport D=1\nEOF\n"
        "cat <<-'END'\n\texport E=1\n\tEND\necho ${F:-x} $G\nunset H\nprintf '%s' I=1\n"
    )
    assert _settings(text) == []


def test_positions_point_at_the_name() -> None:
    text = "set -e\n  export  PJRT_DEVICE=NEURON\n"
    (setting,) = [s for c in shell.commands(text) for s in shell.settings(c)]
    assert text[setting.start : setting.end] == "PJRT_DEVICE"


def test_line_continuation_keeps_one_command() -> None:
    text = "XLA_FLAGS=1 \\\n  python \\\n  -m torch_xla.distributed.xla_dist \\\n  train.py\n"
    (command,) = list(shell.commands(text))
    head, module = shell.program(command)
    assert head.value == "python" and module is not None and module.value == "torch_xla.distributed.xla_dist"


def test_program_skips_wrappers_and_stops_at_the_script() -> None:
    def program(text: str) -> tuple[str, str | None]:
        head, module = shell.program(next(shell.commands(text)))
        return head.value, module.value if module else None

    assert program("nohup env A=1 /usr/bin/python3.12 -u -m pkg.mod arg") == ("/usr/bin/python3.12", "pkg.mod")
    assert program("python3 -mpkg.mod") == ("python3", "pkg.mod")
    assert program("python train.py -m pkg") == ("python", None)
    assert program("neuron_parallel_compile torchrun x.py") == ("neuron_parallel_compile", None)
