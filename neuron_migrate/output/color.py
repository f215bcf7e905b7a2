"""Colour for the text report: on a terminal, off with `NO_COLOR`, on with `FORCE_COLOR`.

`FORCE_COLOR` (any value but empty or `0`) wins, so a CI log viewer that renders ANSI can ask for
it; otherwise `NO_COLOR` (any non-empty value, no-color.org) turns colour off; otherwise colour
is on only when the report goes to a terminal that is not `TERM=dumb`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TextIO


def wanted(stream: TextIO, env: Mapping[str, str]) -> bool:
    """Whether the report written to `stream` gets ANSI colour."""
    forced = env.get("FORCE_COLOR", "")
    if forced and forced != "0":
        return True
    if env.get("NO_COLOR"):
        return False
    if env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(callable(isatty) and isatty())


def paint(text: str, on: bool, **style: object) -> str:
    """`text` styled with `click.style` when colour is on, else as it is."""
    if not on:
        return text
    import click

    return click.style(text, **style)  # type: ignore[arg-type]
