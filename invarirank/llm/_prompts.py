"""Prompt templates as data, and the rendering of items, history lines and whole prompts (the protocol chapter).

Everything a prompt contains is fixed here; :data:`TEMPLATE_VERSION` changes whenever any rendered byte would
change, so that the pass cache (keyed by it) never serves a score computed from a different prompt.

Rendering rules (shared by history and candidates, by both scorers):

* candidate line: ``Title (Year), genres: A, B``; history line: ``title: Title (Year), rating: R, genres: A, B``;
* the year prints as an integer; an item without a year omits `` (Year)``; an item without genres omits
  ``, genres: ...`` (Amazon items carry their categories in ``Item.genres`` and print under the same label);
* a rating prints in its shortest exact form: ``4.0`` → ``4``, ``3.5`` → ``3.5`` (``format(r, ".10g")``); a history
  entry without a rating (``None``: implicit feedback) omits ``, rating: R``: ``title: Title (Year), genres: A, B``
  (every prompt with ratings is byte for byte what it was, so :data:`TEMPLATE_VERSION` stays; the pass cache is
  keyed by the prompt's text, so the two forms never share an entry);
* the history is written in the query's order (newest first), one line per entry;
* titles are written as given, stripped of leading and trailing whitespace; every line break inside a title or
  genre (``\\n``, ``\\r``, and the other characters :meth:`str.splitlines` breaks at, e.g. U+2028) is replaced by
  a space so a line stays one line.

Span prompt (``span`` scorer, plain text, no chat template; only the tokenizer's own BOS is prepended)::

    [SPAN]
    Given the user's interaction history, rank the candidate items according to the user's preferences.

    User history:
    title: Star Wars (1977), rating: 5, genres: Action, Adventure, Romance, Sci-Fi, War
    ...
    [/SPAN]

    [ITEM]
    Toy Story (1995), genres: Animation, Children's, Comedy
    [/ITEM]

    [ITEM]
    ...

The prompt is described as *segments* (character ranges of the one text): the prefix (everything up to and
including the empty line after ``[/SPAN]``, shared by every order of a query), and per candidate the opening
``[ITEM]\\n``, the candidate's line (the scored span) and the closing ``\\n[/ITEM]\\n\\n``. The scorers tokenise the
whole text at once and cut its ids at these character offsets (:mod:`invarirank.llm._tokens`), so the model sees
exactly the ids its tokenizer gives for the prompt; the newlines around a candidate line belong to the delimiters.

Choice prompt (``choice`` scorer): one user message (rendered with the model's chat template, generation prompt
added, fixed template variables: :mod:`invarirank.llm._frames`) followed by where the model writes its answer — the
template's answer lead and, where the tokenizer keeps the bracket apart, ``[`` — so that the next token is a
candidate's label (or, for Llama 3 / Qwen 2.5, the merged ``[L``; :mod:`invarirank.llm._choice`)::

    Given the user's interaction history, rank the candidate items according to the user's preferences.

    User history:
    title: ..., rating: 4, genres: ...

    Candidates:
    [A] Toy Story (1995), genres: Animation, Children's, Comedy
    [B] ...

    Which candidate will the user prefer most? Answer with its label only.

A tokenizer without a chat template (e.g. the Gemma 3 base model) gets the documented plain turn format
``User: <message>\\n\\nAssistant: `` (:data:`PLAIN_TURN`) after its own BOS.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from invarirank.types import HistoryEntry, Item

#: Bump whenever any rendered byte of either prompt, or the ids the scorers build from it, changes.
#: "2": canonical ids of the whole prompt (version 1 tokenised the segments one by one) and all line breaks in
#: titles/genres replaced by spaces.
TEMPLATE_VERSION = "2"

INSTRUCTION = "Given the user's interaction history, rank the candidate items according to the user's preferences."


@dataclass(frozen=True)
class SpanTemplate:
    """The span prompt as data (the protocol chapter). ``attribute_label`` is the word before the genre list."""

    instruction: str = INSTRUCTION
    span_open: str = "[SPAN]"
    span_close: str = "[/SPAN]"
    item_open: str = "[ITEM]"
    item_close: str = "[/ITEM]"
    history_header: str = "User history:"
    attribute_label: str = "genres"

    @property
    def delimiters(self) -> tuple[str, str, str, str]:
        return (self.span_open, self.span_close, self.item_open, self.item_close)

    def to_json(self) -> dict[str, Any]:
        return {"template_version": TEMPLATE_VERSION, **asdict(self)}


@dataclass(frozen=True)
class PlainTurn:
    """Turn format for tokenizers without a chat template: ``user_prefix + message + assistant_prefix``."""

    user_prefix: str = "User: "
    assistant_prefix: str = "\n\nAssistant: "


PLAIN_TURN = PlainTurn()

#: Label alphabets for the choice scorer. ``upper``: A..Z (the default, K <= 26); ``upper+lower``: A..Z, a..z.
LABEL_SETS: dict[str, tuple[str, ...]] = {
    "upper": tuple(string.ascii_uppercase),
    "upper+lower": tuple(string.ascii_uppercase + string.ascii_lowercase),
}


@dataclass(frozen=True)
class ChoiceTemplate:
    """The choice prompt as data. The label ``L`` of a candidate prints as ``label_format.format(L)``.
    ``answer_prefix`` is the label's opening (the text of ``label_format`` before ``{}``); where the prompt ends —
    after it, or before it when the tokenizer merges it with the label — follows from the model's chat template and
    tokenizer (:mod:`invarirank.llm._frames`)."""

    instruction: str = INSTRUCTION
    history_header: str = "User history:"
    candidates_header: str = "Candidates:"
    question: str = "Which candidate will the user prefer most? Answer with its label only."
    label_format: str = "[{}]"
    answer_prefix: str = "["
    attribute_label: str = "genres"
    labels: str = "upper"
    plain_turn: PlainTurn = field(default_factory=PlainTurn)

    def label_alphabet(self) -> tuple[str, ...]:
        return LABEL_SETS[self.labels]

    def to_json(self) -> dict[str, Any]:
        return {"template_version": TEMPLATE_VERSION, **asdict(self)}


#: Line breaks of :meth:`str.splitlines`; each becomes one space inside a title or genre.
_LINE_BREAKS = str.maketrans({c: " " for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"})


def _clean(text: str) -> str:
    """One line: every line break becomes a space, leading and trailing whitespace is stripped."""
    return str(text).translate(_LINE_BREAKS).strip()


def format_year(year: int | None) -> str:
    """`` (1995)`` for a year, ``""`` for None; the year prints as an integer."""
    return "" if year is None else f" ({int(year)})"


def format_rating(rating: float) -> str:
    """Shortest exact form: 4.0 → ``4``, 3.5 → ``3.5``, 4.25 → ``4.25``."""
    r = float(rating)
    if r.is_integer():
        return str(int(r))
    return format(r, ".10g")


def _genres(item: Item, label: str) -> str:
    genres = [_clean(g) for g in item.genres if _clean(g)]
    return f", {label}: {', '.join(genres)}" if genres else ""


def render_item(item: Item, attribute_label: str = "genres") -> str:
    """``Title (Year), genres: A, B`` — the candidate line."""
    return f"{_clean(item.title)}{format_year(item.year)}{_genres(item, attribute_label)}"


def render_history_line(entry: HistoryEntry, attribute_label: str = "genres") -> str:
    """``title: Title (Year), rating: R, genres: A, B`` — one history line (``, rating: R`` omitted for an entry
    without a rating)."""
    item = entry.item
    rating = "" if entry.rating is None else f", rating: {format_rating(entry.rating)}"
    return f"title: {_clean(item.title)}{format_year(item.year)}{rating}{_genres(item, attribute_label)}"


@dataclass(frozen=True)
class SpanSegments:
    """The span prompt cut into segments (the scorer cuts the canonical ids of :attr:`text` at their offsets).

    ``prefix`` is shared by every order of a query; ``items[i] = (open, body, close)`` for the candidate at
    presented position ``i``; ``body`` is exactly :func:`render_item` of that candidate (the scored span).
    """

    prefix: str
    items: tuple[tuple[str, str, str], ...]

    @property
    def text(self) -> str:
        return self.prefix + "".join(o + b + c for o, b, c in self.items)


def span_segments(
    history: Sequence[HistoryEntry], presented: Sequence[Item], template: SpanTemplate = SpanTemplate()
) -> SpanSegments:
    """Segments of the span prompt for one presented order (see the module docstring)."""
    lines = [template.span_open, template.instruction, "", template.history_header]
    lines += [render_history_line(h, template.attribute_label) for h in history]
    lines += [template.span_close, "", ""]
    prefix = "\n".join(lines)
    items = tuple(
        (template.item_open + "\n", render_item(it, template.attribute_label), "\n" + template.item_close + "\n\n")
        for it in presented
    )
    return SpanSegments(prefix, items)


def span_text(
    history: Sequence[HistoryEntry], presented: Sequence[Item], template: SpanTemplate = SpanTemplate()
) -> str:
    """The whole span prompt as text (without the BOS token)."""
    return span_segments(history, presented, template).text


@dataclass(frozen=True)
class ChoiceMessage:
    """The choice user message in three parts: ``head`` (instruction + history, shared by every order of a
    query), ``candidates[i]`` (the labelled line of presented position ``i``, newline included) and ``tail``."""

    head: str
    candidates: tuple[str, ...]
    tail: str

    @property
    def text(self) -> str:
        return self.head + "".join(self.candidates) + self.tail


def choice_message(
    history: Sequence[HistoryEntry],
    presented: Sequence[Item],
    labels: Sequence[str],
    template: ChoiceTemplate = ChoiceTemplate(),
) -> ChoiceMessage:
    """The user message of the choice prompt; ``labels[i]`` labels presented position ``i``."""
    hist = "\n".join(render_history_line(h, template.attribute_label) for h in history)
    head = f"{template.instruction}\n\n{template.history_header}\n{hist}\n\n{template.candidates_header}\n"
    cands = tuple(
        f"{template.label_format.format(lab)} {render_item(it, template.attribute_label)}\n"
        for lab, it in zip(labels, presented)
    )
    tail = f"\n{template.question}"
    return ChoiceMessage(head, cands, tail)
