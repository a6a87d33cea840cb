"""The book's Sphinx extension (book/_ext/launch_source.py): repository and launch buttons only with
INVARIRANK_REPOSITORY_URL, launch links of generated pages to their source notebook, download links untouched,
and papermill's injected parameters removed from the pages."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("launch_source", ROOT / "book" / "_ext" / "launch_source.py")
ext = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ext)


def _config() -> SimpleNamespace:
    return SimpleNamespace(html_theme_options={"repository_url": "https://github.com/executablebooks/jupyter-book",
                                               "use_repository_button": True,
                                               "launch_buttons": {"binderhub_url": "https://mybinder.org"}})


def test_no_repository_url_means_no_repository_or_launch_buttons(monkeypatch):
    monkeypatch.delenv(ext.REPOSITORY_ENV, raising=False)
    config = _config()
    ext.configure_repository(None, config)
    opts = config.html_theme_options
    assert opts["repository_url"] == "" and opts["use_repository_button"] is False and opts["launch_buttons"] == {}


def test_a_configured_repository_url_is_used(monkeypatch):
    monkeypatch.setenv(ext.REPOSITORY_ENV, "https://github.com/someone/invarirank/")
    monkeypatch.setenv(ext.BRANCH_ENV, "dev")
    config = _config()
    ext.configure_repository(None, config)
    opts = config.html_theme_options
    assert opts["repository_url"] == "https://github.com/someone/invarirank"
    assert opts["repository_branch"] == "dev" and opts["use_repository_button"] is True
    assert opts["launch_buttons"] == {"binderhub_url": "https://mybinder.org"}


def test_launch_links_go_to_the_source_notebook_and_downloads_stay():
    assert ext.source_notebook("book/generated/rerank/some-run") == "notebooks/rerank.ipynb"
    assert ext.source_notebook("book/generated/evidence/rerank/some-run") == "notebooks/rerank.ipynb"
    assert ext.source_notebook("book/generated/results") == "notebooks/results.ipynb"
    assert ext.source_notebook("book/generated/data/ml-100k") == "notebooks/data.ipynb"
    assert ext.source_notebook("book/intro") is None
    page = "book/generated/results"
    buttons = [{"url": f"https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/{page}.ipynb"},
               {"buttons": [{"url": f"../../_sources/{page}.ipynb"}]}]
    context = {"header_buttons": buttons}
    ext.rewrite_launch_links(None, page, "", context, None)
    assert buttons[0]["url"].endswith("urlpath=lab/tree/notebooks/results.ipynb")
    assert buttons[1]["buttons"][0]["url"] == f"../../_sources/{page}.ipynb"


def test_injected_parameters_are_removed_from_the_pages(tmp_path):
    folder = tmp_path / "book" / "generated" / "rerank"
    folder.mkdir(parents=True)
    nb = {"cells": [{"cell_type": "code", "metadata": {"tags": ["injected-parameters"]},
                     "source": "results_dir = '/tmp/x'", "outputs": []},
                    {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": "K = 10", "outputs": []}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (folder / "run.ipynb").write_text(json.dumps(nb))
    ext.hide_injected_parameters(SimpleNamespace(srcdir=str(tmp_path)))
    cells = json.loads((folder / "run.ipynb").read_text())["cells"]
    assert "remove-cell" in cells[0]["metadata"]["tags"] and "remove-cell" not in cells[1]["metadata"]["tags"]
