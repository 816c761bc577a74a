"""The harness's evidence file: what `gather` found at each sample (`Record`), saved as JSON and
read back, so that judge variants are measured again without more engine work
(`diffimax evaluate --save` and `--load`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pipeline.common.files import write_atomic
from pipeline.harness.samples import HarnessError
from search.judges import NodeEvidence, ReplyEvidence

# Format of a saved evidence file.
EVIDENCE_FORMAT: Final = "diffimax-judge-evidence-1"


@dataclass
class Record:
    """The evidence gathered at one sample: what every judge variant is measured on."""

    source: str
    game_id: str
    ply: int
    fen: str
    played: str
    name: str
    evidence: NodeEvidence
    shallow_by_depth: dict[int, dict[str, int]]  # shallow ranks at each measured depth
    nodes: dict[str, int]
    outcomes: dict[str, float] = field(default_factory=dict)
    """The setter's human-expected score after each reply a variant may name (Maia-3's value head
    at the two players' ratings: win + draw / 2); empty with a model that has no value head."""
    rating: int | None = None
    """The responder's rating (None: unknown), for the calibration by band."""
    clock_seconds: float | None = None
    """The responder's clock when deciding (None: the game carries no clock)."""


def save_records(records: Sequence[Record], path: str | Path, about: dict[str, Any]) -> Path:
    target = Path(path)
    data = {"format": EVIDENCE_FORMAT, "about": about, "records": [dataclasses.asdict(r) for r in records]}
    return write_atomic(target, json.dumps(data, sort_keys=True, default=sorted))  # frozensets as sorted lists


def load_records(path: str | Path) -> tuple[list[Record], dict[str, Any]]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise HarnessError(f"cannot read evidence file {str(path)!r}: {error}") from None
    if not isinstance(data, dict) or data.get("format") != EVIDENCE_FORMAT:
        raise HarnessError(f"{str(path)!r} is not a {EVIDENCE_FORMAT} evidence file")
    return [_record(item) for item in data["records"]], data.get("about", {})


def _record(item: dict[str, Any]) -> Record:
    evidence = item["evidence"]
    replies = tuple(ReplyEvidence(**reply) for reply in evidence["replies"])
    dip = evidence.get("dip_candidates")
    node = NodeEvidence(
        replies,
        evidence["best"],
        evidence["best_value"],
        evidence.get("corpus_games"),
        None if dip is None else frozenset(dip),
        evidence.get("probe_best_value"),
        evidence.get("pool"),
    )
    by_depth = {int(depth): ranks for depth, ranks in item["shallow_by_depth"].items()}
    return Record(
        item["source"],
        item["game_id"],
        item["ply"],
        item["fen"],
        item["played"],
        item["name"],
        node,
        by_depth,
        item["nodes"],
        item.get("outcomes", {}),
        item.get("rating"),
        item.get("clock_seconds"),
    )
