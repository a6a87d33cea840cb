"""The book's Sphinx extension (book/_ext/launch_source.py): repository and launch buttons and the lab's "get the
code" box from one setting (``repository.url``, or INVARIRANK_REPOSITORY_URL for one build), the lab's download
button serving the student version, launch links of generated pages to their source notebook, download links untouched,
and each executed page shows the parameters it ran with, without machine paths."""

from __future__ import annotations

import importlib.util
import json
from types import SimpleNamespace

import pytest

from tests.support import ROOT

pytest.importorskip("sphinx")  # the extension imports it (the book extra; not in the light install)

_spec = importlib.util.spec_from_file_location("launch_source", ROOT / "book" / "_ext" / "launch_source.py")
ext = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ext)


def _config(url: str = "") -> SimpleNamespace:
    """The theme options as Jupyter Book hands them over from ``_config.yml`` (``repository.url`` → repository_url)."""
    return SimpleNamespace(
        html_theme_options={
            "repository_url": url,
            "repository_branch": "main",
            "use_repository_button": False,
            "launch_buttons": {"binderhub_url": "https://mybinder.org"},
        },
        myst_substitutions={},
    )


def test_the_committed_config_names_its_repository_in_one_setting():
    """_config.yml has the one setting, ``repository.url``; nothing in it holds a made-up address."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert "url" in config["repository"]
    url = config["repository"]["url"] or ""
    assert "OWNER" not in url and "example" not in url and "placeholder" not in url.lower()


def test_no_repository_url_means_no_buttons_and_a_box_that_says_so(monkeypatch):
    monkeypatch.delenv(ext.REPOSITORY_ENV, raising=False)
    config = _config()
    ext.configure_repository(None, config)
    opts = config.html_theme_options
    assert opts["repository_url"] == "" and opts["use_repository_button"] is False and opts["launch_buttons"] == {}
    box = config.myst_substitutions["get_the_code"]
    assert "http" not in box and "git+" not in box and "repository.url" in box


def test_the_config_setting_sets_every_place_that_names_the_repository(monkeypatch):
    monkeypatch.delenv(ext.REPOSITORY_ENV, raising=False)
    monkeypatch.delenv(ext.BRANCH_ENV, raising=False)
    config = _config("https://gitlab.com/someone/invarirank/")
    ext.configure_repository(None, config)
    opts = config.html_theme_options
    url = "https://gitlab.com/someone/invarirank"
    assert opts["repository_url"] == url and opts["repository_branch"] == "main"
    assert opts["use_repository_button"] is True and opts["launch_buttons"] == {"binderhub_url": "https://mybinder.org"}
    box = config.myst_substitutions["get_the_code"]
    assert f"git clone {url}" in box and f'pip install "invarirank[lab] @ git+{url}"' in box
    assert ext.install_command(url) in box and opts["repository_provider"] == "gitlab"


def test_an_address_the_theme_cannot_link_is_one_clear_error(monkeypatch):
    """The theme stops the build on an unknown host ("Provider not recognized"): say which setting and what it takes."""
    from sphinx.errors import ConfigError

    monkeypatch.delenv(ext.REPOSITORY_ENV, raising=False)
    for url in ("https://git.example.org/someone/invarirank", "github.com/someone/invarirank", "https://github.com/x"):
        with pytest.raises(ConfigError, match=r"repository\.url .*expected a repository's web address on github\.com"):
            ext.configure_repository(None, _config(url))


def test_the_environment_replaces_the_setting_for_one_build(monkeypatch):
    """The publishing workflow sets INVARIRANK_REPOSITORY_URL to the repository it runs in (a fork names itself)."""
    monkeypatch.setenv(ext.REPOSITORY_ENV, "https://github.com/someone/invarirank/")
    monkeypatch.setenv(ext.BRANCH_ENV, "dev")
    config = _config("https://gitlab.com/upstream/invarirank")
    ext.configure_repository(None, config)
    opts = config.html_theme_options
    assert opts["repository_url"] == "https://github.com/someone/invarirank"
    assert opts["repository_branch"] == "dev" and opts["use_repository_button"] is True
    assert "github.com/someone/invarirank" in config.myst_substitutions["get_the_code"]


def test_the_lab_pages_download_button_serves_the_student_version():
    buttons = [
        {"url": "https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/notebooks/lab.ipynb"},
        {
            "buttons": [
                {"url": "../_sources/notebooks/lab.ipynb", "text": ".ipynb"},
                {"type": "javascript", "javascript": "window.print()"},
            ]
        },
    ]
    context = {"header_buttons": buttons}
    ext.rewrite_launch_links(None, ext.LAB_PAGE, "", context, None)
    assert buttons[0]["url"].endswith("lab/tree/notebooks/lab.ipynb")  # Binder opens the lab in the repository
    assert buttons[1]["buttons"][0]["url"] == "../_static/lab-student.ipynb"
    other = [{"buttons": [{"url": "../_sources/book/metrics.md"}]}]
    ext.rewrite_launch_links(None, "book/metrics", "", {"header_buttons": other}, None)
    assert other[0]["buttons"][0]["url"] == "../_sources/book/metrics.md"


def test_launch_links_go_to_the_source_notebook_and_downloads_stay():
    assert ext.source_notebook("book/generated/rerank/some-run") == "notebooks/rerank.ipynb"
    assert ext.source_notebook("book/generated/evidence/rerank/some-run") == "notebooks/rerank.ipynb"
    assert ext.source_notebook("book/generated/results") == "notebooks/results.ipynb"
    assert ext.source_notebook("book/generated/data/ml-100k") == "notebooks/data.ipynb"
    assert ext.source_notebook("book/intro") is None
    page = "book/generated/results"
    buttons = [
        {"url": f"https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/{page}.ipynb"},
        {"buttons": [{"url": f"../../_sources/{page}.ipynb"}]},
    ]
    context = {"header_buttons": buttons}
    ext.rewrite_launch_links(None, page, "", context, None)
    assert buttons[0]["url"].endswith("urlpath=lab/tree/notebooks/results.ipynb")
    assert buttons[1]["buttons"][0]["url"] == f"../../_sources/{page}.ipynb"


def test_a_page_shows_the_parameters_it_ran_with_without_machine_paths(tmp_path):
    """A run page of the evidence grid showed the notebook's defaults (M = 8, 5 queries) beside a run of M = 20 and
    40 queries: the injected cell takes the defaults' collapsed place, without this machine's folders."""
    folder = tmp_path / "book" / "generated" / "rerank"
    folder.mkdir(parents=True)

    def notebook(defaults_tags):
        return {
            "cells": [
                {
                    "cell_type": "code",
                    "metadata": {"tags": ["parameters", *defaults_tags]},
                    "source": "K = 10\nM = 8",
                    "outputs": [],
                },
                {
                    "cell_type": "code",
                    "metadata": {"tags": ["injected-parameters"]},
                    "source": '# Parameters\nK = 25\nM = 20\nresults_dir = "/work/x/results"\n'
                    "grid_file = 'C:\\\\x.yaml'\ncache_dir = None\nlabel = \"ml\"",
                    "outputs": [],
                },
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }

    (folder / "run.ipynb").write_text(json.dumps(notebook(["hide-cell"])))
    (folder / "results.ipynb").write_text(json.dumps(notebook(["remove-cell"])))
    ext.hide_injected_parameters(SimpleNamespace(srcdir=str(tmp_path)))
    defaults, injected = json.loads((folder / "run.ipynb").read_text())["cells"]
    assert "remove-cell" in defaults["metadata"]["tags"]
    assert injected["metadata"]["tags"] == ["injected-parameters", "hide-cell"]
    assert injected["source"].splitlines()[1:] == ["K = 25", "M = 20", "cache_dir = None", 'label = "ml"']
    assert "/work" not in injected["source"] and "C:" not in injected["source"]
    before = (folder / "run.ipynb").read_text()
    ext.hide_injected_parameters(SimpleNamespace(srcdir=str(tmp_path)))  # a second build changes nothing
    assert (folder / "run.ipynb").read_text() == before
    _, injected = json.loads((folder / "results.ipynb").read_text())["cells"]  # its defaults are off the page
    assert "remove-cell" in injected["metadata"]["tags"] and "hide-cell" not in injected["metadata"]["tags"]
