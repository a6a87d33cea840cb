"""Helpers shared by the tests (one home each): the project root, raw-file writers (:mod:`.data`), toy
runs (:mod:`.runner`), MovieLens-100K queries (:mod:`.ml100k`), the hostile-input tables' helpers (:mod:`.hostile`),
the literal evaluator (:mod:`.literal_evaluator`), metric families (:mod:`.evaluation_families`) and the
scripts loaded as modules (:mod:`.scripts`)."""

from pathlib import Path

#: the project's root folder (the checkout)
ROOT = Path(__file__).resolve().parents[2]
