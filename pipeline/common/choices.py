"""A flag that names some of a fixed set of choices (`--files csv,pgn`, `--files all`): one parser,
so every such flag reads and refuses its words alike."""

from __future__ import annotations

from collections.abc import Sequence


def parse_choices(given: str | Sequence[str], known: Sequence[str], flag: str) -> tuple[str, ...]:
    """The choices of `known` named in `given` (a comma list, or a list of words), each once, in
    the order given (blanks between commas skipped); `all` alone is every one. ValueError, naming
    `flag` and what it accepts, on an unknown word or none."""
    expected = f"{', '.join(known)} or all"
    words = given.split(",") if isinstance(given, str) else list(given)
    if [word.strip().lower() for word in words] == ["all"]:
        return tuple(known)
    chosen: list[str] = []
    for raw in words:
        word = raw.strip().lower()
        if not word:
            continue
        if word not in known:
            raise ValueError(f"invalid {flag} {raw!r}: expected {expected}")
        if word not in chosen:
            chosen.append(word)
    if not chosen:
        raise ValueError(f"invalid {flag} {given!r}: expected {expected}")
    return tuple(chosen)
