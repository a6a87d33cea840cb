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
# # Data and first stage
#
# What the data layer and the first stage make of one data set: the counts after filtering and the
# temporal split, and, for every first stage and list length $K$ of the grid, how many test queries keep
# at least one ground-truth item in their top-$K$ (the first stage's *coverage*). Only those queries are
# reranked; relevant items are never injected.

# %% tags=["parameters", "hide-cell"]
dataset = "ml-100k"
label = None  # the data set's name in tables (default: dataset)
raw_dir = None  # raw files (None: the embedded ML-100K)
retrievers = ["lightgcn"]
K_values = [10]
seed = 42

# %% tags=["hide-input"]
# %matplotlib inline
from myst_nb import glue

from invarirank import compendium
from invarirank.data import load_prepared, prepare
from invarirank.grid._parameters import check_parameters
from invarirank.retrieval import retrieve

check_parameters(globals(), "data")  # what papermill injected: known names, right types

prepared = load_prepared(prepare(dataset, raw_dir=raw_dir))
glue("data_stats", compendium.data_stats_table(prepared.stats))

# %% [markdown]
# ## First-stage coverage
#
# For every first stage and $K$: the test queries whose top-$K$ holds a ground-truth item (kept) and
# those dropped, and the first stage's own effectiveness over all test queries.

# %% tags=["hide-input"]
stats = {
    (r, K): retrieve(prepared.path, retriever=r, k=K, seed=seed, progress=False).stats
    for r in retrievers
    for K in K_values
}
glue("coverage", compendium.coverage_table(stats, dataset=label or dataset))

# %% [markdown]
# ## Training curves

# %% tags=["hide-input"] mystnb={"image": {"alt": "Line chart: the first stage's training loss per epoch, one line per retriever.", "width": "100%"}}
compendium.figure_training_loss({r: stats[(r, K_values[0])] for r in retrievers}, dataset=label or dataset)
