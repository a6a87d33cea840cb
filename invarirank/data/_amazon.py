"""Amazon Reviews 2023 (JSON Lines, plain or gzipped) → a ratings table and an items frame.

Files (see :func:`~invarirank.data._amazon_files.find_amazon_files`): the authors' ``reviews.jsonl[.gz]`` +
``metadata.jsonl[.gz]``, or the official dump's ``<Category>.jsonl[.gz]`` + ``meta_<Category>.jsonl[.gz]`` (e.g.
``Books.jsonl.gz`` + ``meta_Books.jsonl.gz``); ``--reviews`` / ``--metadata`` name files explicitly.
Gzip is recognised by its magic bytes, whatever the file name.

* Reviews: one JSON object per line with at least ``user_id`` (string), ``parent_asin`` (string, the
  item id), ``rating`` (number) and ``timestamp`` (integer, **milliseconds**, kept as given). Other
  fields (text, images, ...) are ignored. Blank lines are skipped.
* Metadata: one JSON object per line with ``parent_asin``; ``title`` becomes the title and
  ``categories`` (a list of strings) the genres; items have no year. A ``parent_asin`` listed twice
  keeps its first line.
* **Items without metadata** (rated, but absent from the metadata file, or with an empty/null title)
  are kept, so that no rating is lost: their title is the item id itself and their category list is
  empty; ``stats.json`` counts them as ``items_without_metadata``.

The full Books dump has ~29 M reviews; they are streamed (Arrow's JSON reader, parsing only the four
needed fields; a line-by-line fallback names the offending line of a bad file) and written in chunks
of ``chunk_rows`` rows to a Parquet file, so memory stays small, with a tqdm progress bar on the
(compressed) bytes read.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from ..errors import InvariRankError
from ._amazon_files import METADATA_WHAT, REVIEWS_WHAT
from ._movielens import RawData
from ._tables import require_file

REVIEW_FIELDS = ("user_id", "parent_asin", "rating", "timestamp")
_SCHEMA = pa.schema(
    [("user_id", pa.string()), ("item_id", pa.string()), ("rating", pa.float64()), ("timestamp", pa.int64())]
)


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def _json_lines(path: Path, what: str, desc: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line, with one-line errors for bad input."""
    require_file(path, what)
    size = path.stat().st_size
    gz = _is_gzip(path)
    lineno = 0
    seen = 0
    with (
        open(path, "rb") as raw,
        tqdm(
            total=size, unit="B", unit_scale=True, desc=desc, leave=False, mininterval=1.0, disable=size < (64 << 20)
        ) as bar,
    ):
        stream = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        last = 0
        try:
            for lineno, line in enumerate(stream, start=1):
                if lineno % 100_000 == 0:
                    pos = raw.tell()
                    bar.update(pos - last)
                    last = pos
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except UnicodeDecodeError:
                    raise InvariRankError(f"{path}, line {lineno}: not valid UTF-8; expected JSON text") from None
                except json.JSONDecodeError as exc:
                    raise InvariRankError(
                        f"{path}, line {lineno}, column {exc.colno}: invalid JSON "
                        f"({exc.msg}); expected one JSON object per line"
                    ) from None
                except RecursionError:
                    raise InvariRankError(
                        f"{path}, line {lineno}: JSON nested too deeply; expected one flat "
                        f"review or metadata object per line"
                    ) from None
                if not isinstance(obj, dict):
                    raise InvariRankError(f"{path}, line {lineno}: expected a JSON object, found {type(obj).__name__}")
                seen += 1
                yield lineno, obj
        except (EOFError, zlib.error, OSError) as exc:
            if not gz and not isinstance(exc, (EOFError, zlib.error)):
                raise InvariRankError(f"{path}: cannot read ({exc})") from None
            where = f"after line {lineno}" if lineno else "before the first line"
            raise InvariRankError(f"{path}: broken gzip data {where} ({exc}); expected a complete gzip file") from None
        finally:
            if gz:
                stream.close()
        bar.update(size - last)
    if seen == 0:
        raise InvariRankError(f"{path}: no JSON lines found; expected {what}")


def _field(obj: dict, name: str, path: Path, lineno: int) -> Any:
    try:
        value = obj[name]
    except KeyError:
        raise InvariRankError(
            f"{path}, line {lineno}: missing field {name!r}; expected {', '.join(REVIEW_FIELDS)}"
        ) from None
    if value is None:
        raise InvariRankError(f"{path}, line {lineno}, field {name!r}: expected a value, found null")
    return value


def _number(value: Any, name: str, path: Path, lineno: int, integer: bool) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        ok = False
    else:
        try:
            num = float(value) if not isinstance(value, int) else value
            ok = math.isfinite(num) and (not integer or float(num).is_integer())
        except (ValueError, OverflowError):
            ok = False
    if not ok:
        expected = "an integer (milliseconds)" if integer else "a number"
        raise InvariRankError(f"{path}, line {lineno}, field {name!r}: expected {expected}, found {value!r}")
    return int(value if isinstance(value, int) else float(value)) if integer else float(num)


