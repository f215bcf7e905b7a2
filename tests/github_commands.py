"""Parse GitHub Actions workflow commands back, as the runner does (used by several tests)."""

from __future__ import annotations

import re

COMMAND = re.compile(r"^::(?P<kind>error|warning|notice) (?P<props>[^:\r\n]*)::(?P<message>[^\r\n]*)$")


_ESCAPES = {"%25": "%", "%0D": "\r", "%0A": "\n", "%3A": ":", "%2C": ","}


def _unescape(text: str) -> str:
    return re.sub("%25|%0D|%0A|%3A|%2C", lambda m: _ESCAPES[m.group(0)], text)


def parse_commands(output: str) -> list[dict[str, str]]:
    """Parse workflow commands back the way the runner does; fails on anything else."""
    parsed = []
    for line in output.splitlines():
        match = COMMAND.match(line)
        assert match, f"not a workflow command: {line!r}"
        props = dict(part.split("=", 1) for part in match["props"].split(","))
        parsed.append(
            {
                "kind": match["kind"],
                "message": _unescape(match["message"]),
                **{key: _unescape(value) for key, value in props.items()},
            }
        )
    return parsed
