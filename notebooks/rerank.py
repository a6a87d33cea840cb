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
# # Reranking run
#
# One reranking run: one data set, one first stage, one model and scorer, one list length $K$, and its methods,
# each applied to the same $M$ presented orders of every sampled query. `invarirank grid` computes every missing run
# first; `invarirank book` then executes this notebook once per run its grid file lists in `pages:`, so here the
# finished run is only read. To re-execute this page's run, pass each parameter of the collapsed cell below as `-p name value` (the
# results are reused, not recomputed); to run another setting, change them. The example below is not this page's
# run but the cheapest new one, a run of the default grid at $K = 15$ (the results chapter's section *Adding a run*
# gives the commands for each grid, their cost and where the run appears; `methods` is a comma-separated list):
#
# ```bash
# papermill --log-output notebooks/rerank.ipynb /tmp/rerank-k15.ipynb -p K 15 \
#     -p methods zero_shot,bootstrapping
# ```
#
# `--log-output` prints the run's progress bar (queries done, passes per second, time left on this machine) in the
# terminal as it goes; without it papermill shows only its cell counter, which stays on this long cell for the
# whole run. How long: the committed run of the same two methods at $K = 12$ scored its 120 passes in 87 s (its
# `run.json`); end to end, with the model load and the candidates of a new $K$, this example took about 25
# minutes on a busy 2-core machine. All four methods request about nine times the distinct passes (1,040).
#
# A finished run with the same settings under `results/<grid>/<run>/` is **reused**; otherwise the run is computed
# through the same runner (or resumed after an interruption: every run is computed in one-query shards, and each
# finished shard is kept) and published
# there, where the results chapter finds it. The parameters fill the one run schema (`invarirank.runner.RunConfig`:
# every setting it has is a parameter here). The collapsed cell below holds the parameters this page was executed
# with; the notebook's own defaults, the default grid's scaled-down settings with the paper's values in comments,
# are in `notebooks/rerank.py`.

# %% tags=["parameters", "hide-cell"]
grid = "default"  # results/<grid>/<run>/
name = None  # None: <dataset>-<retriever>-<model>-<scorer>-k<K>
dataset = "ml-100k"
label = None  # the data set's name in run names and tables (default: dataset)
raw_dir = None  # raw files (None: the embedded ML-100K)
retriever = "lightgcn"
model = "smollm2-135m"
scorer = "span"  # span | choice | simulated
K = 10  # candidates per query
M = 8  # presented orders per query (the paper: 20)
n_queries = 5  # test queries sampled (None: all kept ones; the paper: 500)
first_queries = None  # rerank only the first N of the sampled queries (None: all of them)
sample_k = 6  # sample queries among those kept at this K (the smallest K of a sweep)
methods = None  # None: all, in the paper's order
seed = 42
calibration_queries = 5  # STELLA_LW calibration: validation queries (the paper: 150) ...
calibration_repeats = 1  # ... and repeats per position (the paper: 5)
scorer_options = {}
device = "auto"
data_dir = None  # an already prepared data folder (None: prepared on demand)
retrieval_seed = 42
candidates = None  # a candidates file instead of the first stage
noise_floor = False  # True: M copies of one order
eval_ks = [1, 5, 10]
exposure_k = 5
n_bootstrap = 1000
cache_dir = None  # None: $INVARIRANK_CACHE
results_dir = None  # None: <project>/results
work_dir = None  # None: <project>/runs

# %% tags=["remove-cell"]
# %matplotlib inline
from IPython.display import Markdown, display

from invarirank import compendium
from invarirank.grid._parameters import check_parameters
from invarirank.runner import RunConfig, ensure_run

check_parameters(globals(), "rerank")  # what papermill injected: known names, right types

config = RunConfig.from_mapping(
    {k: v for k, v in dict(globals()).items() if k in RunConfig.field_names()}, "notebook parameters"
)
run_dir = ensure_run(config, results_dir, work_dir)
run = compendium.load_run(run_dir)

# %% tags=["remove-input"]
smoke = compendium.smallest_p(run.n_queries) >= 0.05 or run.scorer == "simulated"
lines = [
    f"**Run `{run.grid}/{run.name}`**: {compendium.run_setting(run)}; methods "
    f"{', '.join(compendium.METHOD_LABELS.get(m, m) for m in run.methods)}."
]
if smoke:
    lines.append(
        "**This is a smoke run**: it checks that the pipeline works end to end and resolves nothing. "
        + compendium.resolution_sentence(run)
        + (
            " Its scorer is simulated, so its numbers say nothing about language models."
            if run.scorer == "simulated"
            else ""
        )
    )
display(Markdown("\n\n".join(lines)))

# %% [markdown]
# ## Settings

# %% tags=["remove-input"]
compendium.run_settings_table(run)

# %% [markdown]
# ## Metrics
#
# HR@5 and nDCG@5 measure effectiveness; PPI, GPI and LOC the consistency of the induced preferences across the
# $M$ presented orders; the exposure MAD how far the top-5 exposure by input position is from flat (see the
# metrics chapter). Each value comes with its 95% bootstrap interval over queries. The two reference rows give the
# scale: the first stage's own ranking of the same candidates, and a uniformly random ranking.

# %% tags=["remove-input"]
display(compendium.run_table(run))
if compendium.reference_sentence(run):
    display(Markdown(compendium.reference_sentence(run)))

# %% [markdown]
# ## Top-5 exposure by input position

# %% tags=["remove-input"] mystnb={"image": {"alt": "Line chart of this run: the share of rows in which the candidate shown at each input position reaches the top 5, one line and marker per method with a shaded 95% band, and a dashed position-blind line at 5/K.", "width": "100%"}}
if run.K > 5:
    display(compendium.figure_exposure([run]))
    display(
        Markdown(
            "The share of rows in which the candidate shown at input position *p* reached the top 5, per "
            "method, with a 95% bootstrap band over queries. A reranker that ignores positions stays near "
            "the dashed line 5/*K*."
        )
    )  # plain text: Markdown outputs are not typeset by MathJax
else:  # no figure, so no caption either
    display(
        Markdown(
            f"At K = {run.K} every candidate reaches the top 5, whatever its input position: there is no "
            f"exposure curve to draw."
        )
    )

# %% [markdown]
# ## Method orderings (better ≻ worse)

# %% tags=["remove-input"]
display(
    compendium.orderings(run)
    if len(run.methods) > 1
    else Markdown("The run has one method: there is nothing to order.")
)

# %% [markdown]
# ## Cost

# %% tags=["remove-input"]
compendium.cost_table([run])
