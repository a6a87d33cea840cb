"""Benchmark files (``python -m benchmarks.gpu --json FILE``): measured passes per second per (model, K), read so
that the dry run, the cost line and the grid's estimate price a measured model from its measurement rather than
from a stated assumption.
"""

from __future__ import annotations

from dataclasses import dataclass
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
        for r in data.get("results", []):
            # the grid's runs use the span scorer: a choice row (benchmarks.vllm_backend writes both) prices none;
            # rows of both backends compete, the faster one prices
            if r.get("passes_per_s") and r.get("model") and r.get("scorer", "span") == "span":
                key = (str(r["model"]), int(r["K"]))
                rates[key] = max(rates.get(key, 0.0), float(r["passes_per_s"]))
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InvariRankError(f"{p}: not a benchmark file of benchmarks.gpu ({exc})") from None
    return Bench(str(p), str(data.get("device", "?")), rates, dict(data.get("first_stage") or {}))


def find_bench(path: str | Path | None, root: Path | None = None) -> Bench | None:
    """``path`` when given, else the project's ``results/bench/*.json`` (None when there is none): the files
    measured on the device of the newest one, merged — a (model, K) measured in several files takes the fastest
    rate, as within one file. Newest: by modification time, then name (a fresh clone gives every file one time,
    so name them so that they sort by date)."""
    if path:
        return load_bench(path)
    from ..store import checkout_root

    root = root or checkout_root()
    if root is None:  # outside a checkout: no benchmark files of the project
        return None
    folder = root / "results" / "bench"
    files = sorted(folder.glob("*.json"), key=lambda f: (f.stat().st_mtime, f.name)) if folder.is_dir() else []
    if not files:
        return None
    benches = [load_bench(f) for f in files]
    for b, f in zip(benches, files):
        b.source = f"results/bench/{f.name}"
    device = benches[-1].device
    same = [b for b in benches if b.device == device]
    rates: dict[tuple[str, int], float] = {}
    first_stage: dict[str, Any] = {}
    for b in same:
        for key, rate in b.passes_per_second.items():
            rates[key] = max(rates.get(key, 0.0), rate)
        first_stage = b.first_stage or first_stage
    return Bench(" + ".join(b.source for b in same), device, rates, first_stage)
