"""The top-level group: `neuron-migrate PATH` means `check PATH`, lazy subcommands, mistyped
commands, and Click's own errors in the project's one error style."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from neuron_migrate.cli.common import EXIT_CLEAN, fail

_LAZY_COMMANDS = {
    "smoke": ("neuron_migrate.smoke.command", "smoke_command"),
    "dev": ("neuron_migrate.cli.dev", "dev_command"),
}


class DefaultCheckGroup(click.Group):
    """`neuron-migrate --fix path/` means `neuron-migrate check --fix path/`, as in Ruff."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        known = (*self.commands, *_LAZY_COMMANDS)
        if not args or (args[0] not in known and args[0] not in ("--help", "-h", "--version")):
            _reject_mistyped_command(args[0] if args else "-", sorted(known))
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Click's own errors (a bad option, a missing value) in our one style:
        `neuron-migrate: error: ...` on stderr and exit code 2."""
        _names_never_stop_output()
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            # With standalone_mode=False, Click returns the code a command exits with
            # (`ctx.exit(1)`) instead of raising: it must reach the shell.
            code = super().main(args, prog_name or "neuron-migrate", complete_var, standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.Abort:
            fail("aborted")
        except click.ClickException as exc:
            command = (
                exc.ctx.command_path if isinstance(exc, click.UsageError) and exc.ctx is not None else "neuron-migrate"
            )
            fail(f"{_lower_first(exc.format_message().rstrip('.'))} (see `{command} --help`)")
        sys.exit(code if isinstance(code, int) else EXIT_CLEAN)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_LAZY_COMMANDS})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command's whole first sentence, wrapped, never cut with `...` (as Ruff lists them)."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=1_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in _LAZY_COMMANDS and name not in self.commands:
            import importlib

            module, attribute = _LAZY_COMMANDS[name]
            self.add_command(getattr(importlib.import_module(module), attribute), name)
        return super().get_command(ctx, name)


def _names_never_stop_output() -> None:
    """Text on stdout keeps the bytes of file names that are not UTF-8 (as `ls` prints them)
    instead of raising UnicodeEncodeError; stderr already escapes them."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and getattr(sys.stdout, "errors", "") == "strict":
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="surrogateescape")


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _reject_mistyped_command(word: str, commands: Sequence[str]) -> None:
    """`neuron-migrate chek` is a mistyped command, not a path to check: no such file exists
    and the word is close to a command name, or a bare word that names nothing."""
    if word.startswith("-") or os.path.exists(word):
        return
    import difflib

    close = difflib.get_close_matches(word, commands, n=1, cutoff=0.6)
    if close:
        fail(f"unknown command '{word}'; did you mean '{close[0]}'?")
    if word.isalpha() and word.islower():
        fail(f"unknown command '{word}', and no file or folder has that name; commands: {', '.join(commands)}")
