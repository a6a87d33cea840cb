"""``invarirank audit``: any reranker over a seeded permutation design → a run folder (see :mod:`invarirank.audit`).

The reranker is a Python callable (``--callable module:function`` or ``path/to/file.py:function``, with
``--returns order|scores``), a project scorer with a registered method (``--scorer KIND --method NAME``; audited a
query at a time, so the same command after a crash finds the finished queries' passes in the pass cache) or a
model behind an OpenAI-compatible server (``--server URL --model NAME --mode logprobs|generate``:
:mod:`invarirank.audit.served_model`; its requests and answers go to ``RUN/journal.jsonl``, so the same command after a
crash resumes and gives identical rows). The run folder holds the same files as every run
(:mod:`invarirank.audit._run_folder`); the sister measures and the order rule's counts (and a served generation's
parse counts) are printed after the metrics table.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import InvariRankError
from ..methods.registry import BASELINE_METHOD
from . import int_at_least

_EPILOG = """examples:
  invarirank audit --callable my_reranker:rank --returns order --candidates candidates.jsonl --out runs/mine
  invarirank audit --callable rerankers.py:score --returns scores --batched --candidates c.jsonl \\
      --design sweep --repeats 2 --out runs/sweep
  invarirank audit --scorer simulated --method bootstrapping --candidates c.jsonl --design pinned \\
      --pin-item 0 --pin-position 0 --m 10 --out runs/pinned
  invarirank audit --server http://127.0.0.1:8000/v1 --model FOLDER --mode generate --candidates c.jsonl \
      --concurrency 4 --timeout 120 --out runs/served
