"""Counted nouns for messages and reports: "1 file", "2 files", "1 finding"."""

from __future__ import annotations


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """`number` and `noun`, in the plural unless `number` is 1 (`plural` for irregular nouns)."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
