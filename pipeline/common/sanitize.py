"""The one place where strangers' text is made safe for where it goes.

Player names, events, dates, openings, sites and game ids come from PGN headers anyone can write.
Each output format has its own hazard, and its own function here:

- HTML and XML: `xml_printable` drops what is not XML text; the builder in
  `pipeline.outputs.html` (`text`, `tag`) then escapes `& < > " '`.
- PGN tag values: `clean_text` (one printable line) and `pgn_value` (quotes and backslashes).
- Spreadsheets: `spreadsheet_safe` (a leading `=` `+` `-` `@` tab or CR would start a formula).
- URLs: `safe_url` (plain http(s) only).
- Terminals: `terminal_visible` shows control characters, escape sequences and bidi controls as
  backslash escapes, so that no header can clear a screen, retitle a window or reorder a line;
  `truncate_cell` bounds what one table cell prints.
"""

from __future__ import annotations

import re
import shlex
import unicodedata
import urllib.parse
from typing import Final

# Characters kept of a PGN tag value (the PGN standard's limit).
PGN_VALUE_MAX: Final = 255
# A spreadsheet reads a cell starting with one of these as a formula (CSV injection).
FORMULA_PREFIXES: Final = ("=", "+", "-", "@", "\t", "\r")
# Characters a table cell of `diffimax query` shows before it is cut (a 1 MB header prints ~200).
CELL_MAX: Final = 200
# Longest URL `safe_url` accepts (browsers and Lichess links stay far below it).
URL_MAX: Final = 2000

# Neither valid XML nor sensible HTML text: C0/C1 controls other than tab, newline and carriage
# return, lone surrogates, U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
# What a terminal acts on instead of printing: C0 controls (ESC opens CSI and OSC sequences, BEL
# ends OSC, CR and BS overwrite), DEL, C1 controls (U+009B is CSI and U+009D is OSC on their own),
# the Unicode line and paragraph separators, and the bidi controls that reorder what follows
# (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069: the "Trojan Source" characters).
_TERMINAL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_URL_CHARS = re.compile(r"[A-Za-z0-9._~:/?#\[\]@!$&()*+,;=%-]+")


def xml_printable(value: str) -> str:
    """`value` with every character that is not XML text replaced by U+FFFD (escape it after)."""
    return _NOT_XML.sub("\ufffd", value)


def clean_text(text: str | None, limit: int = PGN_VALUE_MAX) -> str:
    """One line of printable text: control and format characters, line and paragraph separators
    become spaces (format characters such as bidi overrides are dropped), runs of spaces collapse."""
    if not text:
        return ""
    out = []
    for char in text:
        category = unicodedata.category(char)
        if category in ("Cc", "Zl", "Zp"):
            out.append(" ")
        elif category in ("Cf", "Cs", "Co", "Cn"):
            continue
        else:
            out.append(char)
    return " ".join("".join(out).split())[:limit]


def pgn_value(text: str | None, default: str = "?") -> str:
    """A PGN tag value: one line, at most PGN_VALUE_MAX characters, backslash and quote escaped."""
    value = clean_text(text) or default
    return value.replace("\\", "\\\\").replace('"', '\\"')


def spreadsheet_safe(cell: str, *, numbers: bool = False) -> str:
    """A CSV cell a spreadsheet will not run: a leading = + - @ tab or CR gets an apostrophe.
    With `numbers`, a cell that is a plain number (`-12`, `+0.5`, a Lichess CSV's Popularity) is
    left as it is: a spreadsheet reads it as that number, nothing more."""
    if numbers and _NUMBER.fullmatch(cell):
        return cell
    return "'" + cell if cell.startswith(FORMULA_PREFIXES) else cell


def safe_url(site: str | None) -> str:
    """`site` if it is a plain http(s) URL (RFC 3986 characters only, no quotes), else ''."""
    url = (site or "").strip()
    if not url or len(url) > URL_MAX or not _URL_CHARS.fullmatch(url):
        return ""
    try:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return ""
    except ValueError:  # an unbalanced `[`: urllib reads an IPv6 host
        return ""
    return url


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_visible(text: str, keep: str = "") -> str:
    """`text` with what a terminal would act on shown as `\\x1b`, `\\x07`, `\\u202e`, ... .

    `keep` names characters the output format needs as they are (CSV keeps tab, LF and CR inside
    its quoted cells); everything else of the set above is escaped, so an ESC never reaches the
    terminal and the `[2J` or `]0;title` after it is plain text. Backslashes are not escaped: a
    name that holds the four characters `\\x1b` looks the same as one that held ESC.
    """
    if keep:
        return _TERMINAL.sub(lambda match: match.group() if match.group() in keep else _escape(match), text)
    return _TERMINAL.sub(_escape, text)


def shell_word(text: str) -> str:
    """`text` as one word a POSIX shell reads back as `text`, and a terminal shows without acting on
    it: quoted as `shlex.quote` does, or, when it holds a character `terminal_visible` escapes (a
    right-to-left override in a path, say), in bash's `$'...'` with that character as `\u202e`, so
    a command printed for the user to paste names the path that exists."""
    if not _TERMINAL.search(text):
        return shlex.quote(text)
    inner = text.replace("\\", "\\\\").replace("'", "\\'")
    return "$'" + _TERMINAL.sub(_escape, inner) + "'"


def truncate_cell(text: str, limit: int = CELL_MAX) -> str:
    """`text` cut to `limit` characters, the cut noted with its length: `abc…(+1048376 chars)`."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…(+{len(text) - limit} chars)"
