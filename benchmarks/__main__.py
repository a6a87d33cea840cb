"""``python -m benchmarks`` (``make bench``): runs every benchmark script in turn and prints what it measured."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import benchmarks


def main() -> int:
    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if not m.name.startswith("_"))
    failed = []
    for name in names:
        mod = importlib.import_module(f"benchmarks.{name}")
        if not hasattr(mod, "main"):
            continue
        print(f"\n=== benchmarks.{name} ===", flush=True)
        t0 = time.perf_counter()
        rc = mod.main([])
        print(f"=== benchmarks.{name}: exit {rc}, {time.perf_counter() - t0:.1f} s wall ===", flush=True)
        if rc:
            failed.append(name)
    if failed:
        print(f"benchmarks that failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
