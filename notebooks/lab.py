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
# # Teaching lab: a position bias you can dial
#
# Real language models mix position bias with everything else they do. Here the "model" is a
# **simulated scorer** whose position bias we choose, so we can watch what each metric and each
# mitigation does as the bias grows. All results on this page are simulated; none of them appear in the
# results chapter.
#
# **Learning goals.** After the lab a student can (1) say what PPI, GPI, LOC and the exposure curve each measure
# and why they can disagree; (2) predict what a primacy, recency or U-shaped bias does to the exposure curve;
# (3) tell an *observed* difference between two methods from a *resolved* one, and plan how many queries a
# comparison needs; (4) name a way in which a simulation can mislead about real models.
#
# **A 45-minute session.** 5 min: the scorer's formula below and the metrics chapter's first worked example.
# 10 min: the precomputed sweep (section 1) and its three things to notice. 10 min: the live run (section 2),
# each pair of students with another bias shape. 15 min: Exercises 1, 2 and 5 in pairs, then Exercise 6 in the
# whole group. 5 min: what carries over to the real runs of the results chapter and what does not.
#
# **For students:** <a href="../_static/lab-student.ipynb" download>lab-student.ipynb</a> (also the page's download
# button) is this notebook without the worked answers, generated from it when the book is built.
#
# {{ get_the_code }}
#
# The simulated score of the candidate $i$ shown at input position $p$ of a list of length $K$ is
#
# $$
# s_t(i) = u_{q,i} + r\,\mathbb{I}[i \in G_q] + \beta\, f(x) + \sigma\,\varepsilon_t(i),
# \qquad x = \frac{p}{K-1},
# $$
#
# with a latent utility $u_{q,i} \sim \mathcal{N}(0,1)$ fixed per (query, item), a relevance bonus $r$
# for the ground truth $G_q$, a position effect of strength $\beta$ and shape
# $f(x) = 1 - x$ (*primacy*: early positions win), $f(x) = x$ (*recency*), $f(x) = (2x-1)^2$ (*u*: both ends
# win) or $f = 0$ (*none*), and noise $\varepsilon_t(i) \sim \mathcal{N}(0,1)$ that depends on the whole
# presented order (the same input always gets the same scores, as with a real model). The values of $\sigma$
# and $r$ of the precomputed sweep are printed below, read from its runs; the live runs use the same. The
# scorer needs no
# model and no torch: this notebook runs on any laptop with the package's core and its `lab` extra
# (`pip install -e ".[lab]"` in a clone; jinja2 for the styled tables), and on Binder.

# %% tags=["parameters"]
results_dir = None  # None: the checkout's results/ (the sweep: results/lab/); outside a checkout, see lab_settings
lab_settings = None  # a grid file's lab: section: outside a checkout the sweep is computed from it (student version)
lab_grid = "lab"
shape = "primacy"  # for the live run: primacy | recency | u | none
strength = 1.5  # position effect, in utility standard deviations
K = 10
M = 10
n_queries = 20

# %%
# %matplotlib inline
from invarirank import compendium
from invarirank.compendium import _lab as lab
from invarirank.grid._lab import sweep_results
from invarirank.grid._parameters import check_parameters
from invarirank.runner._lab import live_run

check_parameters(globals(), "lab")  # what papermill injected: known names, right types

results_dir = sweep_results(results_dir, lab_settings)
sweep = lab.sweep_frame(results_dir, grid=lab_grid)
settings = lab.sweep_settings(results_dir, grid=lab_grid)
n_runs = len(sweep[["shape", "strength"]].drop_duplicates())
methods = ", ".join(compendium.METHOD_LABELS[m] for m in compendium.METHODS if m in set(sweep.method))
print(f"noise σ = {settings['noise_sd']:g}, relevance bonus r = {settings['relevance']:g} (utility s.d. = 1)")
print(f"precomputed sweep: {n_runs} (shape, strength) runs; methods {methods}")

# %% [markdown]
# ## 1. The precomputed sweep
#
# For every bias shape and strength, the four methods were run on the same synthetic candidate sets
# (`results/lab/<shape>-s<strength>/`, made by `invarirank grid configs/grid-default.yaml` from the `lab:`
# section of that grid file). Each panel shows one metric against the bias strength, one line per method, with its
# 95% bootstrap interval over queries.

# %% mystnb={"image": {"alt": "A grid of small line charts: one column per bias shape, one row per metric (PPI, GPI, LOC, HR@5, exposure MAD), each metric against the bias strength, one line and marker per method with a shaded 95% band.", "width": "100%"}}
lab.figure_sweep(sweep)

# %% [markdown]
# For a slide, one panel at a time (any metric and shape):

# %% mystnb={"image": {"alt": "One line chart for a slide: PPI against the strength of a simulated primacy bias, one line and marker per method with a shaded 95% band.", "width": "100%"}}
lab.slide_panel(sweep, "ppi", "primacy")

