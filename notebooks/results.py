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
#
# This notebook collects every finished run under `results/<grid>/<run>/` (the teaching lab's simulated
# sweep excepted) and builds the paper's Table 1, Figure 1 and Figure 2 from them, with the paired comparisons
# that say which of the paper's claims our runs reproduce, contradict or leave unresolved; it puts the paper's own
# Table 1 beside ours, compares the method orderings under each metric, compares the two scorers, and reports what
# each method cost. Every value is read from a run's `metrics.json` or `manifest.json` (or, for the exposure
# bands, its observations); the experiments chapter glues the tables, figures and sentences from here.
#
# **Which runs set Table 1 and the figures.** The evidence grid (`configs/grid-evidence.yaml`: 40 queries, M = 20)
# once its main run and its K sweep are complete under `results/evidence/`; until then the grid this page was
# executed for (the default grid of `make book`: a handful of queries, M = 8). A run folder that does not hold all
# of a finished run's files (for example one with only `shards/`) is never shown.

# %% tags=["parameters", "hide-cell"]
grid = "default"            # the grid whose runs are the main results (until the evidence grid is complete)
results_dir = None          # None: <repository>/results
paper_table = None          # None: <repository>/book/data/paper_table1.csv
include_simulated = False   # simulated runs belong to the teaching lab; True only for smoke builds and tests
main_run = None             # the run that sets Table 1 (None: the one with the most methods)
grid_file = None            # informational: the grid file that was executed
evidence_grid_file = None   # None: <repository>/configs/grid-evidence.yaml; an empty string: never switch

# %% tags=["hide-input"]
# %matplotlib inline
from pathlib import Path

from IPython.display import HTML, display
from myst_nb import glue

from invarirank import compendium
from invarirank.grid import load_grid, project_root
from invarirank.grid import main_run as grid_main_run

root = project_root()
results_dir = Path(results_dir) if results_dir else root / "results"
paper_table = Path(paper_table) if paper_table else root / "book" / "data" / "paper_table1.csv"
runs = compendium.collect_runs(results_dir)
if not include_simulated:
    runs = [r for r in runs if r.scorer != "simulated"]

# The switch: the evidence grid's main run and every run of its setting (data set, first stage, model, scorer:
# its K sweep) must all be complete; the names come from the grid file, never typed here.
evidence_path = root / "configs" / "grid-evidence.yaml" if evidence_grid_file is None else evidence_grid_file
needed, evidence = [], None
if evidence_path and Path(evidence_path).is_file():
    evidence = load_grid(evidence_path)
    ev_main = grid_main_run(evidence)
    setting = (ev_main.data_label, ev_main.retriever, ev_main.model_name, ev_main.scorer)
    needed = [c.run_name for c in evidence.runs
              if (c.data_label, c.retriever, c.model_name, c.scorer) == setting]
preferred = evidence.name if evidence else grid
shown, missing = compendium.grid_to_show(results_dir, preferred, needed, grid)
if evidence is not None and shown == evidence.name and shown != grid:
    main_run = ev_main.run_name
progress = {c.run_name: (compendium.committed_queries(results_dir, c.grid, c.run_name), c.n_queries)
            for c in (evidence.runs if evidence else []) if c.run_name in missing}
shown_sentence = compendium.shown_grid_sentence(shown, preferred, grid, needed, missing,
                                                grid_file=Path(evidence_path).name if evidence else "",
                                                progress=progress)
glue("shown_grid", HTML(f"<p>{compendium.html_escape(shown_sentence)}</p>"))

main_runs = [r for r in runs if r.grid == shown]
if not main_runs:
    raise RuntimeError(f"no finished runs of grid {shown!r} under {results_dir}")
main = compendium.main_run(main_runs, main_run)  # the Table 1 setting
table_runs = [r for r in main_runs if r.scorer == main.scorer]  # span vs choice: further below
sweep = compendium.sweep_runs(main_runs, main)  # same data set, model and scorer at every K
paper = compendium.paper_table(paper_table)
print(f"{len(runs)} finished runs ({len(main_runs)} of grid {shown!r}); main run: {compendium.run_setting(main)}")
print("K sweep:", ", ".join(f"K = {r.K} ({', '.join(r.methods)})" for r in sweep))

# %% [markdown]
# ## What was run
#
# The paper's setting beside the one of the runs shown here. Both of our grids are scaled down to two CPU
# cores: the default grid so that `make book` finishes in about 20 minutes, the evidence grid (computed on
# purpose, run by run) so that the paired comparisons can tell the methods apart; the reproducing chapter shows
# how to run the paper's own grid on a GPU.

# %% tags=["hide-input"]
scale = compendium.scale_table(main_runs)
glue("scale_table", scale)
glue("main_setting", compendium.run_setting(main), display=False)
glue("main_queries", main.n_queries, display=False)
glue("main_K", main.K, display=False)
glue("main_M", main.M, display=False)

# %% [markdown]
# ## Table 1: effectiveness and consistency
#
# HR@5 and nDCG@5 (higher is better), PPI and GPI (lower is better) and LOC (Kendall's $\tau$, higher is
# better) per model and method, per data set, at the main run's $K$, with 95% bootstrap intervals over
# queries. Each cell of a metric the paper makes a claim about also marks the claimed pairs on the row of the
# method the paper finds better: ● resolved in the paper's direction, ✗ resolved against it, ○ unresolved.