"""


def register(subparsers: Any) -> None:
    from ..audit.designs import DESIGNS

    p = subparsers.add_parser(
        "audit",
        help="audit any reranker (a Python callable, a served model, a project scorer) over a seeded permutation "
        "design → run folder",
        description="Show a reranker every query's candidates in the presented orders of a seeded design, and write "
        "observations.jsonl, metrics.json (PPI, GPI, LOC, exposure, HR/nDCG ...), manifest.json and run.json "
        "into --out.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a = p.add_argument
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument(
        "--callable", metavar="MODULE:FUNCTION", help="the reranker: a function in an importable module or a .py file"
    )
    who.add_argument("--scorer", metavar="KIND", help="a project scorer (simulated, span, choice) with --method")
    who.add_argument("--server", metavar="URL", help="an OpenAI-compatible server's base URL (ending in /v1)")
    a(
        "--returns",
        choices=("order", "scores"),
        help="what the callable returns: ranked ids, or one score per presented candidate",
    )
    a("--batched", action="store_true", help="the callable takes (queries, presented_lists) and answers a list")
    a("--batch-size", type=int_at_least(1), default=32, metavar="N", help="requests per batched call (default 32)")
    a("--lower-is-better", action="store_true", help="the callable's scores rank ascending")
    a(
        "--on-invalid",
        choices=("repair", "error"),
        default="repair",
        help="an invalid ranking: the counted rule (default) or an error",
    )
    a("--uses-labels", action="store_true", help="the callable reads presented.labels (needed for --design label-swap)")
    a("--name", default=None, help="the rows' method (default: the function's name, or --method)")
    a("--method", default=BASELINE_METHOD, help=f"the registered method of --scorer (default {BASELINE_METHOD})")
    a("--model", default=None, help="the model of --scorer span/choice, or the name --server serves")
    a("--mode", choices=("logprobs", "generate"), help="--server: label log-probs or a generated ranking")
    a("--concurrency", type=int_at_least(1), default=4, metavar="N", help="--server: requests in flight (4)")
    a("--timeout", type=float, default=120.0, metavar="S", help="--server: seconds per request (default 120)")
    a("--retries", type=int_at_least(0), default=4, metavar="N", help="--server: retries, backoff 1 s doubled (4)")
    a("--max-tokens", type=int_at_least(1), default=None, metavar="N", help="--mode generate: default 6K + 16")
    a("--top-logprobs", type=int_at_least(1), default=20, metavar="N", help="--mode logprobs: top-k fallback (20)")
    a("--tokenizer", default=None, metavar="FOLDER", help="--mode logprobs: frame the prompt with its chat template")
    a("--candidates", required=True, metavar="FILE", help="candidates file (JSON Lines, one query per line)")
    a("--design", choices=DESIGNS, default="random", help="permutation design (default random: the study's orders)")
    a("--m", dest="M", type=int_at_least(1), default=20, metavar="M", help="presented orders per query (default 20)")
    a("--repeats", type=int_at_least(1), default=1, help="sweep: Latin squares per query (default 1)")
    a(
        "--pin-item",
        type=int_at_least(0),
        default=0,
        metavar="I",
        help="pinned: the candidate (0-based retrieval index)",
    )
    a("--pin-position", type=int, default=0, metavar="P", help="pinned: its presented position (0-based; -1 = last)")
    a("--seed", type=int_at_least(0), default=42, help="seed of every order (default 42)")
    a("--out", required=True, metavar="RUN", help="run folder to write")
    p.set_defaults(func=run)


def load_callable(spec: str) -> Any:
    """``module:function`` (importable, the current folder first on the path) or ``file.py:function``."""
    if ":" not in spec:
        raise InvariRankError(f"--callable {spec!r}: expected MODULE:FUNCTION or FILE.py:FUNCTION")
    where, name = spec.rsplit(":", 1)
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            what = "is a folder" if path.is_dir() else "not found"
            raise InvariRankError(f"--callable {spec!r}: file {where} {what}; expected a Python file")
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise InvariRankError(f"--callable {spec!r}: cannot load {where}")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        if "" not in sys.path and str(Path.cwd()) not in sys.path:
            sys.path.insert(0, str(Path.cwd()))
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            raise InvariRankError(f"--callable {spec!r}: module {exc.name!r} not found") from None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise InvariRankError(f"--callable {spec!r}: {where} has no callable {name!r}")
    return fn


def _frame(tokenizer: str | None) -> dict[str, Any]:
    if tokenizer is None:
        return {}
    from ..llm._frames import served_frame

    if not Path(tokenizer).is_dir():
        raise InvariRankError(f"--tokenizer {tokenizer}: not a folder (a local tokenizer folder with a chat template)")
    frame, name = served_frame(tokenizer)
    return {"frame": frame, "frame_name": name}


#: flags that apply to one kind of reranker or design: (dest, its flag, its default, who it applies to, when)
_APPLIES = (
    ("returns", "--returns", None, "--callable", lambda a: a.callable),
    ("batched", "--batched", False, "--callable", lambda a: a.callable),
    ("batch_size", "--batch-size", 32, "--callable --batched", lambda a: a.callable and a.batched),
    ("lower_is_better", "--lower-is-better", False, "--returns scores", lambda a: a.returns == "scores"),
    ("on_invalid", "--on-invalid", "repair", "--returns order", lambda a: a.returns == "order"),
    ("uses_labels", "--uses-labels", False, "--callable", lambda a: a.callable),
    ("method", "--method", BASELINE_METHOD, "--scorer", lambda a: a.scorer),
    ("model", "--model", None, "--scorer or --server", lambda a: a.scorer or a.server),
    ("mode", "--mode", None, "--server", lambda a: a.server),
    ("concurrency", "--concurrency", 4, "--server", lambda a: a.server),
    ("timeout", "--timeout", 120.0, "--server", lambda a: a.server),
    ("retries", "--retries", 4, "--server", lambda a: a.server),
    ("max_tokens", "--max-tokens", None, "--server --mode generate", lambda a: a.server and a.mode == "generate"),
    ("top_logprobs", "--top-logprobs", 20, "--server --mode logprobs", lambda a: a.server and a.mode == "logprobs"),
    ("tokenizer", "--tokenizer", None, "--server --mode logprobs", lambda a: a.server and a.mode == "logprobs"),
    ("M", "--m", 20, "--design random, pinned or label-swap", lambda a: a.design != "sweep"),
    ("repeats", "--repeats", 1, "--design sweep", lambda a: a.design == "sweep"),
    ("pin_item", "--pin-item", 0, "--design pinned", lambda a: a.design == "pinned"),
    ("pin_position", "--pin-position", 0, "--design pinned", lambda a: a.design == "pinned"),
)


def check_flags_apply(args: argparse.Namespace) -> None:
    """A flag given (not its default) where it does nothing is refused, naming the flag and what it belongs to: an
    ignored ``--m 3`` beside ``--design sweep`` (which makes K x repeats orders) or ``--method`` beside
    ``--callable`` would leave the user believing it was used."""
    for dest, flag, default, owner, applies in _APPLIES:
        value = getattr(args, dest, default)
        if value != default and not applies(args):
            given = flag if isinstance(value, bool) else f"{flag} {value!r}"
            raise InvariRankError(f"{given} does nothing here: it applies to {owner} only")


def build_reranker(args: argparse.Namespace) -> Any:
    from ..audit import from_order, from_scorer, from_scores

    if args.server:
        from ..audit.served_model import served

        if not args.mode or not args.model:
            raise InvariRankError("--server needs --model NAME (as the server serves it) and --mode logprobs|generate")
        return served(
            args.server,
            args.model,
            args.mode,
            name=args.name,
            journal=Path(args.out) / "journal.jsonl",
            concurrency=args.concurrency,
            timeout=args.timeout,
            retries=args.retries,
            seed=args.seed,
            max_tokens=args.max_tokens,
            top_logprobs=args.top_logprobs,
            **_frame(args.tokenizer),
        )

    if args.callable:
        fn = load_callable(args.callable)
        if not args.returns:
            raise InvariRankError("--callable needs --returns order|scores (what the function gives back)")
        name = args.name or args.callable.rsplit(":", 1)[1]
        common = {"name": name, "batched": args.batched, "batch_size": args.batch_size, "uses_labels": args.uses_labels}
        if args.returns == "order":
            return from_order(fn, on_invalid=args.on_invalid, **common)
        return from_scores(fn, higher_is_better=not args.lower_is_better, **common)
    from ..llm.factory import make_scorer

    scorer = make_scorer(args.scorer, **({"model": args.model} if args.model else {}))
    return from_scorer(scorer, args.method, name=args.name)


def format_repairs(totals: dict[str, dict[str, int]]) -> str:
    lines = []
    for method, t in totals.items():
        if "unparsable" in t:
            lines.append(
                f"{method}: parse: {t['unparsable']} of {t['rows']} answers unparsable, {t.get('reasoning', 0)} "
                f"with a reasoning block removed, {t.get('truncated', 0)} cut at max_tokens"
            )
        if t["repaired_rows"]:
            lines.append(
                f"{method}: the order rule changed {t['repaired_rows']} of {t['rows']} rankings "
                f"({t['unknown']} unknown ids dropped, {t['duplicate']} duplicates dropped, "
                f"{t['missing']} missing appended in presented order)"
            )
    return "\n".join(lines) + ("\n" if lines else "")


def format_sister(sister: dict[str, Any]) -> str:
    lines = [f"sister measures (k = {sister['settings']['k']}):"]
    for method, block in sister["methods"].items():
        values = ", ".join(
            f"{name} {'-' if v is None else f'{v:.4f}'}" for name, v in block["overall"].items() if name != "queries"
        )
        lines.append(f"  {method}: {values}")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    from ..audit import Design, audit, repair_totals
    from ..audit._run_folder import check_audit_folder, write_audit_run
    from ..candidates import read_candidates
    from ..evaluation import sister_measures
    from ..evaluation.report import format_table

    check_flags_apply(args)
    check_audit_folder(args.out)
    design = Design(args.design, args.M, args.repeats, args.pin_item, args.pin_position)
    reranker = build_reranker(args)
    queries = read_candidates(args.candidates)
    t = time.perf_counter()
    if args.scorer:  # a query at a time: its passes reach the disk pass cache before the next, so a rerun resumes
        rows = []
        for n, query in enumerate(queries, 1):
            rows += audit(reranker, [query], design=design, seed=args.seed)
            print(f"query {n}/{len(queries)} ({query.query_id}): {time.perf_counter() - t:.1f} s", file=sys.stderr)
    else:
        rows = audit(reranker, queries, design=design, seed=args.seed)
    seconds = time.perf_counter() - t
    metrics = write_audit_run(
        args.out, rows, rerankers=[reranker.identity()], design=design.to_json(), seed=args.seed, seconds=seconds
    )
    sys.stdout.write(format_table(metrics))
    sys.stdout.write(format_sister(sister_measures(rows)))
    sys.stdout.write(format_repairs(repair_totals(rows)))
    client = getattr(reranker, "client", None)
    if client is not None:
        print(
            f"server: {client.sent} requests sent, {client.journal.reused} answered from the journal", file=sys.stderr
        )
    print(f"wrote {args.out} ({len(rows)} rows, {seconds:.1f} s)", file=sys.stderr)
    return 0