# %% [markdown]
# Things to notice:
#
# - With no position effect (strength 0) PPI and GPI are not zero and LOC is not one: the order-dependent
#   noise alone makes the preferences wobble. This is the *noise floor* of the metrics.
# - As the bias grows, the exposure deviation of zero-shot reranking grows with it, and so do PPI and GPI.
# - A method can flatten exposure without making the preferences consistent: compare the exposure panel
#   with the PPI panel for STELLA_LW.

# %% [markdown]
# ## 2. Try it yourself
#
# The cell below runs all four methods live with the parameters above (`shape`, `strength`, `K`, `M`,
# `n_queries`): change them and run it again. It takes a few seconds. `live_run` writes synthetic candidate sets
# (`invarirank.data._synthetic`) and runs them through the same runner as every other run; the tables and figures
# below only read the finished run (`invarirank.compendium`).

# %%
live = live_run(shape, strength, K=K, M=M, n_queries=n_queries)
compendium.run_table(live)

# %% mystnb={"image": {"alt": "Line chart of the live run: top-5 exposure against input position, one line and marker per method with a shaded 95% band, and the dashed position-blind line.", "width": "100%"}}
compendium.figure_exposure([live])

# %%
compendium.orderings(live)

# %% [markdown]
# ## 3. Exercises
#
# Each exercise has a worked answer, hidden until you open it.
#
# **Exercise 1.** Run the live cell with `shape = "none"`. Zero-shot reranking now has no position bias at
# all. Is its PPI zero? Why (not)?
#
# ```{admonition} Worked answer
# :class: dropdown
# No. Without a position effect the score still carries noise that changes with the presented order, so
# two candidates with close utilities swap places between orders, and their preference differs between
# position cells. PPI, GPI and LOC therefore have a floor set by the noise (compare the strength-0 points
# of the sweep). The exposure curve, on the other hand, is flat up to sampling error: noise that does not
# depend on the position cannot favour a position. The cell below computes both.
# ```

# %% tags=["hide-cell"]
none = live_run("none", 0.0, K=K, M=M, n_queries=n_queries)
ov = none.metrics["methods"]["zero_shot"]["overall"]
print(
    f"no position effect: zero-shot PPI {ov['ppi']:.3f}, LOC {ov['loc']:.3f}, exposure MAD {ov['exposure_mad@5']:.3f}"
)

# %% [markdown]
# **Exercise 2.** In the sweep, which method has the flattest exposure (smallest exposure MAD) at the
# strongest primacy bias, and is it also the method with the lowest PPI?
#
# ```{admonition} Worked answer
# :class: dropdown
# Read both orderings from the sweep at the largest strength (the cell below does it). The paper's point
# is that the two need not coincide: flattening the *marginal* exposure by position says nothing about
# whether a given pair of candidates keeps its order when the two are moved around.
# ```

# %% tags=["hide-cell"]
strongest = sweep[(sweep["shape"] == "primacy") & (sweep.strength == sweep.strength.max())]
for metric in ("exposure_mad@5", "ppi"):
    s = strongest[strongest.metric == metric].sort_values("value")
    print(
        f"{compendium.METRIC_LABELS[metric]} (lower is better): "
        + " ≻ ".join(f"{compendium.METHOD_LABELS[m]} {v:.3f}" for m, v in zip(s.method, s.value))
    )

# %% [markdown]
# **Exercise 3.** The best-fitting ranking can never contradict more than half of the preference mass:
# $\min_\sigma D(\sigma) \le \binom{K}{2}/2$. Why? Which observations reach the bound?
#
# ```{admonition} Worked answer
# :class: dropdown
# Take any ranking $\sigma$ and its reverse $\bar\sigma$. Each pair $(i, j)$ contributes $q(i,j)$ to one of
# $D(\sigma), D(\bar\sigma)$ and $1 - q(i,j)$ to the other (every output ranks one of the two above the
# other, so $q(i,j) + q(j,i) = 1$). Hence $D(\sigma) + D(\bar\sigma) = \binom{K}{2}$, and the smaller of the
# two is at most $\binom{K}{2}/2$. The bound is reached when every pair is split exactly 50/50, as for the
# position follower of the metrics chapter: orders *abc* and *cba* returned unchanged give GPI $= 1/2$
# (the hidden cell computes it with the package). GPI itself uses the local search's ranking
# $\hat\sigma$; for $K \le 10$ `metrics.json` also reports `gpi_exact`, the exact minimum, so you can see
# how close the search came.
# ```

# %% tags=["hide-cell"]
from invarirank.evaluation import gpi

print("GPI of abc, cba returned unchanged:", gpi([["a", "b", "c"], ["c", "b", "a"]]))

# %% [markdown]
# **Exercise 4.** With the *u* shape (both ends of the list preferred), which input positions get the most
# top-5 exposure under zero-shot reranking, and what do bootstrapping and SGS do to that?
#
# ```{admonition} Worked answer
# :class: dropdown
# The first and the last positions, symmetrically; the middle is starved. Bootstrapping averages three
# orders, which dilutes the effect without removing it; SGS reshuffles after every pick, so the remaining
# candidates keep getting new positions and the curve flattens. The cell below runs it.
# ```

