"""The shared machinery of the real (model-backed) scorers: options, pass plans, length limits, the pass cache and
the dispatch of the missing passes to batched forwards.

A scorer turns (query, presented order) into a :class:`PassPlan`: the canonical ids of the whole prompt text (what
the tokenizer gives for it, :mod:`invarirank.llm._tokens`) cut at character offsets into the shared ``prefix`` (BOS
+ instruction + history), the order-specific ``suffix`` ids that must be computed, a ``tail`` that no score depends
on (computed only by the naive path), the suffix positions whose logits are read (``needed``) and what to read
there. :meth:`CausalLMScorer.plan` checks that the plan's ids are the canonical ids of its text (an error naming
the model, token, character offset and prompt segment otherwise). The engine then

1. looks the serialised prompt up in the persistent pass cache (:mod:`invarirank.llm._persistent_cache`); a hit
   costs no model work;
2. otherwise gets the prefix's key/value cache from the :class:`~invarirank.llm._prefix.PrefixStore` (computing it
   once per query), forks it and runs **one forward pass** over the suffix, asking the model for logits only at
   the ``needed`` positions (:mod:`invarirank.llm._forward`);
3. reduces those logits to one float32 score per candidate (subclass) and stores them in the pass cache.

Steps 2-3 (batch schedule, prefix caches, forwards, reduction) and :class:`PassPlan` are
:mod:`invarirank.llm._missing_passes`.

``naive=True`` turns all of that off (every pass a full forward over the whole prompt including its tail, logits
at every position, no pass cache): the reference the tests and the benchmark compare against.

Batching (:mod:`invarirank.llm._batching`, pure logic): :meth:`CausalLMScorer.score_batch` computes the missing
passes of one query in batches of ``batch_size`` (default 8 on CUDA, 1 on the CPU where batching does not pay).
:meth:`CausalLMScorer.score_requests` takes requests of *several* queries (a worker's window of queries in
lockstep). With ``max_batch_tokens`` set (and prefix reuse on plain ``DynamicLayer`` caches: Llama, Mistral without
a window, Qwen 2), the pending suffixes of all queries are sorted by length and packed into batches of at most
``max_batch_tokens`` computed positions, never padding beyond what batches per prefix would compute; each row keeps
its own query's history prefix — computed once per query. Without it, requests are batched per prefix.

Options: one table per scorer kind (:mod:`invarirank.llm._options`), read by the constructors and by the config
check. Work accounting in ``scorer.stats`` (:mod:`invarirank.llm._accounting`); ``ScoreResult.tokens`` is the number
of positions computed for that call (a query's prefix is charged to the call that computed it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from invarirank.errors import InvariRankError
from invarirank.types import HistoryEntry, Item, Query, ScorerBase, ScoreResult

from ._accounting import flop_counts, new_counters
from ._forward import Forwards
from ._missing_passes import MissingPasses, PassPlan
from ._options import CAUSAL_LM_OPTIONS, Option, resolve_options
from ._persistent_cache import PersistentPassCache, default_cache_path, pass_key
from ._prefix import PrefixStore
from ._prompts import TEMPLATE_VERSION
from ._tokens import PromptTokenizer

#: Default prompt limit (the paper's models run with a maximum length of 4096), capped by the model's.
DEFAULT_MAX_LENGTH = 4096


class CausalLMScorer(MissingPasses, ScorerBase):
    """Base class of :class:`~invarirank.llm._span.SpanScorer` and :class:`~invarirank.llm._choice.ChoiceScorer`.

    ``model``: registry name (default ``"smollm2-135m"``), local folder, Hub id, or a
    :class:`~invarirank.llm.models.LoadedModel`; ``seed`` (recorded only: scoring is deterministic); ``cache_dir``:
    folder of the persistent pass cache (default ``cache_dir()/passes``). The options (all keyword, all optional)
    are those of :data:`invarirank.llm._options.CAUSAL_LM_OPTIONS`, with their defaults and checks there:
    ``device`` (``"auto"``), ``dtype`` (auto: bf16 on CUDA, fp32 on CPU), ``threads`` (CPU threads; default: the
    CPUs available), ``attn_implementation``, ``allow_download``; ``pass_cache`` (True; False: no cache;
    ``"memory"``: this process only); ``prefix_reuse`` (True); ``logits`` (``"needed"`` or ``"all"``);
    ``batch_size`` (8 on CUDA, 1 on CPU); ``max_batch_tokens`` (None; a number: batches across queries packed by
    this token budget, see the module docstring); ``max_length`` (default min(4096, the model's limit));
    ``truncate_history`` (False: an over-long prompt is an error naming the query; True: drop the oldest history
    entries until the query's longest prompt fits); ``naive`` (False; True: reference path, see the module
    docstring); ``prefix_cache_size`` (2 prefixes kept).
    """

    kind = "base"
    VERSION = "1"
    #: the options this class's constructor takes (a subclass takes its own and passes these on); a config is
    #: checked against its kind's table in :data:`invarirank.llm.factory.SCORER_OPTIONS`
    OPTIONS: Mapping[str, Option] = CAUSAL_LM_OPTIONS

    def __init__(self, model: Any = "smollm2-135m", *, seed: int = 0, cache_dir: Any = None, **options: Any):
        o = resolve_options(CAUSAL_LM_OPTIONS, options, f"{self.kind} scorer")
        load = {name: o[name] for name, opt in CAUSAL_LM_OPTIONS.items() if opt.load}
        self.backend = str(o["backend"])
        if self.backend == "vllm":
            if o["naive"]:
                raise InvariRankError(f"{self.kind} scorer: naive=True is the hf backend's reference path, not vllm's")
            if load["device"] == "auto":  # this process only tokenizes and hashes; vLLM holds the model it runs
                load["device"] = "cpu"
        from .models import LoadedModel, load_model

        if isinstance(model, LoadedModel):
            self.loaded = model
        else:
            self.loaded = load_model(model or "smollm2-135m", **load)
        if self.loaded.device.type == "cpu":
            from ._devices import set_threads

            set_threads(o["threads"])
        self.seed = int(seed)
        self.naive = bool(o["naive"])
        self.prefix_reuse = bool(o["prefix_reuse"]) and not self.naive
        self.trim_tail = not self.naive
        on_cuda = self.loaded.device.type == "cuda"
        self.batch_size = max(1, int(o["batch_size"] if o["batch_size"] is not None else (8 if on_cuda else 1)))
        self.max_batch_tokens = None if o["max_batch_tokens"] is None else int(o["max_batch_tokens"])
        model_max = int(self.loaded.max_length)
        max_length = o["max_length"]
        self.max_length = int(max_length) if max_length is not None else min(DEFAULT_MAX_LENGTH, model_max)
        if self.max_length > model_max:
            raise InvariRankError(
                f"{self.kind} scorer: max_length {self.max_length} exceeds the model's limit "
                f"{model_max} ({self.loaded.name})"
            )
        self.truncate_history = bool(o["truncate_history"])
        self.encoder = PromptTokenizer(self.loaded.tokenizer, self.loaded.name)
        self._prefixes = PrefixStore(o["prefix_cache_size"])
        self.prefix_reuse_note: str | None = None
        self._history_memo: dict[tuple, int] = {}
        pass_cache = o["pass_cache"]
        if self.naive or pass_cache is False:
            self.pass_cache: PersistentPassCache | None = None
        elif pass_cache == "memory":
            self.pass_cache = PersistentPassCache(None)
        else:
            self.pass_cache = PersistentPassCache(default_cache_path(cache_dir))
        self.stats: dict[str, float] = new_counters()
        self.forwards = Forwards(self.loaded, lambda: self.stats, "all" if self.naive else o["logits"])
        self.vllm: Any = None
        if self.backend == "vllm":
            from ._vllm_backend import worker_for

            if self.loaded.folder is None:
                raise InvariRankError(
                    f"{self.kind} scorer: backend='vllm' needs a model folder; {self.loaded.name} has none"
                )
            # one more position than the longest prompt: vLLM counts the one token each request generates
            self.vllm = worker_for(
                self.loaded.folder,
                dtype=str(self.loaded.dtype).removeprefix("torch."),
                max_model_len=min(self.max_length + 1, model_max),
                seed=self.seed,
            )

    # ------------------------------------------------------------------------------------------------------
    # identity and stats

    def reset_stats(self) -> None:
        """All work counters back to zero (:mod:`invarirank.llm._accounting`)."""
        self.stats = new_counters()

    @property
    def logits_mode(self) -> str:
        """``"needed"`` (the output projection runs on the positions read only) or ``"all"``."""
        return self.forwards.logits_mode

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.loaded.name}"

    def score_options(self) -> dict[str, Any]:
        """Options that change the scores (part of the pass-cache key); subclasses extend."""
        return {}

    def template_json(self) -> dict[str, Any]:  # pragma: no cover - subclasses
        raise NotImplementedError

    def key_identity(self) -> dict[str, Any]:
        """What decides the scores besides the prompt (the pass-cache key's identity): scorer kind and version,
        template, weights and tokenizer hashes, dtype, device type, score options — no cache locations."""
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
            **self._backend_identity(),
        }

    def _backend_identity(self) -> dict[str, Any]:
        """``{}`` for the default ``hf`` backend (every existing key and fingerprint unchanged); for ``vllm`` its
        name, version and device type, since its scores differ from ``hf``'s within a tolerance, not bit for bit
        (:data:`invarirank.llm._vllm_backend.TOLERANCE`)."""
        if self.vllm is None:
            return {}
        from ._vllm_backend import probe

        return {"backend": {"name": "vllm", **probe(self.vllm.python)}}

    def close(self) -> None:
        """Stop the vLLM worker this scorer uses (shared with scorers on the same model; it restarts on their next
        request). The ``hf`` backend holds nothing to stop."""
        if self.vllm is not None:
            self.vllm.close()

    def identity(self) -> dict[str, Any]:
        """JSON-able description for manifests (model, hashes, dtype, device, template, options)."""
        ident = dict(self.loaded.identity())
        ident.update(
            {
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
                "pass_cache": None
                if self.pass_cache is None
                else ("memory" if self.pass_cache.path is None else "disk"),
                "seed": self.seed,
                **self._backend_identity(),
            }
        )
        return ident

    def model_flop_counts(self) -> dict[str, int]:
        """Parameter counts for the FLOP formula of the benchmark (:func:`invarirank.llm._accounting.flop_counts`)."""
        return flop_counts(self.loaded.model, self.forwards.shape)

    # ------------------------------------------------------------------------------------------------------
    # plans (subclasses)

    def _plan(self, query: Query, history: Sequence[HistoryEntry], presented: Sequence[Item]) -> PassPlan:
        raise NotImplementedError  # pragma: no cover

    def _reduce(self, plan: PassPlan, logits: Any) -> np.ndarray:
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

    def plan(self, query: Query, presented: Sequence[Item]) -> PassPlan:
        """The plan of one pass. Raises :class:`InvariRankError` for an over-long prompt and when the plan's ids
        are not the canonical ids of its text (see :mod:`invarirank.llm._tokens`)."""
        history = self._history_for(query, presented)
        plan = self._plan(query, history, presented)
        self.encoder.check_canonical(
            plan.text, plan.full_ids, plan.bos, plan.segments, f"{self.kind} prompt of query {query.query_id}"
        )
        shared = plan.text[: plan.segments[0][2]] if plan.segments else plan.text
        self.encoder.check_prefix(shared, plan.prefix, plan.full_ids, f"{self.kind} prompt of query {query.query_id}")
        if plan.full_length > self.max_length:
            dropped = len(query.history) - len(history)
            how = (
                f"even after dropping {dropped} of {len(query.history)} history items"
                if self.truncate_history
                else "; pass truncate_history=True to drop the oldest history items until it fits, or raise max_length"
            )
            raise InvariRankError(
                f"query {query.query_id}: the {self.kind} prompt has {plan.full_length} tokens, more than "
                f"max_length {self.max_length} of {self.loaded.name} {how}".replace(" ;", ";")
            )
        plan.extra["history_used"] = len(history)
        return plan

    def check_query(self, query: Query) -> None:
        """Plan the pass of the query's candidates in their given order: what every pass of the query must pass
        (a line that renders empty, a line merged with its delimiters, labels for K candidates, the prompt within
        ``max_length``) raises :class:`InvariRankError` here, before any scoring. Presented orders hold the same
        lines, so a query that passes fails later only if a reordering changes the prompt's length by the few
        tokens where two neighbouring lines merge."""
        self.plan(query, list(query.candidates))

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
        plans: dict[str, PassPlan] = {}
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
