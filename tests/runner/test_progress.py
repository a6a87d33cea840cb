"""Long work shows its progress on standard error: the reranking's bar over queries, and STELLA_LW's calibration
(an hour and more at the paper's K on a CPU) its own bar over passes, before the first query."""

from __future__ import annotations

import pytest

from invarirank.runner import RunConfig, ensure_run

pytestmark = pytest.mark.usefixtures("private_cache")

RUN = {
    "dataset": "synthetic",
    "retriever": "none",
    "scorer": "simulated",
    "K": 5,
    "M": 2,
    "n_queries": 3,
    "methods": ["zero_shot", "stella"],
    "calibration_queries": 3,
    "calibration_repeats": 1,
    "seed": 1,
    "name": "progress",
}


@pytest.mark.parametrize("progress", [True, False])
def test_the_calibration_and_the_reranking_show_progress_bars(progress, tmp_path, capfd):
    ensure_run(
        RunConfig.from_mapping(RUN, "test", grid="t"), tmp_path / "results", tmp_path / "work", progress=progress
    )
    err = capfd.readouterr().err
    calibration, rerank = err.find("STELLA calibration K=5"), err.find("rerank")
    if progress:
        assert calibration >= 0 and "pass" in err[calibration : calibration + 200], err[-2000:]
        assert rerank > calibration, err[-2000:]  # the calibration's bar comes first
    else:
        assert calibration < 0, err[-2000:]
