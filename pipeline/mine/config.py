"""What a mining job is: its settings (`MineConfig`) and its identity (`job_identity`).

The identity is everything a committed row depends on: the inputs and their content (each
local file's size and SHA-256, a URL's length, ETag and Last-Modified), the filters, the DiffiMax
settings, the engine and its limits, the shard sizes (shard ids are numbered within their
source, so other sizes cut other shards) and the schema version. The driver writes it to
`OUT/job.json` before anything else and `--resume` refuses to continue under another one; the
number of workers and the cluster are not part of it (rows never depend on them).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.common.files import MIB
from pipeline.common.storage import is_object_url
from pipeline.dataset.store import DatasetReader
from pipeline.engines.backends import EngineOptions, effective_engine_options
from pipeline.human.context import Pool
from pipeline.human.corpus import Corpus
from pipeline.human.models import resolve_model
from pipeline.ingest.headers import GameFilter
from pipeline.ingest.pins import changed_input
from pipeline.ingest.sources import MAX_GAME_BYTES
from pipeline.ingest.streams import URL_TIMEOUT
from pipeline.judging import HumanEvidence
from pipeline.mine.table import DEFAULT_TABLE_MB
from pipeline.mine.work import Judging, primary_judge
from schemas.dataset import SCHEMA_VERSION, settings_out_of_range
from search.errors import DiffimaxError
from search.judges import JudgeSettings
from search.settings import DiffiMaxSettings, SettingsError, is_whole


class ResumeError(DiffimaxError, ValueError):
    """`--resume` with other settings than the run it would continue."""


@dataclass(frozen=True)
class MineConfig:
    inputs: tuple[str, ...]
    """PGN files (.pgn, .pgn.zst, .pgn.gz, .pgn.bz2), directories, globs or http(s) URLs."""
    out: str
    """Output directory of the Parquet dataset."""
    settings: DiffiMaxSettings = field(default_factory=DiffiMaxSettings)
    judges: JudgeSettings = field(default_factory=JudgeSettings)
    """The trap judges computed at mining time, and their thresholds."""
    human: HumanEvidence = field(default_factory=HumanEvidence)
    """The human-move model and the corpus the human judges read."""
    engine: str = "native"
    """native, stockfish, or a UCI engine's path."""
    engine_options: EngineOptions = field(default_factory=EngineOptions)
    game_filter: GameFilter = field(default_factory=GameFilter)
    max_games: int | None = None
    """Stop after this many games read (in input order)."""
    workers: int | None = None
    """Analysis actors; default: the cluster's CPUs."""
    address: str | None = None
    """An existing Ray cluster; default: start a local one."""
    resume: bool = False
    setter_choices: bool = False
    """Also analyse each position with the side to move as setter: which of its moves would set a
    trap (doubles the engine work; needs depth >= 2)."""
    shard_bytes: int = 16 * MIB
    """Bytes per shard of an uncompressed local file."""
    shard_games: int = 500
    """Games per shard of a compressed file or a URL."""
    pool: Pool | None = None
    """The rating pool of every game's ratings (`--pool`); None: each game's Site / Link tag says."""
    table_mb: float = DEFAULT_TABLE_MB
    """Each worker's table of engine answers, in MiB (`--table-mb`); 0 keeps none (no reuse)."""
    max_game_bytes: int = MAX_GAME_BYTES
    """The largest game an input may hold (`--max-game-mb`): a larger one is an error row, and
    reading goes on at the next game start."""
    url_timeout: float = URL_TIMEOUT
    """Seconds a URL may send nothing before its connection is resumed with a Range request
    (`--url-timeout`); not part of the identity (rows never depend on it)."""

    def __post_init__(self) -> None:
        if not self.inputs:
            raise SettingsError("no input given: name PGN files, directories, globs or URLs")
        for name, value in (("--max-games", self.max_games), ("--workers", self.workers)):
            if value is not None and not is_whole(value, 1):
                raise SettingsError(f"invalid {name} {value!r}: must be a whole number >= 1")
        beyond = settings_out_of_range(self.settings.describe())
        if beyond is not None:  # what the dataset cannot hold is refused before any work, not after it
            setting, given, largest = beyond
            raise SettingsError(
                f"invalid --{setting} {given!r}: the dataset stores it in a column that holds at most {largest:,}"
            )
        if self.setter_choices and self.settings.depth < 2:
            raise SettingsError(f"--setter-choices needs --depth 2 or more, not {self.settings.depth}")
        if not is_whole(self.shard_games, 1):
            raise SettingsError(f"invalid --shard-games {self.shard_games!r}: must be a whole number >= 1")
        if not is_whole(self.max_game_bytes, 1):
            raise SettingsError(f"invalid game size cap {self.max_game_bytes!r} bytes: --max-game-mb must be above 0")
        if not (isinstance(self.url_timeout, (int, float)) and not isinstance(self.url_timeout, bool)
                and 0 < self.url_timeout < 1e9):  # fmt: skip
            raise SettingsError(f"invalid --url-timeout {self.url_timeout!r}: must be a number of seconds above 0")
        if isinstance(self.shard_bytes, bool) or not isinstance(self.shard_bytes, int) or self.shard_bytes < 1:
            raise SettingsError(f"invalid shard size {self.shard_bytes!r} bytes: --shard-mb must be above 0")
        if not (isinstance(self.table_mb, (int, float)) and not isinstance(self.table_mb, bool)
                and 0 <= self.table_mb < 1 << 30):  # fmt: skip
            raise SettingsError(f"invalid --table-mb {self.table_mb!r}: must be a number of MiB >= 0")
        if self.setter_choices and "dip" not in self.judges.judges:
            raise SettingsError("--setter-choices asks the dip judge which moves set a trap: add dip to --judges")

    def judging(self) -> Judging:
        """How the workers judge each position."""
        human = self.human.model is not None or self.human.corpus is not None
        return Judging(self.settings, self.judges, primary_judge(self.judges, human), self.setter_choices)