# %% tags=["hide-cell"] mystnb={"image": {"alt": "Line chart: top-5 exposure against input position under a U-shaped bias, for zero-shot, bootstrapping and SGS.", "width": "100%"}}
u = live_run("u", 2.0, K=K, M=M, n_queries=n_queries, methods=("zero_shot", "bootstrapping", "sgs"))
compendium.figure_exposure([u])

# %% [markdown]
# **Exercise 5 (observed versus resolved).** Run zero-shot and SGS on five queries with the live cell's bias
# shape. SGS's outputs typically come out more consistent across presented orders (a higher LOC) than
# zero-shot's: the difference is *observed*. Can a paired test *resolve* it (p < 0.05)? How many queries does it
# take at a given bias strength, and why can five queries never be enough, however strong the bias?
#
# ```{admonition} Worked answer
# :class: dropdown
# Five queries cannot resolve anything. The paired sign-flip test asks how often flipping the sign of each
# query's LOC difference (swapping the two methods' results on that query) gives a statistic at least as extreme as
# the observed one. With $n$ queries there are $2^n$ sign vectors, and the observed one and its negation are
# always at least as extreme, so $p \ge 2/2^n$: at $n = 5$ that is $2/32 = 0.0625 > 0.05$, whatever the bias
# (and Holm's correction over a claim's pairs only raises it). The first cell below computes it.
#
# How many queries it takes depends on the effect and its spread over queries: a pilot run gives the mean
# per-query difference $\bar d$ and its standard deviation $s$, and the normal approximation
# $n \approx ((z_{0.975} + z_{0.8})\, s / |\bar d|)^2$ estimates the queries that resolve it with 80% power
# (`queries_80` in `metrics.json`). The second cell does this at three bias strengths: it runs a pilot, a run of
# five queries and a fresh run of the planned size (other seeds, so the check does not reuse the pilot's
# queries). The weaker the bias, the smaller $\bar d$ relative to $s$ and the more queries; five queries stay
# unresolved at every strength, while the planned size resolves the difference in most fresh runs (80% power
# means that one run in five is expected to miss).
# ```

# %%
# Your turn (Exercise 5): zero-shot and SGS on five queries with the live cell's bias, then their paired comparison
# on LOC (SGS minus zero-shot; p < 0.05 resolves it). Change `n_queries`, or plan a size from a pilot run with
# lab.planned_queries(pilot, "loc", "sgs", "zero_shot") and run that many on a fresh seed.
five = live_run(shape, strength, K=K, M=M, n_queries=5, methods=("zero_shot", "sgs"), seed=1)
lab.resolution_table({strength: {"my run": five}}, "loc", "sgs", "zero_shot")

# %% tags=["hide-cell"]
from invarirank.evaluation import sign_flip_p

p5, exact = sign_flip_p([1.0] * 5)
print(
    f"five queries, SGS ahead of zero-shot on every one: sign-flip p = {p5:.4f} "
    f"({'all 2⁵ sign vectors' if exact else 'sampled'}), not below 0.05"
)

# %% tags=["hide-cell"]
pair, metric = ("sgs", "zero_shot"), "loc"  # SGS minus zero-shot on LOC: positive = SGS more consistent
methods = ("zero_shot", "sgs")
runs = {}
for bias in (0.5, 1.0, 2.0):
    pilot = live_run(shape, bias, K=K, M=M, n_queries=n_queries, methods=methods, seed=0)
    need = lab.planned_queries(pilot, metric, *pair)
    runs[bias] = {
        "five queries": live_run(shape, bias, K=K, M=M, n_queries=5, methods=methods, seed=1),
        f"pilot ({n_queries} queries)": pilot,
        "fresh run of the planned size": live_run(shape, bias, K=K, M=M, n_queries=need, methods=methods, seed=2),
    }
lab.resolution_table(runs, metric, *pair)

# %% [markdown]
# **Exercise 6 (when the simulation disagrees with the real runs).** In the paper, and in our real runs of the
# results chapter, SGS is more consistent than bootstrapping: lower PPI and GPI, higher LOC. The table below
# reads the same comparison from the precomputed sweep, for the primacy bias. What does the simulation say, and
# why might it differ from a real model?
#
# ```{admonition} Worked answer
# :class: dropdown
# In the simulation bootstrapping beats SGS on PPI, GPI and LOC at every strength: the opposite of the paper and
# of the real runs. The simulated scorer's order-dependence is a smooth position effect plus noise that is
# independent for every presented order. Bootstrapping's Borda count averages three independent draws of that
# noise for every pair of candidates, which shrinks it; SGS decides each place of its ranking from one pass, and
# a candidate once placed is never revisited, so one noisy pick early on is locked into the output. A real model's
# sensitivity to order is not independent noise: it is structured (some positions are read more carefully, the
# candidates around a candidate change what it scores), and SGS's repeated top-1 choices over ever shorter lists
# avoid much of it. The lesson: a simulation shows what follows from its assumptions — here, that averaging
# beats sequential picking when order effects are independent noise — and a method ranking learned from it must
# be checked on real models before it is taught as a fact.
# ```

# %% tags=["hide-input"]
lab.inversion_table(sweep, "primacy")
