"""Title and genre clean-up rules for MovieLens (the protocol chapter).

* **Year**: a trailing ``(YYYY)`` (four digits in parentheses at the very end of the title, after
  stripping white space) is removed from the title and becomes the item's ``year``. A title without
  such a suffix is kept unchanged and its ``year`` is null (``None``) — this is a documented rule, not
  an error: MovieLens has a few titles without a year (e.g. ``"unknown"``, TV series with year ranges).
  In the atomic layout the year is its own column (``release_year``); when that column does not hold a
  four-digit year, the title's trailing ``(YYYY)`` is used if present, otherwise the year is null.
* **Genres**: ``"(no genres listed)"`` (and an empty field) becomes an empty genre list; otherwise the
  field is split on the layout's separator, keeping the original order and dropping empty parts.
"""

from __future__ import annotations

import re

NO_GENRES = "(no genres listed)"
_TRAILING_YEAR = re.compile(r"^(?P<title>.*?)\s*\((?P<year>\d{4})\)$", re.DOTALL)
_YEAR = re.compile(r"^\d{4}$")


def split_title_year(raw_title: str) -> tuple[str, int | None]:
    """``"Toy Story (1995)"`` → ``("Toy Story", 1995)``; ``"unknown"`` → ``("unknown", None)``.

    Only a *trailing* four-digit year in parentheses counts. A title that would become empty (the
    whole title is ``"(1995)"``) keeps its text and gets the year.
    """
    text = raw_title.strip()
    m = _TRAILING_YEAR.match(text)
    if not m:
        return text, None
    title = m.group("title").strip()
    return (title or text), int(m.group("year"))


def parse_year(value: str | None) -> int | None:
    """A year column's value as an int when it is exactly four digits, else ``None``."""
    if value is None:
        return None
    value = str(value).strip()
    return int(value) if _YEAR.match(value) else None


def parse_genres(value: str | None, sep: str) -> tuple[str, ...]:
    """Split a genre field on ``sep``; ``"(no genres listed)"`` or an empty field gives ``()``."""
    if value is None:
        return ()
    text = str(value).strip()
    if not text or text == NO_GENRES:
        return ()
    return tuple(part.strip() for part in text.split(sep) if part.strip() and part.strip() != NO_GENRES)
