"""Canonical id order and integer codes for user and item ids.

Rule (project-wide): within a data set, ids compare **numerically** when every id of that set is an
integer string (``^[0-9]+$``), otherwise as plain **code-point strings**. Numerically equal ids with
different spellings (``"7"`` and ``"07"``) are ordered by their string as a tie-break, so the order
is total and deterministic.

``encode`` turns a column of string ids into 0-based integer codes whose order *is* the canonical
order (code 0 = first id), which lets the split and query builders sort integers instead of strings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_INT_PATTERN = "^[0-9]+$"


def _as_array(ids) -> pa.Array:
    if isinstance(ids, pa.ChunkedArray):
        return ids.combine_chunks()
    if isinstance(ids, pa.Array):
        return ids
    return pa.array(np.asarray(ids, dtype=object), type=pa.string())


def all_integer_ids(ids: np.ndarray | pa.Array | list[str]) -> bool:
    """True when every id is a non-empty string of ASCII digits (and there is at least one id)."""
    arr = _as_array(ids)
    if len(arr) == 0:
        return False
    return bool(pc.all(pc.match_substring_regex(arr, _INT_PATTERN)).as_py())


def canonical_argsort(ids: np.ndarray | pa.Array | list[str]) -> np.ndarray:
    """Indices (int64) that sort ``ids`` (strings) into the canonical id order (module docstring).

    Code-point order is computed as UTF-8 byte order (the two agree).
    """
    arr = _as_array(ids)
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    by_string = pc.sort_indices(arr).to_numpy().astype(np.int64, copy=False)
    if not all_integer_ids(arr):
        return by_string
    # numeric order: (significant digits as a number, then the full string) – exact for any length
    string_rank = np.empty(n, dtype=np.int64)
    string_rank[by_string] = np.arange(n)
    stripped = pc.utf8_ltrim(arr, characters="0")
    lengths = pc.utf8_length(stripped).to_numpy(zero_copy_only=False)
    if lengths.max(initial=0) <= 18:
        digits = pc.if_else(pc.equal(stripped, ""), "0", stripped)
        values = pc.cast(digits, pa.int64())
        table = pa.table({"v": values, "r": string_rank})
        keys = [("v", "ascending"), ("r", "ascending")]
    else:
        table = pa.table({"l": lengths, "s": stripped, "r": string_rank})
        keys = [("l", "ascending"), ("s", "ascending"), ("r", "ascending")]
    return pc.sort_indices(table, sort_keys=keys).to_numpy().astype(np.int64, copy=False)


def canonical_sorted(ids) -> list[str]:
    """The distinct ids, as a list in canonical order."""
    uniq = sorted({str(i) for i in ids})
    return [uniq[i] for i in canonical_argsort(uniq)]


@dataclass(frozen=True)
class Encoded:
    """Integer codes of an id column: ``ids[codes[i]]`` is row i's id; ``ids`` is in canonical order."""

    codes: np.ndarray  # int64, one per row
    ids: np.ndarray  # object array of str, distinct ids in canonical order


def encode(column: pa.Array | pa.ChunkedArray) -> Encoded:
    """Dictionary-encode a string column and renumber the codes into canonical id order."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    enc = pc.dictionary_encode(column)
    dictionary = enc.dictionary
    indices = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    order = canonical_argsort(dictionary)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    ids = np.asarray(dictionary.to_numpy(zero_copy_only=False), dtype=object)[order]
    return Encoded(codes=rank[indices], ids=ids)


def sort_order(*keys: tuple[np.ndarray, str]) -> np.ndarray:
    """Stable order (int64 indices) of rows sorted by several keys, the first key most significant.

    Each key is ``(array, "ascending" | "descending")``. Uses Arrow's multi-key sort, which is several
    times faster than ``numpy.lexsort`` on tens of millions of rows.
    """
    if not keys or len(keys[0][0]) == 0:
        return np.zeros(0, dtype=np.int64)
    table = pa.table({f"k{i}": pa.array(np.asarray(a)) for i, (a, _) in enumerate(keys)})
    order = pc.sort_indices(table, sort_keys=[(f"k{i}", d) for i, (_, d) in enumerate(keys)])
    return order.to_numpy().astype(np.int64, copy=False)