def mib_to_bytes(shard_mb: float, flag: str = "--shard-mb") -> int:
    """A size in MiB (`--shard-mb`, or the `flag` named) in bytes; a size that is not a positive
    number of bytes is refused."""
    if not (shard_mb == shard_mb and 0 < shard_mb < float(1 << 40)):  # NaN, <= 0 and absurd sizes
        raise SettingsError(f"invalid {flag} {shard_mb!r}: must be a number of MiB above 0")
    return max(1, round(shard_mb * MIB))


# The identity's fields, each with the flag a user changes it by (for ResumeError's one line).
FLAGS: dict[str, str] = {
    "schema_version": "the dataset schema version",
    "inputs": "the inputs",
    "input_pins": "the inputs' content",
    "max_games": "--max-games",
    "depth": "--depth",
    "scope": "--scope",
    "reasonable_dip": "--reasonable-dip",
    "trap_dip": "--trap-dip",
    "exclude_checks": "--exclude-checks",
    "exclude_captures": "--exclude-captures",
    "safety_margin": "--safety-margin",
    "engine": "--engine",
    "engine_name": "the engine's version",
    "threads": "--threads",
    "hash_mb": "--hash",
    "nodes": "--nodes",
    "engine_depth": "--engine-depth",
    "movetime": "--movetime",
    "shallow_depth": "--shallow-depth",
    "min_elo": "--min-elo",
    "max_elo": "--max-elo",
    "time_controls": "--time-control",
    "rated_only": "--rated-only",
    "standard_only": "the variant filter",
    "ply_from": "--plies",
    "ply_to": "--plies",
    "sample_rate": "--sample",
    "seed": "--seed",
    "setter_choices": "--setter-choices",
    "judges": "--judges",
    "trappy_k": "--trappy-k",
    "model_p": "--model-p",
    "corpus_share": "--corpus-share",
    "corpus_min_games": "--corpus-min-games",
    "rating_band": "the corpus rating band",
    "practical_p": "--practical-p",
    "practical_drop": "--practical-drop",
    "practical_shallow_k": "--practical-shallow-k",
    "practical_shallow_p": "--practical-shallow-p",
    "stability_margin": "the stability margin",
    "refine_margin": "the probe's refine margin",
    "refine_margin_cp": "the probe's refine margin in centipawns",
    "human_model": "--human-model",
    "human_corpus": "--human-corpus",
    "shard_bytes": "--shard-mb",
    "shard_games": "--shard-games",
    "max_game_bytes": "--max-game-mb",
    "pool": "--pool",
}


# Identity fields added since datasets were first written: a job that started without one is
# resumed without comparing it.
RECORDED_SINCE = frozenset({"input_pins", "max_game_bytes"})


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
                raise ResumeError(
                    f"cannot --resume {out!r}: {FLAGS[name]} differs ({name} was {was!r}, now {given!r}); "
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
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
