"""Sphinx extension of the invarirank book: the repository and launch buttons only where a repository is
configured, launch buttons of executed pages open their *source* notebook, and an executed page shows the
parameters it ran with (papermill's injected cell, without this machine's paths) instead of the notebook's
defaults.

**Repository URL.** ``_config.yml`` names no repository: the public one is read at build time from the
environment variable ``INVARIRANK_REPOSITORY_URL`` (e.g. ``https://github.com/OWNER/invarirank``). Without it the
book has no repository button and no launch (Binder) buttons at all, never a link to a placeholder; with it, both
point there (branch ``INVARIRANK_REPOSITORY_BRANCH``, default ``main``).

**The students' lab.** After an HTML build, ``_static/lab-student.ipynb`` holds the teaching lab without its worked
answers; the lab page links to it.

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

#: the environment variables read at build time
REPOSITORY_ENV = "INVARIRANK_REPOSITORY_URL"
BRANCH_ENV = "INVARIRANK_REPOSITORY_BRANCH"


def source_notebook(pagename: str) -> str | None:
    """The repository path of the notebook a generated page was executed from (None: not generated)."""
    parts = pagename.split("/")
    if parts[:2] != ["book", "generated"] or len(parts) < 3:
        return None
    name = parts[-2] if len(parts) > 3 else parts[-1]      # .../rerank/<run>, .../<grid>/rerank/<run>, .../results
    return f"notebooks/{name}.ipynb"


def _rewrite(buttons: list[Any], old: str, new: str) -> None:
    for button in buttons:
        if isinstance(button, dict):
            url = button.get("url")
            if isinstance(url, str) and old in url and "_sources/" not in url:
                button["url"] = url.replace(old, new)
            if isinstance(button.get("buttons"), list):
                _rewrite(button["buttons"], old, new)


def rewrite_launch_links(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    target = source_notebook(pagename)
    if target is None or "header_buttons" not in context:
        return
    _rewrite(context["header_buttons"], f"{pagename}.ipynb", target)


def configure_repository(app: Any, config: Any) -> None:
    """Repository and launch buttons from ``INVARIRANK_REPOSITORY_URL`` (none at all when it is unset)."""
    options = dict(config.html_theme_options or {})
    url = os.environ.get(REPOSITORY_ENV, "").strip().rstrip("/")
    if url:
        options["repository_url"] = url
        options["repository_branch"] = os.environ.get(BRANCH_ENV, "").strip() or "main"
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
        shown = any("hide-cell" in c["metadata"]["tags"] for c in defaults)    # collapsed on the page, not removed
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
    (:func:`invarirank.compendium.lab.student_notebook`), linked from the lab page."""
    source = Path(app.srcdir, "notebooks", "lab.ipynb")
    if exception is not None or app.builder.format != "html" or not source.is_file():
        return
    from invarirank.compendium.lab import student_notebook

    nb = student_notebook(json.loads(source.read_text(encoding="utf-8")))
    target = Path(app.outdir, "_static", "lab-student.ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    app.connect("config-inited", configure_repository)
    app.connect("build-finished", write_student_lab)
    app.connect("builder-inited", hide_injected_parameters)
    # after sphinx-book-theme's add_launch_buttons (priority 501), before the buttons are rendered
    app.connect("html-page-context", rewrite_launch_links, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
