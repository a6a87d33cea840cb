"""invarirank — position bias in listwise LLM reranking for recommendation.

Stages (each hands the next a plain, documented artefact):
``data`` → prepared tables and queries; ``retrieval`` → candidates; ``llm`` (scorers) and
``methods`` → observations; ``evaluation`` → metrics. The core is torch-free: importing
``invarirank`` or ``invarirank.evaluation`` never imports torch or transformers.
"""

__version__ = "0.1.0"
