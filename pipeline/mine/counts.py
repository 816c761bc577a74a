"""A mining job's counts, added up shard by shard as the driver collects them, and the versions
its manifest records."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any


@dataclass
class Counts:
    """A job's counts, added up shard by shard (the manifest's)."""

    games_read: int = 0
    games_written: int = 0
    games_filtered: int = 0
    games_error: int = 0
    games_latin1: int = 0
    positions: int = 0
    positions_analysed: int = 0
    positions_reused: int = 0
    positions_error: int = 0
    traps: int = 0
    shards_committed: int = 0
    shards_skipped: int = 0
    games_filtered_by: dict[str, int] = field(default_factory=dict)
    values_dropped: dict[str, int] = field(default_factory=dict)

    def add(self, other: dict[str, Any]) -> None:
        """Add a shard's counts (a mapping's counts by key, as `games_filtered_by`)."""
        for name, value in other.items():
            if not hasattr(self, name):
                continue
            mine = getattr(self, name)
            if isinstance(mine, dict) and isinstance(value, dict):
                for key, count in value.items():
                    mine[key] = mine.get(key, 0) + count
                setattr(self, name, dict(sorted(mine.items())))
            elif isinstance(mine, int) and isinstance(value, int):
                setattr(self, name, mine + value)


def versions() -> dict[str, str]:
    """The versions of Python and of the packages the rows depend on (the manifest records them)."""
    versions = {"python": platform.python_version()}
    for package in ("diffimax", "chess", "ray", "pyarrow", "duckdb"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "unknown"
    return versions


__all__ = ["Counts", "versions"]
