"""Publishing the book (.github/workflows/book.yml): GitHub Pages gets `make book` built on the committed results,
computing nothing, with the repository address of the repository it runs in. The built site itself is checked as
it is read online, served over HTTP on 127.0.0.1, by tests/book/test_build.py (``check_site(..., serve=True)``)."""

from __future__ import annotations

import yaml

from tests.support import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def test_the_workflow_builds_the_book_and_publishes_the_html():
    flow = _workflow()
    build, deploy = flow["jobs"]["build"], flow["jobs"]["deploy"]
    runs = [s["run"] for s in build["steps"] if "run" in s]
    assert any(r.strip() == "make book" for r in runs)
    upload = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build" and deploy["steps"][0]["uses"].startswith("actions/deploy-pages")
    assert flow["permissions"]["pages"] == "write" and flow["permissions"]["id-token"] == "write"


def test_the_workflow_computes_nothing_and_checks_it():
    """No test run, no grid of its own: only `make book`, whose grid reuses the committed runs; a step fails the
    job when results/ changed (a run that was computed instead of reused)."""
    build = _workflow()["jobs"]["build"]
    runs = "\n".join(s["run"] for s in build["steps"] if "run" in s)
    assert "make test" not in runs and "invarirank grid" not in runs and "papermill" not in runs
    assert "git status --porcelain -- results" in runs and "exit 1" in runs


def test_the_published_book_names_the_repository_it_is_built_from():
    env = _workflow()["jobs"]["build"]["env"]
    assert env["INVARIRANK_REPOSITORY_URL"] == "${{ github.server_url }}/${{ github.repository }}"
