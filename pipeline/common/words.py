"""Counts as people write them: "1 game", "2 games", "1,024 errors"."""

from __future__ import annotations


def quantity(count: int, noun: str, plural: str | None = None) -> str:
    """`count` with its noun, singular for exactly one, thousands separated."""
    return f"{count:,} {noun if count == 1 else (plural or noun + 's')}"
