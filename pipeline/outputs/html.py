"""The one HTML builder of the outputs (the report and the puzzle book).

Markup is built by `tag`, which escapes every plain `str` it is given (text and attribute values
alike, through `text`); only `Html` values pass through as they are. An `Html` is made by `tag`,
`text`, `join` and `document`, or by a caller wrapping its own constants and trusted generators
(`chess.svg`, a fixed style sheet or script), never around text from the data. Void elements are
written `<name ... />`, so a page without raw-text elements is well-formed XML as well as HTML.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from pathlib import Path
from typing import Final, TypeAlias

from pipeline.common.sanitize import xml_printable

# The board script the puzzle book and the repertoire explorer share (board.js), inlined before
# each page's own script: each page stays one offline file.
BOARD_SCRIPT: Final = (Path(__file__).resolve().parent / "board.js").read_text(encoding="utf-8")

# Elements written without content or end tag (as `<name ... />`, valid HTML and XML).
VOID: Final = frozenset({"meta", "img", "br", "hr", "col", "input"})


class Html(str):
    """Markup emitted as it is. Made only by `tag`, `text`, `join` and trusted generators
    (`chess.svg`, the outputs' constants); any other `str` is escaped on the way in."""

    __slots__ = ()


# What `tag` accepts as content: markup, text to escape, numbers, nothing, or a sequence of them.
Content: TypeAlias = Html | str | int | float | Iterable["Content"] | None


def text(value: object) -> Html:
    """`value` as page text: unprintable characters become U+FFFD, then `& < > " '` are escaped."""
    return Html(html.escape(xml_printable(str(value)), quote=True))


def _content(child: Content) -> Html:
    if isinstance(child, Html):
        return child
    if child is None:
        return Html("")
    if isinstance(child, str | int | float):
        return text(child)
    return join(child)


def join(parts: Iterable[Content], separator: Content = None) -> Html:
    """The parts one after the other (text escaped), `separator` between them."""
    return Html(_content(separator).join(_content(part) for part in parts))


def tag(element: str, /, *children: Content, **attributes: str | int | bool | None) -> Html:
    """`<element attributes>children</element>`; `class_` names the class attribute, `_` in a name
    becomes `-`; None and False attributes are left out, True ones are written `name="name"`."""
    attrs = []
    for key, value in attributes.items():
        if value is None or value is False:
            continue
        attribute = key.rstrip("_").replace("_", "-")
        attrs.append(f' {attribute}="{text(attribute if value is True else value)}"')
    opening = f"<{element}{''.join(attrs)}"
    if element in VOID:
        if children:
            raise ValueError(f"void element {element!r} takes no content")
        return Html(opening + " />")
    return Html(f"{opening}>{join(children)}</{element}>")


def document(title: str, body: Content, *, csp: str, style: Html, meta: Iterable[Html] = ()) -> str:
    """A whole page: `<!DOCTYPE html>`, then a head with the charset, the Content-Security-Policy
    `csp`, the extra `meta` elements, the viewport, `title` and the style sheet, then `body`."""
    head = tag(
        "head",
        tag("meta", charset="utf-8"),
        tag("meta", http_equiv="Content-Security-Policy", content=csp),
        list(meta),
        tag("meta", name="viewport", content="width=device-width, initial-scale=1"),
        tag("title", title),
        tag("style", style),
    )
    return "<!DOCTYPE html>\n" + tag("html", head, tag("body", body), lang="en") + "\n"
