"""The number-format measurements of the protocol chapter: bfloat16 against float32 on a CPU, each measured by
``python -m benchmarks.precision_cpu`` on a committed run's own queries and presented orders and written to
``book/data/precision_cpu*.json`` (one file per measurement). Nothing here measures anything: it reads the files
and puts them in a table and words.

Conventions: ``speedup_bf16`` is float32's seconds per pass over bfloat16's (> 1: bfloat16 is faster); Kendall's
τ compares the two formats' scores of one (method, presented order); a format *meets the rule* when every entry of
a file's ``rule`` holds (the rule is stated on the page and in the benchmark's docstring).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ._labels import METHOD_LABELS, model_label

#: the consistency measures whose change the rule bounds (PPI and LOC; GPI is shown, not bounded)
BOUNDED = ("ppi", "loc")


def precision_measurements(folder: str | Path) -> list[dict[str, Any]]:
    """Every ``precision_cpu*.json`` of ``folder``, oldest first (by its ``date``; files without one, measured
    before the benchmark wrote it, first), each with ``file`` (its name) added."""
    out = [
        {**json.loads(path.read_text(encoding="utf-8")), "file": path.name}
        for path in Path(folder).glob("precision_cpu*.json")
    ]
    return sorted(out, key=lambda m: (m.get("date") or "", m["file"]))


def _model(m: Mapping[str, Any]) -> str:
    """The measured model's display name (the run's folder name for a file that does not name its model)."""
    return model_label(m["model"]) if m.get("model") else Path(m["run"]).name


def _date(m: Mapping[str, Any]) -> str:
    return (m.get("date") or "")[:10]


def _largest_change(m: Mapping[str, Any]) -> float:
    return max(abs(c["difference"][k]) for c in m["consistency"].values() for k in BOUNDED)


def _bf16(cpu: Mapping[str, Any]) -> str:
    return ", ".join(cpu.get("bf16_flags") or []) or "none"


def precision_table(measurements: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per measurement (``measurement``: its number in ``measurements``, 1-based, with model and scorer):
    when and on which CPU (and its bf16 instructions), the run, its size, the two formats'
    seconds per pass and their ratio, the agreement of the rankings, the largest change of PPI or LOC, and
    whether the paired verdicts and the whole rule hold."""
    rows = []
    for i, m in enumerate(measurements, 1):
        rows.append(
            {
                "measurement": f"{i}. {_model(m)} {m.get('scorer', '')}",
                "measured": _date(m) or "–",
                "CPU": m["cpu"]["model_name"],
                "bf16 instructions": _bf16(m["cpu"]),
                "run (K)": f"{Path(m['run']).name} ({m['K']})",
                "queries × orders": f"{m['queries']} × {m['M']}",
                "passes per format": f"{m['passes']['float32']:,}",
                "s/pass float32": round(m["seconds_per_pass"]["float32"], 2),
                "s/pass bfloat16": round(m["seconds_per_pass"]["bfloat16"], 2),
                "bfloat16 speed-up": f"{m['speedup_bf16']:.2f}×",
                "mean τ (min)": f"{m['tau']['mean']:.3f} ({m['tau']['min']:.3f})",
                "identical rankings": f"{m['identical_rankings']:.0%}",
                "largest PPI/LOC change": round(_largest_change(m), 3),
                "verdicts the same": "yes" if m["verdicts"]["float32"] == m["verdicts"]["bfloat16"] else "no",
                "rule met": "yes" if all(m["rule"].values()) else "no",
            }
        )
    return pd.DataFrame(rows)


def consistency_table(measurements: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """PPI, GPI and LOC of every measured method in both formats, one row per (measurement, method, format);
    a measurement is named by its model, scorer and measuring date."""
    rows = []
    for m in measurements:
        name = f"{_model(m)}, {m.get('scorer', '–')}, {_date(m) or 'undated'}"
        for method, c in m["consistency"].items():
            for fmt in ("float32", "bfloat16"):
                rows.append(
                    {"measurement": name, "method": METHOD_LABELS.get(method, method), "format": fmt}
                    | {k.upper(): round(c[fmt][k], 3) for k in ("ppi", "gpi", "loc")}
                )
    return pd.DataFrame(rows).set_index(["measurement", "method", "format"])


def _name(m: Mapping[str, Any]) -> str:
    return f"{_model(m)} ({m.get('scorer', '–')}) on {m['cpu']['model_name']}, {_date(m) or 'undated'}"


#: below this share of identical rankings a met rule gets a caveat (the rankings moved, the measures did not)
FEW_IDENTICAL = 0.5
#: PPI at least this and LOC at most this for every measured method: consistency near its floor, little room to move
SATURATED_PPI, SATURATED_LOC = 0.9, 0.1


def precision_summary(measurements: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown numbered list, one item per measurement, numbered as in :func:`precision_table`: the rule met,
    or the criteria that fail; where the rule is met with fewer than half the rankings identical, that share, and
    the float32 PPI and LOC when they left the measures little room to move."""
    lines = []
    for i, m in enumerate(measurements, 1):
        misses = [name.replace(">=", "≥") for name, ok in m["rule"].items() if not ok]
        if misses:
            lines.append(f"{i}. {_name(m)}: **not met** ({'; '.join(misses)} fail).")
            continue
        line = f"{i}. {_name(m)}: **met**."
        if m["identical_rankings"] < FEW_IDENTICAL:
            c = m["consistency"]
            line += (
                f" {m['identical_rankings']:.0%} of the rankings are identical in the two formats (one swapped pair"
                f" of the K = {m['K']} candidates makes a ranking differ)"
            )
            if all(v["float32"]["ppi"] >= SATURATED_PPI and v["float32"]["loc"] <= SATURATED_LOC for v in c.values()):
                ppi = ", ".join(f"{v['float32']['ppi']:.2f}" for v in c.values())
                loc = ", ".join(f"{v['float32']['loc']:.2f}" for v in c.values())
                line += (
                    f", while the measured methods' float32 PPI ({ppi}) and LOC ({loc}) sit near their extremes, "
                    "where reordering a ranking barely moves them: the consistency criterion says little here"
                )
            line += "."
        lines.append(line)
    return "\n".join(lines) if lines else "No measurement is committed."
