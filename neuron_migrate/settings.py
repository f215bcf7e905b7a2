"""The frozen settings every layer below the CLI receives."""

from __future__ import annotations

from dataclasses import dataclass, field

# What code a rule migrates from (`--from`) and what code fixes write (`--target`); here, not in
# `catalogue`, so the command line can offer them without loading the rules.
FAMILIES = ("xla", "cuda")
TARGETS = ("neuron", "accelerator")
# The formats that show no fix's edits: a check with them never runs a structural fix's LibCST
# transform (`Settings.fix_edits`).
EDITLESS_FORMATS = ("text", "concise", "junit")

DEFAULT_EXCLUDES = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    "__pycache__",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    ".eggs",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".neuron_migrate_cache",
    ".ipynb_checkpoints",
)


@dataclass(frozen=True)
class RuleSources:
    """Where a project's own rules come from (paths absolute, resolved by config)."""

    extend_rules: tuple[str, ...] = ()  # folders of project rule TOML files (`extend-rules`)
    plugins: tuple[str, ...] = ()  # importable module names (`plugins`)
    plugin_root: str = ""  # folder put on sys.path to import the plugins: the config file's


@dataclass(frozen=True)
class Settings:
    """What to check and how to fix, after CLI flags and config files are merged."""

    select: tuple[str, ...] = ("NM",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    fix: bool = False
    unsafe_fixes: bool = False
    target_version: str = "2.14"
    families: tuple[str, ...] = ("xla",)  # `--from`: the rule families to run (catalogue.FAMILIES)
    target: str = "neuron"  # `--target`: write `neuron` code, or device-agnostic `accelerator` code
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True  # skip what `.gitignore` (and `.git/info/exclude`) ignore, in a walk
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (glob, codes); see config_values.anchor_glob
    add_noqa: bool = False  # write a noqa comment (`noqa: CODE`) for each finding instead of reporting it
    # Findings carry their structural fixes' edits (their transforms run): for the formats that
    # show edits (not EDITLESS_FORMATS, the default's), so a plain check never loads LibCST.
    fix_edits: bool = False
    max_file_bytes: int = 10 * 1024 * 1024
    max_fix_iterations: int = 10
    rule_sources: RuleSources = RuleSources()
    # The enabled rule codes: config.merge resolves them once and every layer below reads them.
    # None (Settings built by hand) means: resolve select / ignore / extend_select on first use.
    # A pure function of the selectors and rule sources, so it takes no part in equality.
    enabled: frozenset[str] | None = field(default=None, compare=False)

    def allows(self, applicability: str) -> bool:
        """Whether a fix of this applicability may be applied under these settings."""
        return self.fix and (applicability == "safe" or (applicability == "unsafe" and self.unsafe_fixes))
