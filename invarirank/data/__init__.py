"""Data layer: raw MovieLens / Amazon files → prepared tables (interactions, items, queries).

Public API::

    from invarirank.data import prepare, load_prepared
    folder = prepare("ml-100k")            # cached under cache_dir()/prepared/ml-100k-<key>
    data = load_prepared(folder)           # .interactions, .items, .queries (DataFrames), .stats (dict)

Modules: :mod:`._movielens` (raw layouts), :mod:`._amazon` (streaming JSONL reader), :mod:`._titles`
(title/genre clean-up), :mod:`._filtering` (duplicates, minimum per user), :mod:`._split` (temporal /
leave-one-out), :mod:`._queries` (test and validation queries), :mod:`._ids` (canonical id order),
:mod:`._preparation` (orchestration, caching, atomic output), :mod:`._prepared` (reading a prepared folder).
"""

from ._ids import canonical_argsort, canonical_sorted
from ._preparation import DATASETS, Prepared, Settings, format_stats, load_prepared, prepare, prepare_data
from ._split import split_sizes
