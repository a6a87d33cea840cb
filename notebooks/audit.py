# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Auditing your own reranker
#
# The measures of this book — PPI, GPI, LOC and the exposure curve — ask one question of *any* listwise reranker:
# does its ranking survive when the same candidates are shown in another order? Nothing in them needs the
# project's own scorers. This chapter audits a reranker the project did not build: a small instruct model behind
# a real OpenAI-compatible server (vLLM's CPU build, on the loopback interface), asked RankGPT-style to *write* its
# ranking as `[B] > [A] > [C] …`. Its answers are read strictly and every answer that cannot be read is counted,
# never silently replaced. It is set beside the project's own log-probability rerankers on the same users, the same
# candidates and the same presented orders.
#
# Nothing on this page runs a model: it reads a committed audit run (`results/audits/paper-cpu-k15-generate/`,
# written by `invarirank audit --server …`; its `journal.jsonl` holds every request and answer) and the committed
# paper-cpu run at K = 15 (`results/paper-cpu/smollm2-span-k15/`), and computes the measures from their
# observation files.

# %% tags=["parameters", "remove-cell"]
audit_dir = None  # None: the checkout's results/audits/paper-cpu-k15-generate
run_dir = None  # None: the checkout's results/paper-cpu/smollm2-span-k15 (the project's rerankers, same users)

# %% tags=["remove-cell"]
from IPython.display import Markdown, display
from myst_nb import glue

from invarirank.compendium import _audit_tables as audit_tables
from invarirank.grid._parameters import check_parameters

check_parameters(globals(), "audit")  # what papermill injected: known names, right types

audit_dir, run_dir = audit_tables.committed_folders(audit_dir, run_dir)
cmp = audit_tables.compare_with_run(audit_dir, run_dir)
facts = audit_tables.audit_facts(cmp)
paired = audit_tables.paired_orders(cmp)
glue("audit_users", facts["users"], display=False)
glue("audit_run_users", facts["run_users"], display=False)
glue("audit_m", facts["M"], display=False)
glue("audit_k", facts["K"], display=False)
glue("audit_rows", facts["rows"], display=False)
glue("audit_model", facts["model"], display=False)
glue("audit_paired", paired, display=False)
glue("audit_unparsable", f"{facts['unparsable_share']:.0%}", display=False)

# %% [markdown]
# ## The audit
#
# The served reranker is {glue:text}`audit_model` (the project's embedded Qwen2.5-Coder-0.5B-Instruct, float32),
# asked through `/v1/chat/completions` with greedy decoding (temperature 0, a fixed seed) for the whole ranking of
# K = {glue:text}`audit_k` candidates; the prompt is the project's choice prompt (the user's history, the candidates
# labelled `[A]`, `[B]`, … in the presented order) with the question replaced by RankGPT's. It saw a prefix of the
# paper-cpu grid's {glue:text}`audit_run_users` users in run order ({glue:text}`audit_users` of them, with the
# candidates that run reranked), each under M = {glue:text}`audit_m` seeded presented orders:
# {glue:text}`audit_rows` generations. On the project's busy two-core CPU machine one generation of this model took
# one to two minutes even with four to eight requests batched together, which is why the audit stops at so few
# users; the same command on a machine with more to spare audits every user (it resumes from the journal). The
# project's own SmolLM2-135M was tried first and, in a short trial, wrote no parsable ranking at all (it lists titles
# and genres until the token limit), so the audit uses the larger model. The presented orders are the very orders
# the project's rerankers saw ({glue:text}`audit_paired` user × order pairs, checked), so every comparison below is
# paired.
#
# ### Parse quality
#
# A generated ranking is read **strictly**: the whole answer must be labels in brackets joined by `>`. An answer
# that is anything else is *unparsable* and contributes no id; the order rule then completes every ranking the
# same stated way (unknown labels dropped, duplicates dropped, missing candidates appended in presented order) and
# counts what it changed. {glue:text}`audit_unparsable` of this model's answers were unparsable.

# %%
audit_tables.parse_table(cmp)

