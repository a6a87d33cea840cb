"""The compendium: the book's tables, figures and sentences, computed from finished run folders
(``results/<grid>/<run>/``, read through :mod:`invarirank.store`). Nothing here reranks or scores anything.

The notebooks under ``notebooks/`` hold narrative and calls into this package (``from invarirank import
compendium; compendium.table1(runs)``); ``invarirank report`` draws its figures with the same module. Every
number comes from a run's ``metrics.json`` (written by :func:`invarirank.evaluation.evaluate`), its
``manifest.json`` or its ``observations.jsonl.gz``.

Modules, in the order they build on each other:

- :mod:`._labels` — display names (methods from the method registry; the one list of metric labels and of which
  direction is better; models, data sets) and a run's setting as a phrase;
- :mod:`._select` — which runs a page shows: all finished runs, the main run, its K sweep, groups, other grids;
- :mod:`._verdicts` — the paper's claims on a run (resolved or not), their sentences and Table 1's marks;
- :mod:`._tables` — a run's metrics, Table 1 (ours, with the claims' marks, and beside the paper's), the scorer
  comparison;
- :mod:`._setup_tables` — what the runs used and cost; the data set and first stage;
- :mod:`._method_orderings` — methods best first per metric, and the agreement between two metrics' orderings;
- :mod:`._claim_tables` — the verdict of each claim per run, and one run's claimed pairs with their comparisons;
- :mod:`._section5` — every claim of the paper's §5 on our runs (reproduced / by construction / tested in part /
  unresolved / contradicted / not testable here) and the headline that counts them;
- :mod:`._second_model` — what a second, small model of Table 1 can and cannot say about the paper's 3–7 B models;
- :mod:`._figure_sentences` — the sentences that interpret Figures 1 and 2, the choice scorer and the first input
  position;
- :mod:`._prose` — generated sentences (does a run show the paper's ordering? which grid is shown?);
- :mod:`._figures` — exposure by position (Figure 1), metrics against K (Figure 2), training loss;
- :mod:`._lab` — the teaching lab's precomputed sweep (tables, figure, slide panels) and its students' notebook.
- :mod:`._precision` — the protocol chapter's number-format measurements (bfloat16 against float32 on a CPU).

Conventions: methods in the paper's order (zero-shot, bootstrapping, STELLA_LW, SGS); "better" is higher for
HR@k, nDCG@k and LOC, lower for PPI, GPI and the exposure deviation (an ordering lists methods best first);
intervals are 95% bootstrap intervals over queries (percentile intervals, basic ones for the exposure
deviations); positions are 0-based presented positions.

Imports: :mod:`invarirank.store`, :mod:`invarirank.evaluation`, the core modules and the method registry only —
never the runner, the language models or torch.
"""

from ..store import Run
from . import _figure_sentences as figure_sentences
from . import _section5 as section5
from ._claim_tables import claims_table, pairwise_table
from ._figures import exposure_bands, figure_exposure, figure_k_sweep, figure_training_loss, method_colors
from ._labels import (
    HIGHER_IS_BETTER,
    METHOD_LABELS,
    METHODS,
    METRIC_LABELS,
    PAPER_LOC_ORDER,
    TABLE1_METRICS,
    dataset_label,
    html_escape,
    key,
    model_label,
    run_setting,
    setting_caption,
)
from ._method_orderings import ordering_agreement, orderings
from ._prose import (
    list_length_bullets,
    paper_ordering_sentence,
    reference_sentence,
    shown_grid_sentence,
    summary_sentence,
    table_models_sentence,
)
from ._scorer_pairs import choice_and_span, scorer_comparison, scorer_pair_grid
from ._second_model import second_model_paragraph
from ._select import (
    GridChoice,
    choice_runs,
    collect_runs,
    committed_queries,
    grid_choice,
    grid_to_show,
    load_run,
    main_k,
    main_run,
    other_grids,
    setting_groups,
    shard_progress,
    sweep_runs,
)
from ._setup_tables import cost_table, coverage_table, data_stats_table, run_settings_table, scale_table
from ._tables import beside_paper, format_ci, metrics_frame, paper_table, run_table, table1
from ._verdicts import claim_marks, resolution_sentence, run_claims, smallest_p, verdict_sentence, verdicts_html