def _id(value: Any, name: str, path: Path, lineno: int) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        raise InvariRankError(f"{path}, line {lineno}, field {name!r}: expected a non-empty string id, found {value!r}")
    return str(value).strip()


class _FastPathFailed(Exception):
    """The Arrow reader could not take the file as is; the line-by-line reader decides (and names the
    offending line when the input really is bad)."""


def _arrow_batches(path: Path, schema: pa.Schema, desc: str, block_bytes: int = 1 << 24) -> Iterator[pa.RecordBatch]:
    """Stream a JSON Lines file with Arrow's reader, parsing only the fields of ``schema``."""
    size = path.stat().st_size
    gz = _is_gzip(path)
    try:
        with (
            open(path, "rb") as raw,
            tqdm(
                total=size,
                unit="B",
                unit_scale=True,
                desc=desc,
                leave=False,
                mininterval=1.0,
                disable=size < (64 << 20),
            ) as bar,
        ):
            source = pa.PythonFile(raw, mode="r")
            stream = pa.CompressedInputStream(source, "gzip") if gz else source
            reader = pajson.open_json(
                stream,
                read_options=pajson.ReadOptions(block_size=block_bytes),
                parse_options=pajson.ParseOptions(
                    explicit_schema=schema, unexpected_field_behavior="ignore", newlines_in_values=False
                ),
            )
            last = 0
            for batch in reader:
                pos = raw.tell()
                bar.update(pos - last)
                last = pos
                yield batch
    except (pa.ArrowException, OSError, EOFError, zlib.error, ValueError) as exc:
        raise _FastPathFailed(str(exc)) from None


def _trimmed_ids(column: pa.Array) -> pa.Array:
    if column.null_count:
        raise _FastPathFailed("null id")
    column = pc.utf8_trim_whitespace(column)
    if len(column) and pc.any(pc.equal(column, "")).as_py():
        raise _FastPathFailed("empty id")
    return column


def _reviews_fast(path: Path, writer: pq.ParquetWriter, chunk_rows: int, block_bytes: int) -> int:
    schema = pa.schema(
        [("user_id", pa.string()), ("parent_asin", pa.string()), ("rating", pa.float64()), ("timestamp", pa.int64())]
    )
    pending: list[pa.Table] = []
    pending_rows = 0
    total = 0
    for batch in _arrow_batches(path, schema, f"reading {path.name}", block_bytes):
        rating = batch.column("rating")
        stamp = batch.column("timestamp")
        if rating.null_count or stamp.null_count or (len(rating) and not pc.all(pc.is_finite(rating)).as_py()):
            raise _FastPathFailed("missing or non-finite value")
        pending.append(
            pa.table(
                [_trimmed_ids(batch.column("user_id")), _trimmed_ids(batch.column("parent_asin")), rating, stamp],
                schema=_SCHEMA,
            )
        )
        pending_rows += batch.num_rows
        total += batch.num_rows
        if pending_rows >= chunk_rows:
            writer.write_table(pa.concat_tables(pending))
            pending, pending_rows = [], 0
    if pending:
        writer.write_table(pa.concat_tables(pending))
    if total == 0:
        raise _FastPathFailed("no rows")
    return total


def _reviews_by_line(path: Path, writer: pq.ParquetWriter, chunk_rows: int) -> int:
    users: list[str] = []
    items: list[str] = []
    ratings: list[float] = []
    stamps: list[int] = []
    total = 0

    def flush() -> None:
        if users:
            writer.write_table(
                pa.table(
                    [
                        pa.array(users, pa.string()),
                        pa.array(items, pa.string()),
                        pa.array(ratings, pa.float64()),
                        pa.array(stamps, pa.int64()),
                    ],
                    schema=_SCHEMA,
                )
            )
        for buffer in (users, items, ratings, stamps):
            buffer.clear()

    for lineno, obj in _json_lines(path, REVIEWS_WHAT, desc=f"reading {path.name}"):
        users.append(_id(_field(obj, "user_id", path, lineno), "user_id", path, lineno))
        items.append(_id(_field(obj, "parent_asin", path, lineno), "parent_asin", path, lineno))
        ratings.append(_number(_field(obj, "rating", path, lineno), "rating", path, lineno, False))
        stamps.append(_number(_field(obj, "timestamp", path, lineno), "timestamp", path, lineno, True))
        total += 1
        if len(users) >= chunk_rows:
            flush()
    flush()
    return total