# %% [markdown]
# Rows: answers (`rows`); answers not read as a ranking (`unparsable`); answers stopped at the token limit
# (`truncated`); reasoning blocks removed (`reasoning`); rows the order rule changed (`repaired_rows`) and the ids
# it appended (`missing`) or dropped (`duplicate`, `unknown`: a label that names no candidate). The project's own
# rerankers rank by scores, so their rankings are always complete and need no such table.
#
# ### The paper's measures, side by side
#
# The same users, the same candidates, the same presented orders, the same evaluation (cut-offs 1, 5 and 10,
# exposure over the top 5, 1,000 bootstrap replicates over users). PPI and GPI: lower is more position-invariant;
# LOC: higher is more consistent across orders.

# %%
audit_tables.measures_table(cmp)

# %% [markdown]
# Exposure@5 by presented position (1 = shown first): the share of the M orders in which the candidate shown
# there ends in the top 5. A position-blind reranker gives every position 5 / K.

# %%
audit_tables.exposure_table(cmp)

# %% [markdown]
# ### The sister measures
#
# What rank-stability studies and evaluation libraries report, from the same rows: agreement between the rankings of pairs of orders (Spearman's ρ, the top-5 Jaccard overlap, the share
# of pairs that put the same candidate first), the relevant item's rank and its spread across orders, the share of
# candidate pairs whose order ever flips, and the share of intransitive triads in the majority preferences. Each is
# defined in {ref}`the metrics chapter <sister-measures>`.

# %%
audit_tables.sister_table(cmp)

# %% [markdown]
# ### What the verdicts rest on

# %% tags=["remove-input"]
display(Markdown(audit_tables.basis_sentences(cmp)))

# %% [markdown]
# ## Three ways in
#
# An audit needs a candidates file (one query per line: the user's history, the candidates in the first stage's
# order, the ground truth; `invarirank.candidates`, or `ir.Query` objects) and a reranker, by any of three doors.
# Each writes the same observations file that every run of this book writes, so `invarirank evaluate` and this
# chapter's tables read them all alike.
#
# **A Python callable.** An *order* callable gets the query and the presented candidates (in the order shown) and
# returns their ids, best first; `ir.audit.from_scores` takes one that returns a score per presented candidate.
#
# ```python
# import invarirank as ir
#
#
# def by_title(query, presented):
#     """My reranker: the presented candidates' ids, best first."""
#     return [item.item_id for item in sorted(presented, key=lambda item: item.title)]
#
#
# rows = ir.audit(ir.audit.from_order(by_title, name="by-title"), "candidates.jsonl", M=20, seed=42)
# ir.write_observations("by-title.observations.jsonl", rows)
# overall = ir.evaluate(rows)["methods"]["by-title"]["overall"]
# print(f"PPI {overall['ppi']:.3f}, GPI {overall['gpi']:.3f}, LOC {overall['loc']:.3f}")
# ```
#
# The same from the command line: `invarirank audit --callable my_module:by_title --returns order
# --candidates candidates.jsonl --out runs/by-title`.
#
# **A served model.** Any OpenAI-compatible server (vLLM, llama.cpp's server, a hosted API), by label
# log-probabilities (`--mode logprobs`) or by a generated ranking (`--mode generate`). This chapter's audit is this
# command, given the candidates of the paper-cpu run's first users:
#
# ```bash
# invarirank audit --server http://127.0.0.1:8000/v1 --model qwen2.5-coder-0.5b --mode generate \
#     --candidates candidates.jsonl --design random --m 20 --seed 42 --concurrency 8 --timeout 1800 \
#     --out results/audits/paper-cpu-k15-generate
# ```
#
# Every request and answer goes to the run folder's `journal.jsonl`, so an audit stopped half-way resumes with
# the same rows.
#
# **Another tool's logs.** A TREC run (with the presented orders beside it, `RUN.presented.jsonl`, and the
# ground truth, `RUN.qrels`), rank_llm's request and result files, or the authors' harness output become an
# observations file. Round trip of the callable's rows through a TREC run:
#
# ```bash
# invarirank export trec by-title.observations.jsonl --out by-title.run
# invarirank import trec by-title.run --out by-title.imported.jsonl
# invarirank evaluate by-title.imported.jsonl
# ```
