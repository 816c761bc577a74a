"""A flag that names some of a fixed set of choices (`--files csv,pgn`, `--files all`): one parser,
so every such flag reads and refuses its words alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def parse_choices(
    given: str | Sequence[str], known: Sequence[str], flag: str, groups: Mapping[str, Sequence[str]] | None = None
) -> tuple[str, ...]:
    """The choices of `known` named in `given` (a comma list, or a list of words), each once, in
    the order given (blanks between commas skipped); `all` alone is every one, and a word of
    `groups` (`both` for punish and set) names its choices. ValueError, naming `flag` and what it
    accepts, on an unknown word or none."""
    groups = groups or {}
    expected = f"{', '.join([*known, *groups])} or all"
    words = given.split(",") if isinstance(given, str) else list(given)
    if [word.strip().lower() for word in words] == ["all"]:
        return tuple(known)
    chosen: list[str] = []
    for raw in words:
        word = raw.strip().lower()
        if not word:
            continue
        named = groups.get(word, (word,))
        if not set(named) <= set(known):
            raise ValueError(f"invalid {flag} {raw!r}: expected {expected}")
        chosen += [choice for choice in named if choice not in chosen]
    if not chosen:
        raise ValueError(f"invalid {flag} {given!r}: expected {expected}")
    return tuple(chosen)
