"""Data layer: raw MovieLens / Amazon files → prepared tables (interactions, items, queries).

Public API::

    from invarirank.data import prepare, load_prepared
    folder = prepare("ml-100k")            # cached under cache_dir()/prepared/ml-100k-<key>
    data = load_prepared(folder)           # .interactions, .items, .queries (DataFrames), .stats (dict)

Modules: :mod:`.movielens` (raw layouts), :mod:`.amazon` (streaming JSONL reader), :mod:`.titles`
(title/genre clean-up), :mod:`.filtering` (duplicates, minimum per user), :mod:`.split` (temporal /
leave-one-out), :mod:`.queries` (test and validation queries), :mod:`.ids` (canonical id order),
:mod:`.preparation` (orchestration, caching, atomic output), :mod:`.prepared` (reading a prepared folder).
"""

from .ids import canonical_argsort, canonical_sorted
from .preparation import DATASETS, Prepared, Settings, format_stats, load_prepared, prepare, prepare_data
from .split import split_sizes
