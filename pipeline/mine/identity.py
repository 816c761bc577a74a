"""A mining job's identity: everything a committed row depends on, the inputs and their content
(each local file's size and SHA-256, a URL's length, ETag and Last-Modified), the filters, the
DiffiMax settings, the engine and its limits, the shard sizes (shard ids are numbered within
their source, so other sizes cut other shards), the human evidence's digests and the schema
version. The driver writes it to `OUT/job.json` before anything else and `--resume` refuses to
continue under another one (`check_resume`); the number of workers and the cluster are not part
of it (rows never depend on them).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pipeline.common.files import feed_file
from pipeline.common.storage import describe_pin, is_object_url, object_pin, parse_url
from pipeline.dataset.store import DatasetReader
from pipeline.engines.backends import effective_engine_options
from pipeline.evals.cache import EvalCache
from pipeline.human.corpus import Corpus
from pipeline.human.models import resolve_model
from pipeline.ingest.pins import changed_input
from pipeline.judging import HumanEvidence
from pipeline.mine.config import MineConfig
from schemas.dataset import SCHEMA_VERSION
from search.errors import DiffimaxError
from search.values import win_percent_points


class ResumeError(DiffimaxError, ValueError):
    """`--resume` with other settings than the run it would continue."""


# The identity's fields, each with the flag a user changes it by (for ResumeError's one line).
FLAGS: dict[str, str] = {
    "schema_version": "the dataset schema version",
    "inputs": "the inputs",
    "input_pins": "the inputs' content",
    "max_games": "--max-games",
    "depth": "--depth",
    "scope": "the job file's search.scope",
    "reasonable_dip": "--reasonable-dip",
    "trap_dip": "--trap-dip",
    "exclude_checks": "the job file's search.exclude-checks",
    "exclude_captures": "the job file's search.exclude-captures",
    "safety_margin": "--safety-margin",
    "engine": "--engine",
    "engine_name": "the engine's version",
    "threads": "the job file's engine-options.threads",
    "hash_mb": "the job file's engine-options.hash",
    "nodes": "--nodes",
    "engine_depth": "the job file's engine-options.depth",
    "movetime": "the job file's engine-options.movetime",
    "shallow_depth": "the job file's engine-options.shallow-depth",
    "min_elo": "--min-elo",
    "max_elo": "--max-elo",
    "time_controls": "--time-control",
    "rated_only": "--rated-only",
    "standard_only": "the variant filter",
    "ply_from": "--plies",
    "ply_to": "--plies",
    "sample_rate": "--game-rate",
    "seed": "--seed",
    "setter_choices": "--setter-choices",
    "judges": "--judges",
    "trappy_k": "the job file's thresholds.trappy-k",
    "model_p": "the job file's thresholds.model-p",
    "corpus_share": "the job file's thresholds.corpus-share",
    "corpus_min_games": "the job file's thresholds.corpus-min-games",
    "rating_band": "the corpus rating band",
    "practical_p": "the job file's thresholds.practical-p",
    "practical_drop": "the job file's thresholds.practical-drop",
    "practical_shallow_k": "the job file's thresholds.practical-shallow-k",
    "practical_shallow_p": "the job file's thresholds.practical-shallow-p",
    "stability_margin": "the stability margin",
    "refine_margin": "the probe's refine margin",
    "refine_margin_cp": "the probe's refine margin in centipawns",
    "fall_mass": "the fall probability's searched mass",
    "fall_min_p": "the fall probability's smallest searched reply",
    "practical_rule": "the job file's thresholds.practical-rule",
    "practical_fall_p": "the job file's thresholds.practical-fall-p",
    "practical_fall_reply_p": "the practical judge's fall candidates' smallest probability",
    "fall_calibration": "the fall probability's calibration",
    "recall_p": "the deeper recall's smallest probability",
    "recall_margin": "the deeper recall's margin",
    "majority_p": "the deeper check of a majority candidate",
    "human_model": "--human-model",
    "human_corpus": "--human-corpus",
    "evals": "--evals",
    "shard_bytes": "--shard-mb",
    "shard_games": "--shard-games",
    "max_game_bytes": "--max-game-mb",
    "pool": "--pool",
}


# Settings a flag gives on another scale than the identity's: shown as the flag takes them.
SHOWN: dict[str, Any] = {
    "practical_drop": lambda drop: "?" if drop is None else f"{win_percent_points(drop):g} points of Win%"
}


# Identity fields added since datasets were first written: a job that started without one is
# resumed without comparing it.
RECORDED_SINCE = frozenset({"input_pins", "max_game_bytes", "evals"})


def job_identity(
    config: MineConfig,
    sources: list[str],
    engine_name: str,
    human: dict[str, str | None] | None = None,
    pins: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Everything the rows depend on; `sources` are the expanded inputs, `engine_name` the engine's
    own name and version ("native", "Stockfish 15.1"), `human` the digests of the model and corpus
    files (`human_model`, `human_corpus`), `pins` each input's content (`pipeline.ingest.pins`)."""
    f = config.game_filter
    engine = effective_engine_options(config.engine, config.engine_options)
    identity: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "inputs": list(sources),
        "input_pins": list(pins or []),
        "max_games": config.max_games,
        **config.settings.describe(),
        "engine": engine.pop("path"),
        "engine_name": engine_name,
        **engine,
        "min_elo": f.min_elo,
        "max_elo": f.max_elo,
        "time_controls": None if f.time_controls is None else sorted(f.time_controls),
        "rated_only": f.rated_only,
        "standard_only": f.standard_only,
        "ply_from": f.ply_from,
        "ply_to": f.ply_to,
        "sample_rate": f.sample_rate,
        "seed": f.seed,
        "setter_choices": config.setter_choices,
        "shard_bytes": config.shard_bytes,
        "shard_games": config.shard_games,
        "max_game_bytes": config.max_game_bytes,
        "pool": config.pool,
        **config.judges.describe(),
        "human_model": (human or {}).get("human_model"),
        "human_corpus": (human or {}).get("human_corpus"),
        "evals": None if config.evals is None else evals_digest(config.evals),
    }
    assert set(identity) <= set(FLAGS), f"identity fields without a flag: {set(identity) - set(FLAGS)}"
    return identity


