"""CI's book smoke build: the tiny grid (configs/grid-smoke.yaml) computed by `invarirank grid`, its declared pages
executed by `invarirank book` (a book rule listing only that grid) and rendered by Jupyter Book, in a temporary
copy of the book, then checks of the HTML: the results page holds the table and the figures as
images, headless Chromium shows rendered math (MathJax served from the book itself, so offline), a
screenshot of the results page is not blank, and every page passes the browser checks of
tests/book/test_browser.py (local links and download buttons, images and their alt text, no placeholder,
no table wider than the page, no raw math).

Under ``CI=true`` or ``INVARIRANK_REQUIRE_ALL=1`` (``make test``) a missing Chromium (or missing offline MathJax)
fails the test instead of skipping it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

PY = sys.executable
JB = Path(PY).with_name("jupyter-book")
IN_CI = os.environ.get("CI", "").lower() == "true" or os.environ.get("INVARIRANK_REQUIRE_ALL") == "1"
BOOK_FILES = ("_config.yml", "_toc.yml", "book", "notebooks", "configs")
#: the smoke build's book rule, in the copy's configs/: the smoke grid alone (its results page shows simulated runs)
SMOKE_RULE = "grids:\n  - {file: configs/grid-smoke.yaml}\n"

pytestmark = pytest.mark.slow


# papermill parameters that put a run into the smoke grid (its defaults, other than K)
EXTRA_RUN_PARAMETERS = """\
grid: smoke
dataset: ml-100k
retriever: als
model: simulated
scorer: simulated
scorer_options: {{bias_shape: primacy, bias_strength: 1.0}}
M: 4
n_queries: 6
sample_k: 6
seed: 42
methods: [zero_shot, bootstrapping]
results_dir: {results}
work_dir: {work}
"""


def _chromium() -> str | None:
    from tests.book.test_browser import chromium

    return chromium()


def _need(condition: bool, message: str) -> None:
    if condition:
        return
    if IN_CI:
        pytest.fail(message + " (required under CI=true and in `make test`; run `make setup` as root to install it)")
    pytest.skip(message)


def _copy_book(dest: Path) -> None:
    for name in BOOK_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(
                src, dest / name, ignore=shutil.ignore_patterns("generated", "__pycache__", ".ipynb_checkpoints")
            )
        else:
            shutil.copy2(src, dest / name)


@pytest.fixture(scope="module")
def built_book(tmp_path_factory) -> Path:
    """Compute the smoke grid, execute its pages and build the book in a copy of the checkout; returns the HTML
    folder."""
    _need(
        (ROOT / "book" / "_static" / "mathjax" / "tex-chtml.js").is_file(),
        "MathJax is not in book/_static/mathjax (run `make setup`)",
    )
    src = tmp_path_factory.mktemp("book")
    _copy_book(src)
    env = dict(os.environ, PYTHONHASHSEED="0")
    env["MPLBACKEND"] = "Agg"  # as `make` exports it: the notebooks must still render their figures inline
    # the kernels import this checkout's package (not another one the environment was installed from)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    (src / "configs" / "book-smoke.yaml").write_text(SMOKE_RULE, encoding="utf-8")
    # the copy is a checkout of its own: results/, runs/ and book/generated/ default to its folders
    steps = [
        [PY, "-m", "invarirank", "grid", "configs/grid-smoke.yaml"],
        [PY, "-m", "invarirank", "book", "configs/book-smoke.yaml"],
    ]
    for step in steps:
        done = subprocess.run(step, cwd=src, env=env, capture_output=True, text=True, timeout=1500)
        assert done.returncode == 0, done.stderr[-4000:]
    assert not list((src / "book" / "generated").glob("rerank/*")), "the grid must execute no page"
    # A reader re-executes the reranking notebook with a new K (as the README shows, here with the smoke
    # grid's settings); the next grid run reuses every finished run, the next book re-executes only the results
    # page (the new run is not among the grid file's pages), and the new run joins the K sweep there.
    extra = src / "extra-k10.yaml"
    extra.write_text(EXTRA_RUN_PARAMETERS.format(results=src / "results", work=src / "runs"))
    pm = subprocess.run(
        [
            PY,
            "-m",
            "papermill",
            "rerank.ipynb",
            str(src / "extra-k10.ipynb"),
            "-f",
            str(extra),
            "-p",
            "K",
            "10",
            "--no-progress-bar",
        ],
        cwd=ROOT / "notebooks",
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert pm.returncode == 0, pm.stderr[-4000:]
    log = ""
    for step in steps:
        again = subprocess.run(step, cwd=src, env=env, capture_output=True, text=True, timeout=1500)
        assert again.returncode == 0, again.stderr[-4000:]
        log += again.stderr
    (src / "second-grid.log").write_text(log)
    build = subprocess.run(
        [str(JB), "build", "--all", str(src)], cwd=src, env=env, capture_output=True, text=True, timeout=1500
    )
    assert build.returncode == 0, (build.stdout + build.stderr)[-4000:]
    html = src / "_build" / "html"
    assert (html / "index.html").is_file()
    return html


def _page(html: Path, rel: str) -> str:
    path = html / rel
    assert path.is_file(), f"{rel} was not built"
    return path.read_text(encoding="utf-8")


def _content_images(html: Path, rel: str) -> list[Path]:
    """<img> of the page's own content (not the theme's logos): rendered PNGs under _images/."""
    text = _page(html, rel)
    srcs = re.findall(r'<img[^>]*src="([^"]+\.png)"', text)
    page_dir = (html / rel).parent
    return [(page_dir / s).resolve() for s in srcs if "_images/" in s]


def test_every_chapter_is_built(built_book: Path):
    for rel in (
        "book/intro.html",
        "book/protocol.html",
        "book/metrics.html",
        "book/first_stage.html",
        "book/generated/results.html",
        "notebooks/lab.html",
        "book/paper_scale.html",
        "book/references.html",
        "book/generated/smoke/data/ml-100k.html",
    ):
        _page(built_book, rel)
    runs = list((built_book / "book" / "generated" / "smoke" / "rerank").glob("*.html"))
    assert len(runs) == 2  # the two runs the smoke grid declares


def test_a_run_added_with_papermill_appears_in_the_results(built_book: Path):
    log = (built_book.parents[1] / "second-grid.log").read_text()
    assert "0 computed" in log and "1 notebooks executed" in log, log[-2000:]
    assert "executing results.ipynb" in log
    results = _page(built_book, "book/generated/results.html")
    assert "at K = 6, 8, 10:" in results  # Figure 2's sentence: the new K joins the sweep


def test_results_page_holds_the_table_and_the_figures_as_images(built_book: Path):
    assert not (built_book / "book" / "experiments.html").exists()  # one results page, not two
    for rel in ("book/generated/results.html",):
        text = _page(built_book, rel)
        assert text.count("<table") >= 3, rel
        assert "HR@5" in text and "PPI" in text and "LOC" in text
        images = _content_images(built_book, rel)
        assert len(set(images)) >= 2, f"{rel}: expected Figure 1 and Figure 2 as images, found {images}"
        for img in images:
            assert img.is_file() and img.stat().st_size > 1000
    exp = _page(built_book, "book/generated/results.html")
    # every table states model, dataset, K, M and the number of queries
    for needle in ("K = ", "M = ", "queries"):
        assert needle in exp
    assert "No key" not in exp and "not found" not in exp


def test_no_error_output_in_any_page(built_book: Path):
    for page in built_book.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "Traceback (most recent call last)" not in text, page
        assert 'class="output error' not in text, page
        assert "IPython.core.display" not in text, page  # a glued object pasted as its repr


def test_the_intro_states_the_headline_result(built_book: Path):
    intro = _page(built_book, "book/intro.html")
    found = re.search(r"of the (\d+) claims of the paper.{0,40}tested here: <strong>(\d+) reproduced</strong>", intro)
    assert found and int(found.group(2)) <= int(found.group(1)), "the intro quotes the five-category headline"
    for category in ("by construction", "tested in part", "unresolved", "contradicted"):
        assert re.search(rf"\d+ (reproduced )?{category}", intro), category
    assert "cannot be tested with this data and these models" in intro


def test_worked_answers_are_hidden_by_default(built_book: Path):
    lab = _page(built_book, "notebooks/lab.html")
    assert lab.count("dropdown") >= 4
    assert "tag_hide-cell" in lab


def test_no_launch_buttons_without_a_repository_url(built_book: Path):
    """Built without a repository address (``repository.url`` empty): no Binder or repository link at all (never a
    placeholder), and the lab's "get the code" box says so; the
    download buttons of executed pages give their executed notebook, which is in the build."""
    for rel in ("notebooks/lab.html", "book/generated/results.html", "book/generated/smoke/data/ml-100k.html"):
        text = _page(built_book, rel)
        assert "mybinder.org" not in text and "PLACEHOLDER" not in text and "github.com/" not in text, rel
        downloads = re.findall(r'href="([^"]+\.ipynb)"', text)
        assert downloads, rel
        for href in downloads:
            assert (built_book / rel).parent.joinpath(href).resolve().is_file(), (rel, href)
    assert "built without a repository address" in _page(built_book, "notebooks/lab.html")


def test_the_lab_page_offers_the_students_notebook(built_book: Path):
    import json

    lab = _page(built_book, "notebooks/lab.html")
    assert 'href="../_static/lab-student.ipynb"' in lab
    assert "_sources/notebooks/lab.ipynb" not in lab  # the page's download button serves the student version
    student = json.loads((built_book / "_static" / "lab-student.ipynb").read_text(encoding="utf-8"))
    assert "Worked answer" not in json.dumps(student) and "Worked answer" in lab
    assert "{{" not in json.dumps(student)  # the book's substitutions are filled in


def test_no_page_shows_a_machine_path_or_a_file_readers_do_not_have(built_book: Path):
    for page in built_book.rglob("*.html"):
        if "_static" in page.parts:
            continue
        text = page.read_text(encoding="utf-8")
        assert "PROTOCOL.md" not in text and "PROTOCOL §" not in text, page
        assert str(built_book.parents[1]) not in text, page  # the build folder, e.g. results_dir=/tmp/...


def test_every_page_passes_the_browser_checks(built_book: Path):
    from tests.book.test_browser import check_site, chromium

    browser = chromium()
    _need(browser is not None, "chromium is not installed")
    report = check_site(built_book, browser, serve=True)  # over http://127.0.0.1, as the published site is read
    checked = int(report.pop("")[0])
    assert checked >= 10
    assert not report, "\n".join(f"{page}: {p}" for page, problems in report.items() for p in problems)


def test_mathjax_is_served_from_the_book(built_book: Path):
    text = _page(built_book, "book/metrics.html")
    assert re.search(r'<script[^>]+src="[./]*_static/mathjax/tex-chtml\.js', text)
    assert "cdn.jsdelivr" not in text and "mathjax@3/es5" not in text
    assert (built_book / "_static" / "mathjax" / "tex-chtml.js").is_file()


def _flags(tmp_path: Path) -> list[str]:
    """The browser checks' flags (tests/book/test_browser.py) with a fresh profile folder."""
    from tests.book.test_browser import CHROMIUM_FLAGS

    return [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"]


def test_chromium_shows_rendered_math(built_book: Path, tmp_path: Path):
    chromium = _chromium()
    _need(chromium is not None, "chromium is not installed")
    for rel in ("book/metrics.html", "book/intro.html"):
        url = (built_book / rel).as_uri()
        proc = subprocess.run(
            [chromium, *_flags(tmp_path), "--dump-dom", url], capture_output=True, text=True, timeout=180
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        dom = proc.stdout
        assert dom.count("<mjx-container") >= 3, f"{rel}: MathJax did not render"
        body = dom.split("<body", 1)[-1]
        text_only = re.sub(r"<script.*?</script>", "", body, flags=re.S)
        assert "$$" not in text_only, f"{rel}: raw $$ left in the page"
        assert "\\frac" not in re.sub(
            r"<[^>]+>", "", re.sub(r"<mjx-assistive-mml.*?</mjx-assistive-mml>", "", text_only, flags=re.S)
        ), f"{rel}: raw TeX left"


def test_screenshot_of_results_page_is_not_blank(built_book: Path, tmp_path: Path):
    chromium = _chromium()
    _need(chromium is not None, "chromium is not installed")
    shot = tmp_path / "results.png"
    url = (built_book / "book" / "generated" / "results.html").as_uri()
    flags = [f for f in _flags(tmp_path) if not f.startswith("--window-size")]
    proc = subprocess.run(
        [chromium, *flags, "--window-size=1280,2400", f"--screenshot={shot}", url],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("L"), dtype=np.float64)
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    non_white = (pixels < 235).mean()
    assert pixels.std() > 20, f"screenshot looks blank (grey-level s.d. {pixels.std():.1f})"
    assert non_white > 0.03, f"screenshot looks blank ({non_white:.1%} non-white pixels)"
    # plots are coloured: the figures' lines and bands give many distinct colours
    rgb = np.asarray(Image.open(shot).convert("RGB"))
    assert len(np.unique(rgb.reshape(-1, 3)[::7], axis=0)) > 200


def test_a_failing_notebook_fails_the_build(tmp_path: Path):
    """With the book's own _config.yml, a page whose code raises makes `jupyter-book build` exit non-zero
    (not merely warn)."""
    shutil.copy2(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "book").mkdir()
    shutil.copytree(ROOT / "book" / "_ext", tmp_path / "book" / "_ext")  # the config's local extensions
    (tmp_path / "book" / "references.bib").write_text("")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    (tmp_path / "book" / "intro.md").write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\nkernelspec:\n  name: python3\n"
        "  display_name: Python 3\n---\n# Broken\n\n```{code-cell} ipython3\nraise ValueError('deliberate')\n```\n"
    )
    proc = subprocess.run([str(JB), "build", str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "deliberate" in proc.stdout + proc.stderr or "ExecutionError" in proc.stdout + proc.stderr
