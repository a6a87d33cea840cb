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
# sweep excepted) and builds the paper's Table 1, Figure 1 and Figure 2 from them, puts the paper's own
# Table 1 beside ours, compares the method orderings under each metric, compares the two scorers, and
# reports what each method cost. Every value is read from a run's `metrics.json` or `manifest.json`
# (or, for the exposure bands, its observations); the experiments chapter glues the tables and figures
# from here.

# %% tags=["parameters", "hide-cell"]
grid = "default"            # the grid whose runs are the main results
results_dir = None          # None: <repository>/results
paper_table = None          # None: <repository>/book/data/paper_table1.csv
include_simulated = False   # simulated runs belong to the teaching lab; True only for smoke builds
main_run = None             # the run that sets Table 1 (None: the one with the most methods)
grid_file = None            # informational: the grid file that was executed

# %% tags=["hide-input"]
# %matplotlib inline
from pathlib import Path

from IPython.display import HTML, display
from myst_nb import glue

from invarirank import compendium
from invarirank.grid import project_root

root = project_root()
results_dir = Path(results_dir) if results_dir else root / "results"
paper_table = Path(paper_table) if paper_table else root / "book" / "data" / "paper_table1.csv"
runs = compendium.collect_runs(results_dir)
if not include_simulated:
    runs = [r for r in runs if r.scorer != "simulated"]
main_runs = [r for r in runs if r.grid == grid]
if not main_runs:
    raise RuntimeError(f"no finished runs of grid {grid!r} under {results_dir}")
main = compendium.main_run(main_runs, main_run)  # the Table 1 setting
table_runs = [r for r in main_runs if r.scorer == main.scorer]  # span vs choice: further below
sweep = compendium.sweep_runs(main_runs, main)  # same data set, model and scorer at every K
paper = compendium.paper_table(paper_table)
print(f"{len(runs)} finished runs ({len(main_runs)} of grid {grid!r}); main run: {compendium.run_setting(main)}")
print("K sweep:", ", ".join(f"K = {r.K} ({', '.join(r.methods)})" for r in sweep))

# %% [markdown]
# ## What was run
#
# The paper's setting beside the one of the runs shown here. The default grid is scaled down so that
# `make book` finishes in about 20 minutes on two CPU cores; the reproducing chapter shows how to run
# the paper's own grid on a GPU.

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
# queries.

# %% tags=["hide-input"]
t1 = compendium.table1(table_runs, K=main.K)
glue("table1", t1)

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
# Under each metric, the methods best first; then Kendall's $\tau$ between every two of these orderings.
# The paper finds SGS > bootstrapping > zero-shot > STELLA_LW on LOC, the same methods best first on PPI
# and GPI (lower values), while HR@5 and the exposure deviation order the methods differently.

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
# Finished runs of other grids (for example the paper-scale grid, once someone has run it on a GPU)
# are shown here with the same tables.

# %% tags=["hide-input"]
others = compendium.other_grids(runs, grid)
if not others:
    print("No finished runs of other grids.")
for name, group in others.items():
    display(HTML(f"<h3>Grid {compendium.html_escape(name)}</h3>"))
    display(compendium.table1(group, K=compendium.main_k(group)))
    display(compendium.beside_paper(group, paper, K=compendium.main_k(group)))
    for setting, sweep_group in compendium.setting_groups(group).items():
        display(HTML(f"<h4>{compendium.html_escape(setting)}</h4>"))
        display(compendium.figure_exposure(sweep_group))
        display(compendium.figure_k_sweep(sweep_group))
        display(HTML(f"<p>{compendium.html_escape(compendium.paper_ordering_sentence(compendium.main_run(sweep_group)))}</p>"))
