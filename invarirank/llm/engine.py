"""The shared machinery of the real (model-backed) scorers: pass cache, prefix reuse, logits only where needed,
batching on GPU, length limits and work accounting.

A scorer turns (query, presented order) into a :class:`Plan`: the canonical ids of the whole prompt text (what the
tokenizer gives for it, :mod:`invarirank.llm.tokens`) cut at character offsets into the shared ``prefix`` (BOS +
instruction + history), the order-specific ``suffix`` ids that must be computed, a ``tail`` that no score depends on
(computed only by the naive path), the suffix positions whose logits are read (``needed``) and what to read there.
:meth:`CausalLMScorer.plan` checks that the plan's ids are the canonical ids of its text (an error naming the model,
token, character offset and prompt segment otherwise). The engine then

1. looks the serialised prompt up in the pass cache (:mod:`invarirank.llm.cache`); a hit costs no model work;
2. otherwise gets the prefix's key/value cache from the :class:`~invarirank.llm.prefix.PrefixStore` (computing it
   once per query), forks it and runs **one forward pass** over the suffix, asking the model for logits only at
   the ``needed`` positions (``logits_to_keep`` with a position tensor: the output projection runs on those rows
   only);
3. reduces those logits to one float32 score per candidate (subclass) and stores them in the pass cache.

``naive=True`` turns all of that off (every pass a full forward over the whole prompt including its tail, logits
at every position, no pass cache): the reference the tests and the benchmark compare against.

Batching: :meth:`CausalLMScorer.score_batch` computes the missing passes of one query in batches of
``batch_size`` (default 8 on CUDA, 1 on the CPU where batching does not pay). The suffixes are right-padded and
need no attention mask: with causal attention a real token never sees the padding after it.

Batches across queries: :meth:`CausalLMScorer.score_requests` takes requests of *several* queries (a worker's
window of queries in lockstep). With ``max_batch_tokens`` set (and prefix reuse on plain ``DynamicLayer`` caches:
Llama, Mistral without a window, Qwen 2), the pending suffixes of all queries are sorted by length and packed
into batches of at most ``max_batch_tokens`` computed positions (rows × the batch's longest suffix), never padding
beyond what batches per prefix would compute; each row keeps its own query's history prefix — computed once per query, left-padded to the batch's longest prefix and
masked — and its own positions. Prefix forwards = number of queries; tokens computed never exceed the per-query
batches' (sorting by length pads less). Without it, requests are batched per prefix as above.

Work accounting in ``scorer.stats``: ``calls``, ``cache_hits`` (of which ``disk_hits``), ``forward_passes``
(model forwards over suffixes or full prompts), ``prefix_passes``, ``prefix_reuses``, ``tokens_computed`` (all
token positions run through the model, prefixes and padding included), ``prefix_tokens``,
``positions_projected`` (rows of the output projection), ``attention_context`` (sum over computed positions and
layers of the number of keys attended; sliding-window layers count at most their window) and
``forward_seconds``. ``ScoreResult.tokens`` is the number of positions computed for that call (a query's prefix
is charged to the call that computed it).
"""

from __future__ import annotations

import inspect
import math
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from invarirank.errors import InvariRankError
from invarirank.types import HistoryEntry, Item, Query, ScoreResult

from .cache import DiskPassCache, default_cache_path, pass_key
from .prefix import PrefixStore, UnsupportedCache, fork_cache, new_cache
from .prompts import TEMPLATE_VERSION
from .tokens import PromptTokenizer

__all__ = ["Plan", "CausalLMScorer", "DEFAULT_MAX_LENGTH"]

#: Default prompt limit (PROTOCOL §7 runs the paper's models with a maximum length of 4096), capped by the model's.
DEFAULT_MAX_LENGTH = 4096


