"""When the project's own Python code (its `plugins`) may run: only when the user trusts it.

A config file comes with the code being checked, so a plain `check` of a cloned repository must
not import modules that repository names (as `git` does not run a repository's hooks, and as
Fixit and pre-commit run project code only when asked). Plugins load when:

- the command line says `--allow-plugins` (`check`, `report`, `rules`, `explain`), or
- the environment has `NEURON_MIGRATE_ALLOW_PLUGINS=1`, or
- the run is the project's own pre-commit hook (its entries in `.pre-commit-hooks.yaml` pass
  `--allow-plugins`: the project chose to run it).

Otherwise a config that names plugins is a one-line error (exit 2) that says how to trust it:
silently checking without the project's rules would report a clean run that is not one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

ENV = "NEURON_MIGRATE_ALLOW_PLUGINS"
_allowed = False


def allow() -> None:
    """`--allow-plugins`: this process trusts the project's plugins."""
    global _allowed
    _allowed = True


def plugins_allowed() -> bool:
    return _allowed or os.environ.get(ENV) == "1"


def refusal(plugins: Sequence[str]) -> str | None:
    """Why the plugins may not load (a clause for a config error), or None when they may."""
    if not plugins or plugins_allowed():
        return None
    names = ", ".join(plugins)
    return (
        f"`plugins` names project code ({names}), which runs only when you trust this config: "
        f"pass --allow-plugins or set {ENV}=1"
    )