def convert_reviews(
    path: Path, out: Path, chunk_rows: int = 1_000_000, *, block_bytes: int = 1 << 24, fast: bool = True
) -> int:
    """Stream the reviews file into a Parquet file (user_id, item_id, rating, timestamp) in row groups
    of about ``chunk_rows`` rows; return the number of rows. ``out`` is written in place (the caller
    makes it atomic).

    Arrow's streaming JSON reader is tried first (about 4x faster); when it cannot take the file
    (a malformed line, a missing or null field, a broken gzip stream, an unusual type), the file is
    read again line by line with :mod:`json`, which either accepts it or names the offending line.
    ``block_bytes``: Arrow's read block (must hold the longest line); ``fast=False`` skips Arrow.
    """
    require_file(path, REVIEWS_WHAT)
    if fast:
        try:
            with pq.ParquetWriter(str(out), _SCHEMA, compression="zstd") as writer:
                return _reviews_fast(path, writer, chunk_rows, block_bytes)
        except _FastPathFailed:
            pass
    with pq.ParquetWriter(str(out), _SCHEMA, compression="zstd") as writer:
        return _reviews_by_line(path, writer, chunk_rows)


def _metadata_fast(path: Path, wanted: set[str] | None) -> Iterator[tuple[str, Any, Any]]:
    schema = pa.schema([("parent_asin", pa.string()), ("title", pa.string()), ("categories", pa.list_(pa.string()))])
    value_set = pa.array(sorted(wanted), pa.string()) if wanted is not None else None
    rows = 0
    batches = []
    for batch in _arrow_batches(path, schema, desc=f"reading {path.name}"):
        ids = _trimmed_ids(batch.column("parent_asin"))
        titles, cats = batch.column("title"), batch.column("categories")
        if value_set is not None:  # only the reviewed items become Python objects
            keep = pc.is_in(ids, value_set=value_set)
            ids, titles, cats = ids.filter(keep), titles.filter(keep), cats.filter(keep)
        batches.append((ids, titles, cats))
        rows += batch.num_rows
    if rows == 0:
        raise _FastPathFailed("no rows")
    for ids, titles, cats in batches:
        yield from zip(ids.to_pylist(), titles.to_pylist(), cats.to_pylist())


def _metadata_by_line(path: Path) -> Iterator[tuple[str, Any, Any]]:
    for lineno, obj in _json_lines(path, METADATA_WHAT, desc=f"reading {path.name}"):
        if "parent_asin" not in obj or obj["parent_asin"] is None:
            raise InvariRankError(
                f"{path}, line {lineno}: missing field 'parent_asin'; expected parent_asin, title, categories"
            )
        item_id = _id(obj["parent_asin"], "parent_asin", path, lineno)
        title = obj.get("title")
        cats = obj.get("categories")
        if cats is not None and not isinstance(cats, (list, str)):
            raise InvariRankError(
                f"{path}, line {lineno}, field 'categories': expected a list of strings, found {type(cats).__name__}"
            )
        yield item_id, title, cats


def read_metadata(path: Path, wanted: set[str] | None = None) -> pd.DataFrame:
    """Items frame (item_id, title, year (all null), genres = categories) from a metadata file,
    restricted to ``wanted`` ids when given. Null or empty titles become the item id; white space in
    titles is collapsed; the first line of a repeated ``parent_asin`` wins."""
    require_file(path, METADATA_WHAT)
    try:
        records = list(_metadata_fast(path, wanted))
    except _FastPathFailed:
        records = _metadata_by_line(path)
    ids: list[str] = []
    titles: list[str] = []
    genres: list[list[str]] = []
    seen: set[str] = set()
    for item_id, title, cats in records:
        if item_id in seen or (wanted is not None and item_id not in wanted):
            continue
        seen.add(item_id)
        title = " ".join(str(title).split()) if title is not None else ""
        if cats is None:
            cats = []
        elif isinstance(cats, str):
            cats = [cats]
        ids.append(item_id)
        titles.append(title or item_id)
        genres.append([str(c).strip() for c in cats if c is not None and str(c).strip()])
    return pd.DataFrame(
        {
            "item_id": pd.array(ids, dtype=object),
            "title": pd.array(titles, dtype=object),
            "year": pd.array([None] * len(ids), dtype="Int64"),
            "genres": pd.Series(genres, dtype=object),
        }
    )


def read_amazon(
    reviews: Path, metadata: Path, work_file: Path, *, reuse: bool = False, chunk_rows: int = 1_000_000
) -> RawData:
    """Read an Amazon data set: reviews streamed to ``work_file`` (Parquet) then loaded (4 columns
    only), metadata restricted to the reviewed items. With ``reuse`` an existing ``work_file`` (from an
    earlier conversion of the same raw file) is used as is."""
    if not (reuse and work_file.exists()):
        tmp = work_file.with_name(f".{work_file.name}.{os.getpid()}.part")
        try:
            convert_reviews(reviews, tmp, chunk_rows=chunk_rows)
            tmp.replace(work_file)
        finally:
            tmp.unlink(missing_ok=True)
    table = pq.read_table(work_file)
    wanted = set(pc.unique(table.column("item_id")).to_pylist())
    items = read_metadata(metadata, wanted)
    return RawData(ratings=table, items=items, layout="amazon-jsonl", files={"reviews": reviews, "metadata": metadata})
