"""A readable plain-text table of a metrics dictionary (what ``invarirank evaluate`` prints)."""

from __future__ import annotations

from typing import Any

__all__ = ["format_table"]


def _fmt(x: Any, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _scalar_names(overall: dict) -> list[str]:
    names = [k for k, v in overall.items()
             if k != "ci" and not isinstance(v, list) and not k.endswith("_queries") and k not in ("queries", "rows")]
    return names


def format_table(metrics: dict, digits: int = 4) -> str:
    """One block per method: each scalar metric with its 95% interval, then exposure by presented position.

    Example (abridged)::

        zero_shot: 500 queries, 10000 rows
          metric              value  95% CI
          hr@5               0.5560  [0.5120, 0.6000]
          ...
          exposure@5 by presented position (expected 0.2000):
            p 0-9    0.41 0.30 ...
    """
    lines: list[str] = []
    for method, block in metrics.get("methods", {}).items():
        ov = block["overall"]
        ci = ov.get("ci", {})
        lines.append(f"{method}: {ov['queries']} queries, {ov['rows']} rows "
                     f"(PPI on {ov.get('ppi_queries', '-')}, GPI/LOC on {ov.get('gpi_queries', '-')})")
        names = _scalar_names(ov)
        width = max([len(n) for n in names] + [6])
        lines.append(f"  {'metric':<{width}}  {'value':>{digits + 3}}  95% CI")
        for name in names:
            interval = ci.get(name)
            ci_text = f"[{_fmt(interval[0], digits)}, {_fmt(interval[1], digits)}]" if interval else ""
            lines.append(f"  {name:<{width}}  {_fmt(ov[name], digits):>{digits + 3}}  {ci_text}".rstrip())
        if ov.get("gpi") is not None and ov.get("gpi_exact") is not None:
            lines.append(f"  (GPI's local search missed the exact Kemeny optimum on "
                         f"{ov.get('gpi_suboptimal_queries')} of {ov.get('gpi_queries')} queries)")
        elif ov.get("gpi") is not None:
            lines.append("  (gpi_exact: not computed — the exact search is off or some query's K is above its limit)")
        for key, values in ov.items():
            if key.startswith("exposure@") and isinstance(values, list):
                e = key.split("@", 1)[1]
                expected = ov.get(f"expected_exposure@{e}") or []
                distinct = {round(x, 4) for x in expected if x is not None}
                exp_text = (f"expected {next(iter(distinct)):.4f}" if len(distinct) == 1
                            else "expected varies with K")
                lines.append(f"  {key} by presented position ({exp_text}):")
                for p0 in range(0, len(values), 10):
                    chunk = values[p0:p0 + 10]
                    label = f"p {p0}-{p0 + len(chunk) - 1}"
                    lines.append(f"    {label:<8} " + " ".join(_fmt(v, 2) for v in chunk))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
