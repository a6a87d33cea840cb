"""Sphinx extension of the invarirank book: the repository and launch buttons only where a repository is
configured, launch buttons of executed pages open their *source* notebook, and an executed page shows the
parameters it ran with (papermill's injected cell, without this machine's paths) instead of the notebook's
defaults.

**Repository URL.** One setting names the project's repository: ``repository.url`` in ``_config.yml`` (empty
until the project has a public address; a fork sets its own). The environment variable
``INVARIRANK_REPOSITORY_URL``, when set, replaces it for one build (the publishing workflow sets it to the repository
it runs in, so a fork's published book names the fork without an edit), and ``INVARIRANK_REPOSITORY_BRANCH`` the
branch (default: ``repository.branch``, else ``main``). Everything that names the repository reads the result: the
repository button, the launch (Binder) buttons and the lab's "get the code" box (the ``{{ get_the_code }}``
substitution). Without an address the book has no repository or launch buttons and the box says that this copy was
built without one: never a link to a placeholder.

**The students' lab.** After an HTML build, ``_static/lab-student.ipynb`` holds the teaching lab without its worked
answers, carrying what it needs outside a clone (the one-line install, the sweep's settings; see
:func:`invarirank.compendium._lab.student_notebook`); the lab page's download button and its link serve it.

**Launch buttons of generated pages.**

The pages under ``book/generated/`` are papermill executions of ``notebooks/<name>.ipynb`` (not committed),
so the theme's Binder link to ``book/generated/...`` would point at a file that is not in the repository.
This rewrites those links to the source notebook (the download buttons are left alone: they give the executed
notebook, which the build copies under ``_sources/``):
``book/generated/[<grid>/]rerank/*`` → ``notebooks/rerank.ipynb``, ``book/generated/data/*`` →
``notebooks/data.ipynb``,
``book/generated/results`` → ``notebooks/results.ipynb``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

#: the environment variables read at build time (they replace ``repository.url`` / ``.branch`` for one build)
REPOSITORY_ENV = "INVARIRANK_REPOSITORY_URL"
BRANCH_ENV = "INVARIRANK_REPOSITORY_BRANCH"

#: the teaching lab's page and the grid file whose ``lab:`` section made its sweep (the Makefile's default grid)
LAB_PAGE = "notebooks/lab"
LAB_GRID_FILE = "configs/grid-default.yaml"
STUDENT_LAB = "_static/lab-student.ipynb"


def source_notebook(pagename: str) -> str | None:
    """The repository path of the notebook a generated page was executed from (None: not generated)."""
    parts = pagename.split("/")
    if parts[:2] != ["book", "generated"] or len(parts) < 3:
        return None
    name = parts[-2] if len(parts) > 3 else parts[-1]  # .../rerank/<run>, .../<grid>/rerank/<run>, .../results
    return f"notebooks/{name}.ipynb"


def _rewrite(buttons: list[Any], old: str, new: str) -> None:
    for button in buttons:
        if isinstance(button, dict):
            url = button.get("url")
            if isinstance(url, str) and old in url and "_sources/" not in url:
                button["url"] = url.replace(old, new)
            if isinstance(button.get("buttons"), list):
                _rewrite(button["buttons"], old, new)


def serve_student_lab(buttons: list[Any], root: str) -> None:
    """The lab page's download buttons give the student version (``root``: the page's relative path to the site's
    root, e.g. ``../``), never the teacher's notebook with its worked answers."""
    for button in buttons:
        if not isinstance(button, dict):
            continue
        url = button.get("url")
        if isinstance(url, str) and "_sources/" in url and url.endswith((f"{LAB_PAGE}.ipynb", f"{LAB_PAGE}.py")):
            button["url"] = f"{root}{STUDENT_LAB}"
            button["text"] = ".ipynb (student)"
            button["tooltip"] = "Download the student notebook (without the worked answers)"
        if isinstance(button.get("buttons"), list):
            serve_student_lab(button["buttons"], root)


