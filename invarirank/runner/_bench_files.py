"""Benchmark files (``python -m benchmarks.gpu --json FILE``): measured passes per second per (model, K), read so
that the dry run, the cost line and the grid's estimate price a measured model from its measurement rather than
from a stated assumption.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvariRankError


@dataclass
class Bench:
    """A benchmark file of :mod:`benchmarks.gpu` or :mod:`benchmarks.vllm_backend`: per (model id, K) the measured
    passes per second of the four methods' span request stream in the fastest configuration and backend, and the
    first stage's measured seconds per LightGCN epoch per data set (when it holds them). ``source`` names the file
    for the printouts."""

    source: str
    device: str
    passes_per_second: dict[tuple[str, int], float]
    first_stage: dict[str, Any]
    #: the same rates per scorer backend (``hf``: rows without a backend, :mod:`benchmarks.gpu`; ``vllm``)
    by_backend: dict[str, dict[tuple[str, int], float]] = field(default_factory=dict)
    #: every measured row as written (``model``, ``K``, ``passes_per_s``; ``scorer`` and ``backend`` where given),
    #: choice rows too: what a page shows beside the prices
    rows: list[dict[str, Any]] = field(default_factory=list)

    def only(self, backend: str) -> Bench:
        """This measurement restricted to one backend's rows (no rates when it measured none): the price of a grid
        computed on that backend, where :attr:`passes_per_second` is the faster backend's."""
        return Bench(
            f"{self.source} [{backend}]", self.device, dict(self.by_backend.get(backend, {})), self.first_stage
        )

    def seconds_per_pass(self, model: str | None, k: int) -> float | None:
        """Measured seconds per distinct pass of ``model`` at K = ``k``; a K that was not measured is scaled
        from the nearest measured K by the new tokens per pass (the candidates: the history prefix is reused);
        None when the model was not measured."""
        near = self.nearest_k(model, k)
        if near is None:
            return None
        return (1.0 / self.passes_per_second[(str(model), near)]) * (k / near)

    def nearest_k(self, model: str | None, k: int) -> int | None:
        """The measured K of ``model`` that :meth:`seconds_per_pass` prices K = ``k`` from (``k`` itself when it
        was measured); None when the model was not measured."""
        ks = sorted(kk for (m, kk) in self.passes_per_second if m == model)
        return min(ks, key=lambda kk: (abs(kk - k), kk)) if ks else None


def load_bench(path: str | Path) -> Bench:
    """Read a benchmark file written by ``python -m benchmarks.gpu --json FILE`` (errors name the file)."""
    import json

    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        rates: dict[tuple[str, int], float] = {}
        by_backend: dict[str, dict[tuple[str, int], float]] = {}
        for r in data.get("results", []):
            # the grid's runs use the span scorer: a choice row (benchmarks.vllm_backend writes both) prices none;
            # rows of both backends compete, the faster one prices
            if r.get("passes_per_s") and r.get("model") and r.get("scorer", "span") == "span":
                key = (str(r["model"]), int(r["K"]))
                rates[key] = max(rates.get(key, 0.0), float(r["passes_per_s"]))
                mine = by_backend.setdefault(str(r.get("backend", "hf")), {})
                mine[key] = max(mine.get(key, 0.0), float(r["passes_per_s"]))
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InvariRankError(f"{p}: not a benchmark file of benchmarks.gpu ({exc})") from None
    rows = [dict(r) for r in data.get("results", []) if isinstance(r, dict) and r.get("passes_per_s")]
    return Bench(str(p), str(data.get("device", "?")), rates, dict(data.get("first_stage") or {}), by_backend, rows)


def find_bench(path: str | Path | None, root: Path | None = None, folder: str = "results/bench") -> Bench | None:
    """``path`` when given, else the project's ``<folder>/*.json`` (``results/bench/``: the GPU measurements the
    paper's grid is priced from; ``results/bench/cpu/``: this project's CPU machine's; None when there is none):
    the files measured on the device of the newest one, merged — a (model, K) measured in several files takes the
    fastest rate, as within one file, per backend too. Newest: by modification time, then name (a fresh clone gives
    every file one time, so name them so that they sort by date)."""
    if path:
        return load_bench(path)
    from ..store import checkout_root

    root = root or checkout_root()
    if root is None:  # outside a checkout: no benchmark files of the project
        return None
    where = root / folder
    files = sorted(where.glob("*.json"), key=lambda f: (f.stat().st_mtime, f.name)) if where.is_dir() else []
    benches = [b for b in (_bench_or_none(f, root) for f in files) if b is not None]
    if not benches:
        return None
    device = benches[-1].device
    same = [b for b in benches if b.device == device]
    merged = Bench(" + ".join(b.source for b in same), device, {}, {})
    for b in same:
        for backend, got in [("", b.passes_per_second), *b.by_backend.items()]:
            into = merged.by_backend.setdefault(backend, {}) if backend else merged.passes_per_second
            for key, rate in got.items():
                into[key] = max(into.get(key, 0.0), rate)
        merged.first_stage = b.first_stage or merged.first_stage
        merged.rows += [{**r, "source": b.source} for r in b.rows]
    return merged


def _bench_or_none(path: Path, root: Path) -> Bench | None:
    """:func:`load_bench` of a file found in a benchmark folder, its ``source`` relative to the checkout; None for a
    JSON file there that holds no measured rates or first stage (another benchmark's evidence file beside them)."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None  # load_bench names the file and what is wrong
    if isinstance(data, dict) and "results" not in data and "first_stage" not in data:
        return None
    bench = load_bench(path)
    bench.source = path.relative_to(root).as_posix()
    return bench
