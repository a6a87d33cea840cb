"""Sphinx extension of the invarirank book: launch buttons of executed pages open their *source* notebook.

The pages under ``book/generated/`` are papermill executions of ``notebooks/<name>.ipynb`` (not committed),
so the theme's Binder link to ``book/generated/...`` would point at a file that is not in the repository.
This rewrites those links (and the source-download buttons are left alone) to the source notebook:
``book/generated/rerank/*`` → ``notebooks/rerank.ipynb``, ``book/generated/data/*`` → ``notebooks/data.ipynb``,
``book/generated/results`` → ``notebooks/results.ipynb``.
"""

from __future__ import annotations

from typing import Any


def source_notebook(pagename: str) -> str | None:
    """The repository path of the notebook a generated page was executed from (None: not generated)."""
    parts = pagename.split("/")
    if parts[:2] != ["book", "generated"] or len(parts) < 3:
        return None
    name = parts[2] if len(parts) > 3 else parts[-1]
    return f"notebooks/{name}.ipynb"


def _rewrite(buttons: list[Any], old: str, new: str) -> None:
    for button in buttons:
        if isinstance(button, dict):
            if isinstance(button.get("url"), str) and old in button["url"]:
                button["url"] = button["url"].replace(old, new)
            if isinstance(button.get("buttons"), list):
                _rewrite(button["buttons"], old, new)


def rewrite_launch_links(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    target = source_notebook(pagename)
    if target is None or "header_buttons" not in context:
        return
    _rewrite(context["header_buttons"], f"{pagename}.ipynb", target)


def setup(app: Any) -> dict[str, Any]:
    # after sphinx-book-theme's add_launch_buttons (priority 501), before the buttons are rendered
    app.connect("html-page-context", rewrite_launch_links, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