def rewrite_launch_links(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    if pagename == LAB_PAGE and "header_buttons" in context:
        serve_student_lab(context["header_buttons"], "../" * pagename.count("/"))
    target = source_notebook(pagename)
    if target is None or "header_buttons" not in context:
        return
    _rewrite(context["header_buttons"], f"{pagename}.ipynb", target)


def repository_url(options: dict[str, Any]) -> str:
    """The repository's address for this build: ``INVARIRANK_REPOSITORY_URL`` when set, else ``repository.url``
    of ``_config.yml`` (which Jupyter Book hands over as the theme's ``repository_url``); ``""`` when neither."""
    return (os.environ.get(REPOSITORY_ENV, "").strip() or str(options.get("repository_url") or "").strip()).rstrip("/")


#: the hosts whose repository links the book's theme (and Binder) can build, by the provider name the theme takes
PROVIDERS = {"github.com": "github", "gitlab.com": "gitlab", "bitbucket.org": "bitbucket"}


def provider(url: str) -> str:
    """The theme's provider name for ``url``'s host; any other host is one clear error (the theme would stop the
    build with "Provider not recognized")."""
    from urllib.parse import urlsplit

    from sphinx.errors import ConfigError

    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    name = PROVIDERS.get(host) or ("gitlab" if host.startswith("gitlab.") else None)
    if parts.scheme not in ("http", "https") or name is None or parts.path.strip("/").count("/") != 1:
        raise ConfigError(
            f"_config.yml: repository.url (or ${REPOSITORY_ENV}) = {url!r}: expected a repository's web address "
            f"on {', '.join(PROVIDERS)} (https://<host>/<owner>/<name>), or empty for none"
        )
    return name


def install_command(url: str) -> str:
    """The one command that installs what the lab needs (the torch-free core and the ``lab`` extra)."""
    if url:
        return f'pip install "invarirank[lab] @ git+{url}"'
    return 'pip install "<your clone of the invarirank repository>[lab]"'


def get_the_code(url: str) -> str:
    """The lab's "get the code" box (markdown): where the code is and how to install what the lab needs."""
    if url:
        where = (
            f"The project's repository is <{url}>. Clone it for everything (`git clone {url}`), or install only "
            f"what the lab needs into any Python 3.10 or newer with Jupyter: `{install_command(url)}`."
        )
    else:
        where = (
            "This copy of the book was built without a repository address (`repository.url` in `_config.yml` is "
            "empty), so it names none: ask whoever gave you the book for the repository, then, in its clone, "
            '`pip install ".[lab]"`.'
        )
    return (
        f"**Get the code.** {where} The student version of this notebook (`lab-student.ipynb`, the page's download "
        "button) then runs wherever you save it: outside a clone it computes the precomputed sweep itself, once "
        "(about a minute of CPU time). No GPU, model or torch is needed."
    )


def configure_repository(app: Any, config: Any) -> None:
    """Repository and launch buttons from the repository address (none at all without one), and the lab's "get the
    code" box (the ``get_the_code`` substitution) from the same address."""
    options = dict(config.html_theme_options or {})
    url = repository_url(options)
    substitutions = dict(getattr(config, "myst_substitutions", None) or {})
    config.myst_substitutions = {**substitutions, "get_the_code": get_the_code(url)}
    if url:
        options["repository_url"] = url
        options["repository_provider"] = provider(url)
        options["repository_branch"] = (
            os.environ.get(BRANCH_ENV, "").strip() or str(options.get("repository_branch") or "").strip() or "main"
        )
        options["use_repository_button"] = True
    else:
        options["repository_url"] = ""
        options["use_repository_button"] = False
        options["use_issues_button"] = False
        options["use_edit_page_button"] = False
        options["launch_buttons"] = {}
    config.html_theme_options = options


#: a parameter line whose value is an absolute path (this machine's results, work or grid-file folder)
_MACHINE_PATH = re.compile(r"""^\s*\w+\s*=\s*["'](/|[A-Za-z]:[\\/]|~)""")


def hide_injected_parameters(app: Any) -> None:
    """Show each executed notebook under ``book/generated/`` with the parameters it was executed with, not the
    notebook's defaults (a run page of the evidence grid showed ``M = 8``, ``n_queries = 5`` beside a run of
    M = 20 and 40 queries): papermill's ``injected-parameters`` cell keeps its collapsed place without the lines
    that hold this machine's paths (results and work folders, grid files), and the defaults cell is removed from
    the page. A notebook whose defaults cell is removed already (the results page) keeps its injected cell off the
    page too. The executed notebook on disk is rewritten only when something changes."""
    for path in sorted(Path(app.srcdir, "book", "generated").rglob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb.get("cells", [])
        defaults = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        shown = any("hide-cell" in c["metadata"]["tags"] for c in defaults)  # collapsed on the page, not removed
        changed = False
        for cell in cells:
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if "injected-parameters" not in tags:
                continue
            source = cell.get("source", "")
            original = source if isinstance(source, str) else "".join(source)
            kept = [line for line in original.splitlines() if not _MACHINE_PATH.match(line)]
            if kept and kept[0].strip() == "# Parameters":
                kept[0] = "# Parameters this page was executed with (folders of the machine that built it left out)"
            text = "\n".join(kept)
            if text != original:
                cell["source"], changed = text, True
            want = ["hide-cell"] if shown else ["remove-cell"]
            new_tags = [t for t in tags if t not in ("hide-cell", "remove-cell")] + want
            if new_tags != tags:
                cell["metadata"]["tags"], changed = new_tags, True
            if shown:
                for d in defaults:
                    if "remove-cell" not in d["metadata"]["tags"]:
                        d["metadata"]["tags"].append("remove-cell")
                        changed = True
        if changed:
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def write_student_lab(app: Any, exception: Exception | None) -> None:
    """``_static/lab-student.ipynb``: the teaching lab without its worked answers
    (:func:`invarirank.compendium._lab.student_notebook`), served by the lab page's download button and link; it
    carries the one-line install from this book's repository, the "get the code" box and the ``lab:`` section of
    the grid file that made the sweep, so it runs outside a clone."""
    source = Path(app.srcdir, f"{LAB_PAGE}.ipynb")
    if exception is not None or app.builder.format != "html" or not source.is_file():
        return
    import yaml

    from invarirank.compendium._lab import student_notebook

    url = repository_url(app.config.html_theme_options or {})
    settings = yaml.safe_load(Path(app.srcdir, LAB_GRID_FILE).read_text(encoding="utf-8")).get("lab")
    nb = student_notebook(
        json.loads(source.read_text(encoding="utf-8")),
        settings=settings,
        install=install_command(url),
        substitutions={"get_the_code": get_the_code(url)},
    )
    target = Path(app.outdir, STUDENT_LAB)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    app.connect("config-inited", configure_repository)
    app.connect("build-finished", write_student_lab)
    app.connect("builder-inited", hide_injected_parameters)
    # after sphinx-book-theme's add_launch_buttons (priority 501), before the buttons are rendered
    app.connect("html-page-context", rewrite_launch_links, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