# %% tags=["hide-input"]
t1 = compendium.table1(table_runs, K=main.K)
glue("table1", t1)
models = list(dict.fromkeys(compendium.model_label(r.model) for r in table_runs if r.K == main.K))
second = (f"Table 1 shows {len(models)} models side by side: {', '.join(models)}, each with its own queries "
          f"(see the caption) and its own verdicts below." if len(models) > 1 else
          f"Table 1 shows one model, {models[0]}; a second model's run at K = {main.K} joins it (and the verdicts) "
          f"once it is complete.")
glue("second_model", HTML(f"<p>{compendium.html_escape(second)}</p>"))

# %% [markdown]
# ## The paper's claims: reproduced, contradicted or unresolved?
#
# The methods of a run see the same queries under the same presented orders, so they are compared *paired*, query
# by query: for each claimed pair, the mean per-query difference with a paired bootstrap interval and a paired
# sign-flip p-value, Holm-corrected over the pairs of one claim. A claim is **reproduced** when every pair is
# resolved (adjusted p < 0.05) in the paper's direction, **contradicted** when some pair is resolved the other
# way, and **unresolved** otherwise. Everything below is computed from the runs' `metrics.json`.

# %% tags=["hide-input"]
verdict_runs = [r for r in table_runs if r.K == main.K]
glue("verdicts", HTML(compendium.verdicts_html(verdict_runs)))
claims = compendium.claims_table(verdict_runs)
glue("claims_table", claims if claims is not None else HTML("<p>No run shown here has verdicts.</p>"))

# %% tags=["hide-input"]
pairs = compendium.pairwise_table(main)
glue("pairwise", pairs if pairs is not None else HTML("<p>The main run has no paired comparisons.</p>"))

# %% [markdown]
# ### Beside the paper's Table 1
#
# The paper's values are at $K = 25$ with 3–7 B models on MovieLens-32M and Amazon Books; ours come from
# a far smaller model and data set, so the absolute values are not comparable. What can be compared is
# the *ordering* of the methods, below.

# %% tags=["hide-input"]
t1p = compendium.beside_paper(table_runs, paper, K=main.K)
glue("table1_paper", t1p)

# %% [markdown]
# ## Figure 1: top-5 exposure by input position
#
# For each $K$ of the sweep, the share of rows in which the candidate shown at input position $p$ reached
# the top 5, one line per method with a 95% bootstrap band over queries; the dashed line is what a
# position-blind reranker gets ($5/K$).

# %% tags=["hide-input"]
fig1 = compendium.figure_exposure(sweep)
glue("figure1", fig1)

# %% [markdown]
# ## Figure 2: PPI and GPI across $K$
#
# One line per method at the list lengths where it was run, with 95% bootstrap intervals over queries.

# %% tags=["hide-input"]
fig2 = compendium.figure_k_sweep(sweep)
glue("figure2", fig2)

# %% [markdown]
# ## Method orderings and their agreement
#
# Under each metric, the methods best first as *observed* (whether each step is resolved is the business of the
# verdicts above); then Kendall's $\tau$ between every two of these orderings. The paper finds SGS >
# bootstrapping > zero-shot > STELLA_LW on LOC, the same methods best first on PPI and GPI (lower values), while
# HR@5 and the exposure deviation order the methods differently.

# %% tags=["hide-input"]
ords = compendium.orderings(main)
glue("orderings", ords)

# %% tags=["hide-input"]
agree = compendium.ordering_agreement(main)
glue("agreement", agree)

# %% tags=["hide-input"]
sentence = compendium.paper_ordering_sentence(main)
glue("paper_ordering", HTML(f"<p>{compendium.html_escape(sentence)}</p>"))

# %% tags=["hide-input"]
summary = compendium.summary_sentence(main)
glue("summary_sentence", HTML(f"<p>{compendium.html_escape(summary)}</p>"))

# %% [markdown]
# ## Scorer comparison: span vs choice
#
# The span scorer (the authors' template: mean log-probability of each candidate's own tokens) against
# the choice scorer (the paper's wording: next-token log-probability of each candidate's label), on the
# same data, model and $K$.

# %% tags=["hide-input"]
cmp = compendium.scorer_comparison(main_runs)
if cmp is None:
    cmp = HTML("<p>No pair of span and choice runs on the same data set, model and K in this grid.</p>")
glue("scorer_comparison", cmp)

# %% [markdown]
# ## Cost per method

# %% tags=["hide-input"]
cost = compendium.cost_table(main_runs)
glue("cost", cost)

# %% [markdown]
# ## Other grids
#
# Finished runs of other grids (the default grid once the evidence grid is shown, the evidence grid's finished
# runs before that, the paper-scale grid once someone has run it on a GPU) are shown here with the same tables.

# %% tags=["hide-input"]
others = compendium.other_grids(runs, shown)
if not others:
    print("No finished runs of other grids.")
for name, group in others.items():
    display(HTML(f"<h3>Grid {compendium.html_escape(name)}</h3>"))
    display(compendium.table1(group, K=compendium.main_k(group)))
    group_claims = compendium.claims_table([r for r in group if r.K == compendium.main_k(group)])
    if group_claims is not None:
        display(group_claims)
    display(compendium.beside_paper(group, paper, K=compendium.main_k(group)))
    for setting, sweep_group in compendium.setting_groups(group).items():
        display(HTML(f"<h4>{compendium.html_escape(setting)}</h4>"))
        display(compendium.figure_exposure(sweep_group))
        display(compendium.figure_k_sweep(sweep_group))
        sentence = compendium.paper_ordering_sentence(compendium.main_run(sweep_group))
        display(HTML(f"<p>{compendium.html_escape(sentence)}</p>"))