@dataclass
class Plan:
    """What one pass computes. Positions in ``needed`` are suffix-relative (0 = first suffix token).

    ``prefix + suffix + tail`` must be the canonical ids of ``text``: ``bos`` (the BOS ids the scorer puts in front,
    part of ``prefix``) followed by ``tokenizer(text, add_special_tokens=False)``; :meth:`CausalLMScorer.plan`
    checks this. ``segments`` names the prompt's parts as ``(name, start, end)`` character ranges (0-based,
    half-open) for error messages.
    """

    text: str
    prefix: tuple[int, ...]
    suffix: list[int]
    tail: list[int]
    needed: list[int]
    bos: tuple[int, ...] = ()
    segments: tuple[tuple[str, int, int], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def full_ids(self) -> list[int]:
        return list(self.prefix) + self.suffix + self.tail

    @property
    def full_length(self) -> int:
        return len(self.prefix) + len(self.suffix) + len(self.tail)


#: load options a scorer passes on to :func:`invarirank.llm.models.load_model` (``trust_remote_code`` is not one:
#: only the command line's ``--trust-remote-code`` switches it on, see :func:`invarirank.llm.models.allow`)
_LOAD_OPTIONS = ("device", "dtype", "threads", "attn_implementation", "allow_download")


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _string(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


#: the options every real scorer accepts from a config: name -> (check, what is expected)
_BASE_OPTIONS: dict[str, tuple[Any, str]] = {
    "device": (_string, "a device name such as cpu or cuda"),
    "dtype": (_string, "a dtype name such as float32 or bfloat16"),
    "threads": (_positive_int, "an integer >= 1"),
    "attn_implementation": (_string, "a transformers attention implementation name"),
    "allow_download": (_flag, "true or false"),
    "pass_cache": (lambda v: isinstance(v, bool) or v == "memory", "true, false or 'memory'"),
    "prefix_reuse": (_flag, "true or false"),
    "logits": (lambda v: v in ("needed", "all"), "'needed' or 'all'"),
    "batch_size": (_positive_int, "an integer >= 1"),
    "max_length": (_positive_int, "an integer >= 1 (tokens)"),
    "truncate_history": (_flag, "true or false"),
    "naive": (_flag, "true or false"),
    "prefix_cache_size": (_positive_int, "an integer >= 1"),
}


class CausalLMScorer:
    """Base class of :class:`~invarirank.llm.span.SpanScorer` and :class:`~invarirank.llm.choice.ChoiceScorer`.

    Parameters (all keyword-only, all optional):

    ``model``: registry name (default ``"smollm2-135m"``), local folder, Hub id, or a
    :class:`~invarirank.llm.models.LoadedModel`; ``device`` (``"auto"``), ``dtype`` (auto: bf16 on CUDA, fp32 on
    CPU), ``threads`` (CPU threads; default: the CPUs available);
    ``cache_dir``: folder of the persistent pass cache (default ``cache_dir()/passes``); ``pass_cache`` (True;
    False: no cache; ``"memory"``: this process only); ``prefix_reuse`` (True); ``logits`` (``"needed"`` or
    ``"all"``); ``batch_size`` (8 on CUDA, 1 on CPU); ``max_length`` (default min(4096, the model's limit));
    ``truncate_history`` (False: an over-long prompt is an error naming the query; True: drop the oldest history
    entries until the query's longest prompt fits); ``max_batch_tokens`` (None; a number: batches across queries
    packed by this token budget, see the module docstring); ``naive`` (False; True: reference path, see the module
    docstring); ``prefix_cache_size`` (2 prefixes kept); ``seed`` (recorded only: scoring is deterministic).
    """

    kind = "base"
    VERSION = "1"
    #: the options a config may give (subclasses add their own): name -> (check, what is expected)
    OPTIONS: dict[str, tuple[Any, str]] = _BASE_OPTIONS

    @classmethod
    def check_options(cls, options: Mapping[str, Any], where: str) -> None:
        """Check option names and types without loading anything; raise :class:`InvariRankError` naming
        ``where`` (unknown names, a non-integer or zero ``batch_size`` / ``max_length``, ...)."""
        for key, value in options.items():
            if key not in cls.OPTIONS:
                raise InvariRankError(f"{where}: unknown option {key!r} of the {cls.kind} scorer; expected some of "
                                      f"{', '.join(sorted(cls.OPTIONS))}")
            check, expected = cls.OPTIONS[key]
            if not check(value):
                raise InvariRankError(f"{where}: option {key!r} = {value!r}, expected {expected}")

    def __init__(self, model: Any = "smollm2-135m", *, seed: int = 0, cache_dir: Any = None,
                 pass_cache: bool | str = True, prefix_reuse: bool = True, logits: str = "needed",
                 batch_size: int | None = None, max_length: int | None = None, truncate_history: bool = False,
                 naive: bool = False, prefix_cache_size: int = 2, max_batch_tokens: int | None = None,
                 **load_options: Any):
        unknown = sorted(set(load_options) - set(_LOAD_OPTIONS))
        if unknown:
            raise InvariRankError(f"{self.kind} scorer: unknown option(s) {', '.join(unknown)}")
        given = (("batch_size", batch_size), ("max_length", max_length), ("prefix_cache_size", prefix_cache_size),
                 ("threads", load_options.get("threads")))
        self.check_options({k: v for k, v in given if v is not None}, f"{self.kind} scorer")
        from .models import LoadedModel, load_model

        if isinstance(model, LoadedModel):
            self.loaded = model
        else:
            self.loaded = load_model(model or "smollm2-135m", **load_options)
        if self.loaded.device.type == "cpu":
            from .models import set_threads

            set_threads(load_options.get("threads"))
        self.seed = int(seed)
        if logits not in ("needed", "all"):
            raise InvariRankError(f"{self.kind} scorer: logits={logits!r}; expected 'needed' or 'all'")
        self.naive = bool(naive)
        self.prefix_reuse = bool(prefix_reuse) and not self.naive
        self.logits_mode = "all" if self.naive else logits
        self.trim_tail = not self.naive
        on_cuda = self.loaded.device.type == "cuda"
        self.batch_size = max(1, int(batch_size if batch_size is not None else (8 if on_cuda else 1)))
        if max_batch_tokens is not None and int(max_batch_tokens) < 1:
            raise InvariRankError(f"{self.kind} scorer: max_batch_tokens must be positive, got {max_batch_tokens}")
        self.max_batch_tokens = None if max_batch_tokens is None else int(max_batch_tokens)
        model_max = int(self.loaded.max_length)
        self.max_length = int(max_length) if max_length is not None else min(DEFAULT_MAX_LENGTH, model_max)
        if self.max_length < 1:
            raise InvariRankError(f"{self.kind} scorer: max_length must be positive, got {max_length}")
        if self.max_length > model_max:
            raise InvariRankError(f"{self.kind} scorer: max_length {self.max_length} exceeds the model's limit "
                                  f"{model_max} ({self.loaded.name})")
        self.truncate_history = bool(truncate_history)
        self.encoder = PromptTokenizer(self.loaded.tokenizer, self.loaded.name)
        self._prefixes = PrefixStore(prefix_cache_size)
        self.prefix_reuse_note: str | None = None
        self._history_memo: dict[tuple, int] = {}
        if self.naive or pass_cache is False or pass_cache is None:
            self.pass_cache: DiskPassCache | None = None
        elif pass_cache == "memory":
            self.pass_cache = DiskPassCache(None)
        else:
            self.pass_cache = DiskPassCache(default_cache_path(cache_dir))
        self.stats: dict[str, float] = {}
        self.reset_stats()
        self._setup_model_facts()

    # ------------------------------------------------------------------------------------------------------
    # identity and stats

    def reset_stats(self) -> None:
        self.stats = {"calls": 0, "cache_hits": 0, "disk_hits": 0, "forward_passes": 0, "prefix_passes": 0,
                      "prefix_reuses": 0, "tokens_computed": 0, "prefix_tokens": 0, "positions_projected": 0,
                      "attention_context": 0, "forward_seconds": 0.0}

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.loaded.name}"

    def score_options(self) -> dict[str, Any]:
        """Options that change the scores (part of the pass-cache key); subclasses extend."""
        return {}

    def template_json(self) -> dict[str, Any]:  # pragma: no cover - subclasses
        raise NotImplementedError

    def key_identity(self) -> dict[str, Any]:
        ident = self.loaded.identity()
        return {
            "scorer": self.kind,
            "scorer_version": self.VERSION,
            "template_version": TEMPLATE_VERSION,
            "template": self.template_json(),
            "weights_sha256": ident["weights_sha256"],
            "tokenizer_sha256": ident["tokenizer_sha256"],
            "dtype": ident["dtype"],
            "device_type": ident["device"],
            "options": self.score_options(),
        }

    def identity(self) -> dict[str, Any]:
        """JSON-able description for manifests (model, hashes, dtype, device, template, options)."""
        ident = dict(self.loaded.identity())
        ident.update({
            "scorer": self.kind,
            "scorer_version": self.VERSION,
            "template_version": TEMPLATE_VERSION,
            "options": self.score_options(),
            "max_length": self.max_length,
            "truncate_history": self.truncate_history,
            "prefix_reuse": self.prefix_reuse,
            "prefix_reuse_note": self.prefix_reuse_note,
            "batch_size": self.batch_size,
            "max_batch_tokens": self.max_batch_tokens,
            "naive": self.naive,
            "pass_cache": None if self.pass_cache is None else ("memory" if self.pass_cache.path is None else "disk"),
            "seed": self.seed,
        })
        return ident

    # ------------------------------------------------------------------------------------------------------
    # model facts: forward signature, layers for the attention work count

    def _setup_model_facts(self) -> None:
        model = self.loaded.model
        params = inspect.signature(model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._has_logits_to_keep = "logits_to_keep" in params
        if not self._has_logits_to_keep:
            self.logits_mode = "all"
        # a (rows, width) boolean logits_to_keep is understood only by model code that slices through
        # transformers' slice_logits_to_keep (transformers 5.24 has it; 5.17's models index
        # hidden_states[:, logits_to_keep, :], which takes 1-D positions only): see _batch_logits
        self._mask_rows = getattr(sys.modules.get(type(model).__module__), "slice_logits_to_keep", None) is not None
        cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
        n_layers = int(getattr(cfg, "num_hidden_layers", 0) or 0)
        window = getattr(cfg, "sliding_window", None)
        layer_types = getattr(cfg, "layer_types", None)
        if layer_types is None:
            layer_types = ["sliding_attention" if window else "full_attention"] * n_layers
        self._n_full = sum(1 for t in layer_types if t not in ("sliding_attention", "chunked_attention"))
        self._n_sliding = len(layer_types) - self._n_full
        self._window = int(window) if window else 0
        self.hidden_size = int(getattr(cfg, "hidden_size", 0) or 0)
        self.n_layers = n_layers

    def _attention_context(self, start: int, n: int) -> int:
        """Sum over positions start..start+n-1 and layers of the number of keys attended."""
        if n <= 0:
            return 0
        first, last = start + 1, start + n  # context sizes of the first and the last position
        total = self._n_full * (first + last) * n // 2
        if self._n_sliding:
            ctx = np.minimum(np.arange(first, last + 1, dtype=np.int64), self._window)
            total += self._n_sliding * int(ctx.sum())
        return int(total)

    def model_flop_counts(self) -> dict[str, int]:
        """Parameter counts for the FLOP formula of the benchmark: non-embedding parameters (every parameter
        except the input embedding and the output projection) and output-projection parameters."""
        model = self.loaded.model
        emb = model.get_input_embeddings().weight
        out = model.get_output_embeddings()
        out_w = out.weight if out is not None else emb
        seen = {id(p): p.numel() for p in model.parameters()}
        total = sum(seen.values())
        non_emb = total - emb.numel() - (out_w.numel() if id(out_w) != id(emb) else 0)
        return {"non_embedding_params": int(non_emb), "output_projection_params": int(out_w.numel()),
                "layers": self.n_layers, "hidden_size": self.hidden_size}

    # ------------------------------------------------------------------------------------------------------
    # plans (subclasses)

    def _plan(self, query: Query, history: Sequence[HistoryEntry], presented: Sequence[Item]) -> Plan:
        raise NotImplementedError  # pragma: no cover

    def _reduce(self, plan: Plan, logits: Any) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def _length_probe(self, presented: Sequence[Item]) -> Sequence[Item]:
        """Candidates used to size the query's longest prompt (subclasses may clip)."""
        return presented

    # ------------------------------------------------------------------------------------------------------
    # history length: errors and truncation

    def _history_for(self, query: Query, presented: Sequence[Item]) -> tuple[HistoryEntry, ...]:
        history = tuple(query.history)
        if not self.truncate_history:
            return history
        ids = {it.item_id for it in query.candidates}
        worst = list(query.candidates) + [it for it in presented if it.item_id not in ids]
        memo_key = (query.query_id, tuple(it.item_id for it in worst), len(history))
        n = self._history_memo.get(memo_key)
        if n is None:
            probe = self._length_probe(worst)
            n = len(history)
            while n > 0 and self._plan(query, history[:n], probe).full_length > self.max_length:
                n -= 1
            self._history_memo[memo_key] = n
        return history[:n]

    def plan(self, query: Query, presented: Sequence[Item]) -> Plan:
        """The plan of one pass. Raises :class:`InvariRankError` for an over-long prompt and when the plan's ids
        are not the canonical ids of its text (see :mod:`invarirank.llm.tokens`)."""
        history = self._history_for(query, presented)
        plan = self._plan(query, history, presented)
        self.encoder.check_canonical(plan.text, plan.full_ids, plan.bos, plan.segments,
                                     f"{self.kind} prompt of query {query.query_id}")
        shared = plan.text[:plan.segments[0][2]] if plan.segments else plan.text  # hook (issue 19)
        self.encoder.check_prefix(shared, plan.prefix, plan.full_ids, f"{self.kind} prompt of query "  # hook (issue 19)
                                  f"{query.query_id}")  # hook (issue 19)
        if plan.full_length > self.max_length:
            dropped = len(query.history) - len(history)
            how = (f"even after dropping {dropped} of {len(query.history)} history items" if self.truncate_history
                   else "; pass truncate_history=True to drop the oldest history items until it fits, or raise "
                        "max_length")
            raise InvariRankError(
                f"query {query.query_id}: the {self.kind} prompt has {plan.full_length} tokens, more than "
                f"max_length {self.max_length} of {self.loaded.name} {how}".replace(" ;", ";"))
        plan.extra["history_used"] = len(history)
        return plan

    # ------------------------------------------------------------------------------------------------------
    # scoring

    def score(self, query: Query, presented: Sequence[Item]) -> ScoreResult:
        """One score per presented candidate (float32, higher = preferred) from one forward pass."""
        return self.score_batch(query, [presented])[0]

    def score_batch(self, query: Query, orders: Sequence[Sequence[Item]]) -> list[ScoreResult]:
        """Score several presented orders of one query; identical prompts are computed once; the missing
        passes run in batches of ``batch_size`` (GPU) or one by one (CPU)."""
        return self.score_requests([(query, presented) for presented in orders])

    def score_requests(self, requests: Sequence[tuple[Query, Sequence[Item]]]) -> list[ScoreResult]:
        """Score (query, presented order) requests of one or several queries, in order; identical prompts are
        computed once; the missing passes are batched (per prefix, or packed across queries by
        ``max_batch_tokens``: see the module docstring)."""
        results: list[ScoreResult | None] = [None] * len(requests)
        todo: dict[str, list[int]] = {}
        plans: dict[str, Plan] = {}
        ident = self.key_identity() if self.pass_cache is not None else None
        ident_digest = pass_key(ident, "")[:16] if ident is not None else ""
        for i, (query, presented) in enumerate(requests):
            self.stats["calls"] += 1
            if len(presented) == 0:
                results[i] = ScoreResult(np.zeros(0, dtype=np.float32), 0, False)
                continue
            plan = self.plan(query, presented)
            key = pass_key(ident, plan.text) if ident is not None else f"nocache:{i}"
            if key in todo:  # same prompt twice in one batch: compute once
                todo[key].append(i)
                self.stats["cache_hits"] += 1
                continue
            if self.pass_cache is not None:
                hit = self.pass_cache.get(key)
                if hit is not None:
                    scores, where = hit
                    self.stats["cache_hits"] += 1
                    if where == "disk":
                        self.stats["disk_hits"] += 1
                    results[i] = ScoreResult(scores, 0, True)
                    continue
            todo[key] = [i]
            plans[key] = plan
        if plans:
            keys = list(plans)
            computed = self._compute([plans[k] for k in keys])
            for key, (scores, tokens) in zip(keys, computed):
                if self.pass_cache is not None:
                    self.pass_cache.put(key, scores, tokens, ident_digest)
                first, *rest = todo[key]
                results[first] = ScoreResult(scores, int(tokens), False)
                for j in rest:
                    results[j] = ScoreResult(scores.copy(), 0, True)
        return [r for r in results]  # type: ignore[misc]

    # ------------------------------------------------------------------------------------------------------
    # forward passes

    def _run(self, **kwargs: Any) -> Any:
        import torch

        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self.loaded.model(**kwargs)
        if self.loaded.device.type == "cuda":
            torch.cuda.synchronize(self.loaded.device)
        self.stats["forward_seconds"] += time.perf_counter() - t0
        return out

    def _compute(self, plans: list[Plan]) -> list[tuple[np.ndarray, int]]:
        out: list[tuple[np.ndarray, int] | None] = [None] * len(plans)
        if not self.prefix_reuse:
            for i, plan in enumerate(plans):
                out[i] = self._forward_full(plan)
            return out  # type: ignore[return-value]
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, plan in enumerate(plans):
            groups.setdefault(plan.prefix, []).append(i)
        self._prefixes.size = max(self._prefixes.size, len(groups))   # every query of a window keeps its prefix
        if self.max_batch_tokens is not None and len(groups) > 1 and self._packable():
            try:
                return self._compute_packed(plans, groups)
            except UnsupportedCache as exc:
                self._disable_prefix_reuse(str(exc))
                return [self._forward_full(plan) for plan in plans]
        for prefix, idxs in groups.items():
            for c in range(0, len(idxs), self.batch_size):
                chunk = idxs[c:c + self.batch_size]
                if self.prefix_reuse:
                    try:
                        cache, prefix_tokens = self._prefix_cache(prefix)
                        got = self._forward_suffixes(cache, [plans[i] for i in chunk])
                    except UnsupportedCache as exc:
                        self._disable_prefix_reuse(str(exc))
                    else:
                        for n, (i, (scores, tokens)) in enumerate(zip(chunk, got)):
                            out[i] = (scores, tokens + (prefix_tokens if n == 0 else 0))
                        continue
                for i in chunk:
                    out[i] = self._forward_full(plans[i])
        return out  # type: ignore[return-value]

    def _packable(self) -> bool:
        """Whether rows of different prefixes may share a batch: plain full-attention layers only."""
        return self._n_sliding == 0

    def _compute_packed(self, plans: list[Plan], groups: dict[tuple[int, ...], list[int]],
                        ) -> list[tuple[np.ndarray, int]]:
        """Rows of all prefixes sorted by suffix length, packed into batches of at most ``max_batch_tokens``
        computed positions; each prefix computed once (charged to its first row)."""
        out: list[tuple[np.ndarray, int] | None] = [None] * len(plans)
        prefix_of: dict[int, tuple[Any, int]] = {}
        charge: dict[int, int] = {}
        for prefix, idxs in groups.items():
            cache, computed = self._prefix_cache(prefix)
            for i in idxs:
                prefix_of[i] = (cache, len(prefix))
            charge[idxs[0]] = computed
        order = sorted(range(len(plans)), key=lambda i: (len(plans[i].suffix), i))
        budget = int(self.max_batch_tokens or 1)
        # what batches per prefix would compute: the packing may pad, but never beyond it
        limit = sum(len(chunk) * max(len(plans[i].suffix) for i in chunk) for idxs in groups.values()
                    for chunk in (idxs[c:c + self.batch_size] for c in range(0, len(idxs), self.batch_size)))
        committed, remaining = 0, sum(len(p.suffix) for p in plans)
        batch: list[int] = []
        for i in order + [-1]:
            if i >= 0:
                n = len(plans[i].suffix)
                remaining -= n
                if not batch or ((len(batch) + 1) * n <= budget and
                                 committed + (len(batch) + 1) * n + remaining <= limit):
                    batch.append(i)
                    continue
            committed += len(batch) * len(plans[batch[-1]].suffix)
            got = (self._forward_suffixes(prefix_of[batch[0]][0], [plans[j] for j in batch])
                   if len({plans[j].prefix for j in batch}) == 1 else
                   self._forward_mixed([plans[j] for j in batch], [prefix_of[j] for j in batch]))
            for j, (scores, tokens) in zip(batch, got):
                out[j] = (scores, tokens + charge.get(j, 0))
            batch = [i]
        return out  # type: ignore[return-value]

    def _forward_mixed(self, plans: list[Plan], prefixes: list[tuple[Any, int]]) -> list[tuple[np.ndarray, int]]:
        """One forward over suffixes of *different* prefixes: each row's prefix key/values left-padded to the
        longest, masked, and the row's own positions (prefix length + offset)."""
        import torch

        dev = self.loaded.device
        longest = max(n for _, n in prefixes)
        width = max(len(pl.suffix) for pl in plans)
        batch = len(plans)
        cache = new_cache(self.loaded.model)
        layers = [getattr(c, "layers", None) for c, _ in prefixes]
        if any(ls is None for ls in layers):
            raise UnsupportedCache("prefix caches without layers")
        for li in range(len(layers[0])):
            keys, values = [], []
            for ls, (_, n) in zip(layers, prefixes):
                k, v = ls[li].keys, ls[li].values
                pad = longest - n
                if pad:
                    k = torch.cat([k.new_zeros((*k.shape[:2], pad, k.shape[3])), k], dim=2)
                    v = torch.cat([v.new_zeros((*v.shape[:2], pad, v.shape[3])), v], dim=2)
                keys.append(k)
                values.append(v)
            cache.update(torch.cat(keys), torch.cat(values), li)
        ids = torch.full((batch, width), self._pad_id(), dtype=torch.long)
        attn = torch.zeros((batch, longest + width), dtype=torch.long)
        pos = torch.zeros((batch, width), dtype=torch.long)
        keep = torch.zeros((batch, width), dtype=torch.bool)
        for b, (pl, (_, n)) in enumerate(zip(plans, prefixes)):
            ids[b, :len(pl.suffix)] = torch.tensor(pl.suffix, dtype=torch.long)
            attn[b, longest - n:longest + len(pl.suffix)] = 1
            pos[b] = torch.arange(n, n + width)
            keep[b, pl.needed] = True
        kwargs: dict[str, Any] = {"input_ids": ids.to(dev), "attention_mask": attn.to(dev),
                                  "position_ids": pos.to(dev), self._cache_arg: cache, "use_cache": True}
        logits, projected = self._batch_logits(kwargs, keep)
        self.stats["forward_passes"] += 1
        self.stats["tokens_computed"] += batch * width
        self.stats["positions_projected"] += projected
        self.stats["attention_context"] += sum(self._attention_context(n, width) for _, n in prefixes)
        res, row = [], 0
        for pl in plans:
            k = len(pl.needed)
            res.append((self._reduce(pl, logits[row:row + k].float()), width))
            row += k
        return res

    def _batch_logits(self, kwargs: dict[str, Any], keep: Any) -> tuple[Any, int]:
        """Run one batched forward whose row ``b`` needs the logits at the suffix positions ``keep[b]`` (a
        (rows, width) boolean mask on the CPU); returns those logits, row after row and each row's positions in
        ascending order (``(needed positions, vocab)``), and the number of rows the output projection ran on.

        ``logits_mode == "needed"``: model code that slices through ``slice_logits_to_keep`` takes the mask itself
        and projects exactly the needed rows. Older model code (transformers 5.17) takes only 1-D positions kept
        for every row: the union of the rows' positions is projected for each row and each row's own positions
        are read out of it (more projected rows, the same logits). ``"all"``: every position is projected."""
        import torch

        dev = self.loaded.device
        rows, width = keep.shape
        if self.logits_mode != "needed":
            out = self._run(**kwargs)
            return out.logits[keep.to(out.logits.device)], rows * width
        if self._mask_rows:
            kwargs["logits_to_keep"] = keep.to(dev)
            logits = self._run(**kwargs).logits
            if logits.dim() == 3:  # some models return (1, rows, vocab) for a boolean selection
                logits = logits.reshape(-1, logits.shape[-1])
            return logits, int(keep.sum())
        union = keep.any(dim=0).nonzero().flatten()
        kwargs["logits_to_keep"] = union.to(dev)
        logits = self._run(**kwargs).logits                  # (rows, len(union), vocab)
        return logits[keep[:, union].to(logits.device)], rows * len(union)

    def _disable_prefix_reuse(self, why: str) -> None:
        self.prefix_reuse = False
        self.prefix_reuse_note = f"prefix reuse disabled: {why}"
        self._prefixes.clear()
        warnings.warn(f"{self.name}: {self.prefix_reuse_note}; falling back to full forward passes", stacklevel=3)

    def _prefix_cache(self, prefix: tuple[int, ...]) -> tuple[Any, int]:
        cache = self._prefixes.get(prefix)
        if cache is not None:
            self.stats["prefix_reuses"] += 1
            return cache, 0
        import torch

        model = self.loaded.model
        cache = new_cache(model)
        ids = torch.tensor([list(prefix)], dtype=torch.long, device=self.loaded.device)
        kwargs: dict[str, Any] = {"input_ids": ids, self._cache_arg: cache, "use_cache": True}
        if self._has_logits_to_keep:
            kwargs["logits_to_keep"] = 1
        self._run(**kwargs)
        n = len(prefix)
        self.stats["prefix_passes"] += 1
        self.stats["prefix_tokens"] += n
        self.stats["tokens_computed"] += n
        self.stats["positions_projected"] += 1 if self._has_logits_to_keep else n
        self.stats["attention_context"] += self._attention_context(0, n)
        fork_cache(cache)  # raises UnsupportedCache early for layer types that cannot be forked
        self._prefixes.put(prefix, cache)
        return cache, n

    def _forward_suffixes(self, cache: Any, plans: list[Plan]) -> list[tuple[np.ndarray, int]]:
        import torch

        dev = self.loaded.device
        p = len(plans[0].prefix)
        if len(plans) == 1:
            plan = plans[0]
            ids = torch.tensor([plan.suffix], dtype=torch.long, device=dev)
            kwargs: dict[str, Any] = {"input_ids": ids, self._cache_arg: fork_cache(cache), "use_cache": True}
            if self.logits_mode == "needed":
                kwargs["logits_to_keep"] = torch.tensor(plan.needed, dtype=torch.long, device=dev)
            out = self._run(**kwargs)
            logits = out.logits[0]
            if self.logits_mode == "all":
                logits = logits[torch.tensor(plan.needed, dtype=torch.long, device=dev)]
            n = len(plan.suffix)
            self._count(n, p, len(plan.needed) if self.logits_mode == "needed" else n)
            return [(self._reduce(plan, logits.float()), n)]
        width = max(len(pl.suffix) for pl in plans)
        pad = self._pad_id()
        ids = torch.full((len(plans), width), pad, dtype=torch.long)
        mask = torch.zeros((len(plans), width), dtype=torch.bool)
        for b, pl in enumerate(plans):
            ids[b, :len(pl.suffix)] = torch.tensor(pl.suffix, dtype=torch.long)
            mask[b, pl.needed] = True
        ids = ids.to(dev)
        kwargs = {"input_ids": ids, self._cache_arg: fork_cache(cache, batch=len(plans)), "use_cache": True}
        logits, projected = self._batch_logits(kwargs, mask)
        self._count(len(plans) * width, p, projected, batch=len(plans))
        res = []
        row = 0
        for pl in plans:
            k = len(pl.needed)
            res.append((self._reduce(pl, logits[row:row + k].float()), width))
            row += k
        return res

    def _count(self, n: int, start: int, projected: int, batch: int = 1) -> None:
        self.stats["forward_passes"] += 1
        self.stats["tokens_computed"] += n
        self.stats["positions_projected"] += projected
        self.stats["attention_context"] += batch * self._attention_context(start, n // batch)

    def _forward_full(self, plan: Plan) -> tuple[np.ndarray, int]:
        import torch

        dev = self.loaded.device
        full = list(plan.prefix) + plan.suffix + (plan.tail if not self.trim_tail else [])
        ids = torch.tensor([full], dtype=torch.long, device=dev)
        needed = torch.tensor([len(plan.prefix) + q for q in plan.needed], dtype=torch.long, device=dev)
        kwargs: dict[str, Any] = {"input_ids": ids, "use_cache": False}
        if self.logits_mode == "needed":
            kwargs["logits_to_keep"] = needed
        out = self._run(**kwargs)
        logits = out.logits[0]
        if self.logits_mode == "all":
            logits = logits[needed]
        n = len(full)
        self._count(n, 0, len(plan.needed) if self.logits_mode == "needed" else n)
        return self._reduce(plan, logits.float()), n

    def _pad_id(self) -> int:
        tok = self.loaded.tokenizer
        for cand in (getattr(tok, "pad_token_id", None), getattr(tok, "eos_token_id", None)):
            if isinstance(cand, int):
                return cand
        return 0

    # ------------------------------------------------------------------------------------------------------
    # reference forward (tests): plain full forward, all logits

    def reference_logits(self, ids: Sequence[int], *, last_only: bool = False) -> Any:
        """float32 logits of a plain forward over ``ids`` (no cache) at every position, or at the last one only
        (``last_only``, as ``generate`` does): for tests."""
        import torch

        kwargs: dict[str, Any] = {"use_cache": False}
        if last_only and self._has_logits_to_keep:
            kwargs["logits_to_keep"] = 1
        with torch.inference_mode():
            out = self.loaded.model(input_ids=torch.tensor([list(ids)], dtype=torch.long,
                                                           device=self.loaded.device), **kwargs)
        return out.logits[0].float()


def _finite(x: float) -> bool:
    return math.isfinite(x)
