"""What a mining job is: its settings (`MineConfig`), checked when they are made. What its rows
depend on, and `--resume`'s check of it, is `pipeline.mine.identity`."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.common.files import MIB
from pipeline.engines.options import EngineOptions
from pipeline.human.context import Pool
from pipeline.ingest.headers import GameFilter
from pipeline.ingest.sources import MAX_GAME_BYTES
from pipeline.ingest.streams import URL_TIMEOUT
from pipeline.judging import HumanEvidence
from pipeline.mine.table import DEFAULT_TABLE_MB
from pipeline.mine.work import Judging, primary_judge
from schemas.dataset import settings_out_of_range
from search.judges import JudgeSettings
from search.settings import DiffiMaxSettings, SettingsError, is_whole


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
    evals: str | None = None
    """A converted evaluation export (`diffimax evals`, a path or an object URL): deep enough cached
    evals stand in for the root searches (`pipeline.evals.cache`)."""
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
        if not (
            isinstance(self.url_timeout, (int, float))
            and not isinstance(self.url_timeout, bool)
            and 0 < self.url_timeout < 1e9
        ):
            raise SettingsError(f"invalid --url-timeout {self.url_timeout!r}: must be a number of seconds above 0")
        if isinstance(self.shard_bytes, bool) or not isinstance(self.shard_bytes, int) or self.shard_bytes < 1:
            raise SettingsError(f"invalid shard size {self.shard_bytes!r} bytes: --shard-mb must be above 0")
        if not (
            isinstance(self.table_mb, (int, float))
            and not isinstance(self.table_mb, bool)
            and 0 <= self.table_mb < 1 << 30
        ):
            raise SettingsError(f"invalid --table-mb {self.table_mb!r}: must be a number of MiB >= 0")
        if self.evals is not None:
            if self.engine == "native":
                raise SettingsError(
                    "--evals stands in for a UCI engine's searches: give --engine stockfish (or a UCI engine)"
                )
            if self.engine_options.movetime is not None:
                raise SettingsError(
                    "--evals compares a cached eval's nodes and depth with the job's: a time limit "
                    "(engine-options.movetime) has neither; give --nodes or engine-options.depth"
                )
        if self.setter_choices and "dip" not in self.judges.judges:
            raise SettingsError("--setter-choices asks the dip judge which moves set a trap: add dip to --judges")

    def judging(self) -> Judging:
        """How the workers judge each position."""
        human = self.human.model is not None or self.human.corpus is not None
        return Judging(self.settings, self.judges, primary_judge(self.judges, human), self.setter_choices)


# The largest size in MiB a job takes (`--shard-mb`): in bytes (2^60) it fits the int64 byte
# offsets of the dataset with room for their sums.
SIZE_MIB_MAX = 1 << 40


def mib_to_bytes(shard_mb: float, flag: str = "--shard-mb") -> int:
    """A size in MiB (`--shard-mb`, or the `flag` named) in bytes; a size that is not a positive
    number of bytes is refused."""
    if not (shard_mb == shard_mb and 0 < shard_mb <= SIZE_MIB_MAX):  # NaN, <= 0 and absurd sizes
        raise SettingsError(
            f"invalid {flag} {shard_mb!r}: must be a number of MiB above 0 and at most {SIZE_MIB_MAX:,}"
        )
    return max(1, round(shard_mb * MIB))
