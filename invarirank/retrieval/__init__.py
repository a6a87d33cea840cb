"""The first stage: LightGCN, implicit ALS and a popularity baseline produce top-K candidates.

``retrieve(data_dir, retriever="lightgcn", k=25, seed=42, out=None, epochs=None, device=None)`` trains
(or loads from the cache) a retriever on a prepared folder, keeps the queries whose top-K holds a
ground-truth item and writes ``candidates.jsonl`` (see :mod:`invarirank.candidates`) and ``stats.json``.
Importing this package does not import torch or implicit (the trainers import them when called).
"""

from ._first_stage import RetrievalResult, format_stats, retrieve
from ._metrics import DEFAULT_KS, retrieval_metrics
from ._training import RETRIEVERS, train_retriever
