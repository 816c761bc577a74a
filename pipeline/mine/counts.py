"""A mining job's counts, added up shard by shard as the driver collects them, and the versions
its manifest records."""

from __future__ import annotations

import platform
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from importlib import metadata
from typing import Any, Final

from pipeline.dataset.integrity import DamagedDatasetError


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

    def add(self, other: Counts) -> None:
        """Add another's counts (a shard's): numbers add, and counts by key add key by key."""
        self.games_read += other.games_read
        self.games_written += other.games_written
        self.games_filtered += other.games_filtered
        self.games_error += other.games_error
        self.games_latin1 += other.games_latin1
        self.positions += other.positions
        self.positions_analysed += other.positions_analysed
        self.positions_reused += other.positions_reused
        self.positions_error += other.positions_error
        self.traps += other.traps
        self.shards_committed += other.shards_committed
        self.shards_skipped += other.shards_skipped
        self.games_filtered_by = added_by_key(self.games_filtered_by, other.games_filtered_by)
        self.values_dropped = added_by_key(self.values_dropped, other.values_dropped)

    def shard_record(self) -> dict[str, Any]:
        """A shard's counts as its `_shard.json` records them (no shard counts of its own)."""
        return {name: value for name, value in asdict(self).items() if name not in JOB_ONLY}

    @classmethod
    def from_record(cls, record: Mapping[str, Any], shard: str = "a shard") -> Counts:
        """A committed shard's counts from its `_shard.json` (`--resume`): the fields it records (one
        it lacks, from an older file, counts 0). A value of the wrong type is a damaged record,
        refused in one line naming `shard` and the count, rather than a count taken as 0."""
        values: dict[str, Any] = {}
        for item in fields(cls):
            value = record.get(item.name)
            if item.name in JOB_ONLY or value is None:
                continue
            if item.default_factory is dict:  # the counts by key
                if not isinstance(value, dict) or not all(type(count) is int for count in value.values()):
                    raise DamagedDatasetError(
                        f"the record of {shard} is damaged: its count {item.name!r} is "
                        f"{value!r}, not whole numbers by key"
                    )
                values[item.name] = dict(sorted((str(key), count) for key, count in value.items()))
            elif type(value) is int:
                values[item.name] = value
            else:
                raise DamagedDatasetError(
                    f"the record of {shard} is damaged: its count {item.name!r} is {value!r}, not a whole number"
                )
        return cls(**values)


# Effort's counts (its other fields are seconds).
WHOLE_EFFORT = frozenset({"engine_calls", "evals_found", "evals_served"})


@dataclass
class Effort:
    """What a shard's analysis cost (the manifest's `analysis_seconds`, `engine_seconds` and
    `engine_calls`), recorded with the shard so that a resumed job's manifest counts the shards
    an earlier run committed too (it rewrote them as 0)."""

    analysis_seconds: float = 0.0
    engine_seconds: float = 0.0
    engine_calls: int = 0
    evals_found: int = 0
    """Positions analysed whose position the evaluation cache held (`mine --evals`)."""
    evals_served: int = 0
    """Of those, the positions whose root search a cached eval stood in for."""

    def add(self, other: Effort) -> None:
        self.analysis_seconds += other.analysis_seconds
        self.engine_seconds += other.engine_seconds
        self.engine_calls += other.engine_calls
        self.evals_found += other.evals_found
        self.evals_served += other.evals_served

    @classmethod
    def from_record(cls, record: Mapping[str, Any], shard: str = "a shard") -> Effort:
        """A committed shard's effort from its `_shard.json` (none recorded, from an older file: 0);
        a value that is not a number >= 0 is a damaged record, in one line."""
        values: dict[str, Any] = {}
        for item in fields(cls):
            value = record.get(item.name)
            if value is None:
                continue
            whole = item.name in WHOLE_EFFORT
            if type(value) not in ((int,) if whole else (int, float)) or not value >= 0:
                kind = "a whole number" if whole else "a number of seconds"
                raise DamagedDatasetError(
                    f"the record of {shard} is damaged: its {item.name!r} is {value!r}, not {kind}"
                )
            values[item.name] = value
        return cls(**values)


def count_problems(shard_info: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per committed shard whose record's counts `from_record` refuses (`diffimax
    verify`: a count a resumed job would refuse, found before it resumes)."""
    problems = []
    for shard_id, info in sorted(shard_info.items()):
        try:
            Counts.from_record(info.get("counts") or {}, f"shard {shard_id}")
            Effort.from_record(info.get("effort") or {}, f"shard {shard_id}")
        except DamagedDatasetError as error:
            problems.append(str(error))
    return problems


# The counts of the job alone: a shard's record has none.
JOB_ONLY: Final = frozenset({"shards_committed", "shards_skipped"})


def added_by_key(first: Mapping[str, int], second: Mapping[str, int]) -> dict[str, int]:
    """Two counts by key added, in key order."""
    total = dict(first)
    for key, count in second.items():
        total[key] = total.get(key, 0) + count
    return dict(sorted(total.items()))


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
