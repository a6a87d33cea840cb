"""Hostile input, round 4 (issue 39) F5: what papermill injects into a notebook is checked by its first cell after
the parameters (:func:`invarirank.grid._parameters.check_parameters`), in one line naming the notebook and the
parameter; the notebooks' own defaults pass."""

from __future__ import annotations

import types

import pytest

from invarirank.errors import InvariRankError
from invarirank.grid._parameters import check_parameters, declared_parameters
from tests.support import ROOT

NOTEBOOKS = ("rerank", "data", "results", "lab")


def _namespace(notebook: str, **injected):
    """A kernel's namespace after the parameters cell and papermill's injected cell."""
    ns = {"__name__": "__main__", "In": [], "Out": {}, "_i1": "", "get_ipython": print, "types": types}
    ns.update(declared_parameters(ROOT / "notebooks" / f"{notebook}.py"))
    ns.update(injected)
    return ns


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_every_notebook_checks_its_parameters_and_its_defaults_pass(notebook):
    assert f'check_parameters(globals(), "{notebook}")' in (ROOT / "notebooks" / f"{notebook}.py").read_text()
    check_parameters(_namespace(notebook), notebook)
    check_parameters(
        _namespace(notebook, **{next(iter(declared_parameters(ROOT / "notebooks" / f"{notebook}.py"))): None}), notebook
    )


BAD = [
    ("unknown-name", "rerank", {"n_querys": 50}, ["notebooks/rerank", "unknown parameter 'n_querys'"]),
    ("int-as-string", "rerank", {"M": "8"}, ["parameter 'M' = '8'", "an integer"]),
    ("bool-as-int", "lab", {"K": True}, ["parameter 'K' = True", "an integer"]),
    ("float-for-int", "lab", {"n_queries": 2.5}, ["parameter 'n_queries' = 2.5"]),
    ("string-for-bool", "results", {"include_simulated": "no"}, ["'include_simulated' = 'no'", "True or False"]),
    ("string-for-list", "data", {"K_values": "10"}, ["'K_values' = '10'", "a list"]),
    ("string-for-mapping", "rerank", {"scorer_options": "a=1"}, ["'scorer_options'", "a mapping"]),
    ("number-for-string", "lab", {"shape": 1}, ["'shape' = 1", "a string"]),
]


@pytest.mark.parametrize("case,notebook,injected,needles", BAD, ids=[c[0] for c in BAD])
def test_injected_parameters_are_checked_in_one_line(case, notebook, injected, needles):
    with pytest.raises(InvariRankError) as exc:
        check_parameters(_namespace(notebook, **injected), notebook)
    assert "\n" not in str(exc.value)
    for needle in needles:
        assert needle in str(exc.value), (needle, str(exc.value))


def test_a_folder_parameter_naming_a_file_is_refused(tmp_path):
    afile = tmp_path / "results.txt"
    afile.write_text("x")
    with pytest.raises(InvariRankError, match="'results_dir' = .* is a file, expected a folder"):
        check_parameters(_namespace("lab", results_dir=str(afile)), "lab")