def check_resume(out: str, started_with: dict[str, Any] | None, now: dict[str, Any]) -> None:
    """Refuse to resume a job under another identity, with one line naming what differs."""
    if started_with is None:
        raise ResumeError(f"cannot --resume {out!r}: it has no job identity (job.json); start a new --out")
    for name in FLAGS:
        if name in RECORDED_SINCE and name not in started_with:  # a job started before they were recorded
            continue
        if name == "input_pins":
            changed = changed_input(now.get("inputs", []), started_with[name], now.get(name, []))
            if changed is not None:
                raise ResumeError(
                    f"cannot --resume {out!r}: input {changed}; its committed rows came from the old content: "
                    "mine the new input into a new --out"
                )
            continue
        if name in started_with or name in now:
            was, given = started_with.get(name), now.get(name)
            if was != given:
                shown = SHOWN.get(name, repr)
                raise ResumeError(
                    f"cannot --resume {out!r}: {FLAGS[name]} differs ({name} was {shown(was)}, now {shown(given)}); "
                    "resume with the settings the run started with, or start a new --out"
                )


def human_evidence_digests(human: HumanEvidence) -> dict[str, str | None]:
    """Load the model and the corpus once on the driver, so that a bad file is one line before
    anything starts; their digests go into the job's identity."""
    choice = resolve_model(human.model)
    if choice is not None:
        choice.load().close()
    if human.corpus is not None:
        Corpus.load(human.corpus)
    return {
        "human_model": None if choice is None else choice.identity(),
        "human_corpus": None if human.corpus is None else file_digest(human.corpus),
    }


def evals_digest(source: str) -> str:
    """The evaluation cache of `--evals`, checked (one line if it is none) and named by its content:
    a local file's SHA-256, an object's ETag (its bytes are not read again)."""
    EvalCache(source)
    if is_object_url(source):
        return describe_pin(object_pin(parse_url(source)))
    return file_digest(source)


def file_digest(path: str) -> str:
    """SHA-256 of a file, or of a dataset directory's committed shard files (names and bytes); of
    a dataset on object storage, of its shards' recorded SHA-256s (its bytes are not read again)."""
    digest = hashlib.sha256()
    if is_object_url(path):
        for shard_id, info in sorted(DatasetReader(path).shard_info().items()):
            recorded = (info.get("files") or {}).get("positions.parquet") or {}
            digest.update(f"{shard_id}/positions.parquet {recorded.get('sha256')}".encode())
        return digest.hexdigest()
    target = Path(path)
    files = sorted(target.glob("shards/*/positions.parquet")) if target.is_dir() else [target]
    for file in files:
        digest.update(str(file.relative_to(target) if target.is_dir() else file.name).encode())
        feed_file(digest, file)
    return digest.hexdigest()
