"""Every page of a built book, rendered in headless Chromium and checked as a reader would meet it.

A page fails on: a local link or image whose file is missing (download buttons included), an image that did not
load, an image without real alt text (empty, or a file name), the string ``PLACEHOLDER``, a table wider than the
page's content column (also one that only fits by scrolling), or raw math left after MathJax (``$$``, ``\\frac``,
``\\begin{``, ...), and, over HTTP, a file the page asked for that the server did not give (status 400 or more).
:func:`check_site` does it for a whole ``_build/html`` folder, read from disk (``file://``) or, as a reader of the
published site meets it, served over HTTP on 127.0.0.1 by Python's ``http.server`` (what
``python -m http.server --bind 127.0.0.1 --directory _build/html`` serves; ``serve=True``). The smoke build of
``tests/book/test_build.py`` runs it served in ``make test``, and the full book is checked with

    .venv/bin/python -m tests.book.test_browser _build/html            # from disk
    .venv/bin/python -m tests.book.test_browser --http _build/html     # served over http://127.0.0.1

Each page is copied beside itself with a small script appended that waits for MathJax, measures the tables and
images in the browser and writes what it found into the DOM, which ``chromium --dump-dom`` returns.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--window-size=1280,2000",
    "--virtual-time-budget=20000",
)

#: raw TeX that MathJax should have replaced
RAW_MATH = ("$$", "\\frac", "\\begin{", "\\mathbb", "\\sum", "\\binom", "\\lfloor")

_PROBE = r"""
<script>
(function () {
  function report() {
    var out = {wide_tables: [], bad_images: [], raw_math: [], failed: []};
    // over HTTP: every file the page loaded with an error status (a file:// page reports 0, never an error)
    (performance.getEntriesByType("resource") || []).forEach(function (e) {
      if (e.responseStatus >= 400) out.failed.push({url: e.name, status: e.responseStatus});
    });
    var main = document.querySelector("article.bd-article") || document.querySelector("article") ||
               document.querySelector("main") || document.body;
    // the content box: the article's padding is not room a table can use (a table 700 px wide in a 752 px
    // article with 32 px of padding on each side is cut off by the column's scroll box)
    var style = window.getComputedStyle(main);
    var width = main.clientWidth - parseFloat(style.paddingLeft || 0) - parseFloat(style.paddingRight || 0);
    main.querySelectorAll("table").forEach(function (t) {
      var w = Math.max(t.scrollWidth, t.getBoundingClientRect().width);
      if (w > width + 2) out.wide_tables.push({width: Math.round(w), page: Math.round(width),
                                               head: (t.innerText || "").slice(0, 80)});
    });
    document.querySelectorAll("img").forEach(function (img) {
      var alt = (img.getAttribute("alt") || "").trim();
      // the theme's toolbar icons (e.g. the Binder logo of the launch buttons) name a button: a short alt is right
      var icon = img.closest(".article-header-buttons") !== null;
      var problem = null;
      if (!img.complete || img.naturalWidth === 0) problem = "did not load";
      else if ((alt.split(/\s+/).length < 3 && !(icon && alt)) || /\.(png|jpe?g|svg|gif)$/i.test(alt) ||
               alt.indexOf("_images/") >= 0)
        problem = "no real alt text";
      if (problem) out.bad_images.push({src: img.getAttribute("src"), alt: alt, problem: problem});
    });
    var clone = (main.cloneNode(true));
    clone.querySelectorAll("script, mjx-assistive-mml, pre, code, .highlight, textarea").forEach(
      function (e) { e.remove(); });
    var text = clone.textContent || "";
    RAW.forEach(function (needle) { if (text.indexOf(needle) >= 0) out.raw_math.push(needle); });
    // inline math MathJax left alone, e.g. "$K = 10$" in a Markdown output (a dollar amount has no closing one)
    (text.match(/\$[A-Za-z\\][^$\n]{0,60}\$/g) || []).slice(0, 5).forEach(function (m) { out.raw_math.push(m); });
    var pre = document.createElement("pre");
    pre.id = "__book_check__";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  var RAW = __RAW__;
  window.addEventListener("load", function () {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(report, report);
    } else { report(); }
  });
})();
</script>
"""


class _Links(HTMLParser):
    """Every ``href`` and ``src`` of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.urls.append((tag, value))


def chromium() -> str | None:
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def pages(html_dir: Path) -> list[Path]:
    """The book's pages (the theme's search and index pages left out)."""
    skip = {"search.html", "genindex.html", "py-modindex.html"}
    return sorted(
        p
        for p in html_dir.rglob("*.html")
        if p.name not in skip
        and "_static" not in p.parts
        and "_sources" not in p.parts
        and not p.name.endswith(".__check__.html")
    )


def broken_local_links(page: Path, html: str, html_dir: Path) -> list[str]:
    """Local ``href``/``src`` targets of ``page`` that do not exist under the built book."""
    parser = _Links()
    parser.feed(html)
    out = []
    for tag, url in parser.urls:
        parts = urlsplit(url)
        if parts.scheme or url.startswith(("#", "//", "mailto:", "javascript:", "data:")) or not parts.path:
            continue
        target = (page.parent / unquote(parts.path)).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            out.append(f"{tag} {url}")
    return out


def check_page(page: Path, html_dir: Path, browser: str, profile: Path, base_url: str | None = None) -> list[str]:
    """The problems of one page (empty: none); ``base_url`` (e.g. ``http://127.0.0.1:8000/``): the page is opened
    from that server, which serves ``html_dir``, instead of from disk."""
    html = page.read_text(encoding="utf-8")
    problems = [f"broken local link: {x}" for x in broken_local_links(page, html, html_dir)]
    if "PLACEHOLDER" in html:
        problems.append("PLACEHOLDER in the page")
    if re.search(r'http-equiv="refresh"', html, flags=re.I):
        return problems  # a redirect (index.html): its target is checked as a local link
    probe = page.with_name(page.name + ".__check__.html")
    probe.write_text(
        html.replace("</body>", _PROBE.replace("__RAW__", json.dumps(RAW_MATH)) + "</body>"), encoding="utf-8"
    )
    try:
        proc = subprocess.run(
            [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", _address(probe, html_dir, base_url)],
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        probe.unlink()
    found = re.search(r'<pre id="__book_check__"[^>]*>(.*?)</pre>', proc.stdout, flags=re.S)
    if proc.returncode != 0 or not found:
        return problems + [f"chromium did not report (exit {proc.returncode}): {proc.stderr[-300:]}"]
    import html as html_lib

    report = json.loads(html_lib.unescape(found.group(1)))
    problems += [
        f"table wider than the page ({t['width']} > {t['page']} px): {t['head']!r}" for t in report["wide_tables"]
    ]
    problems += [f"image {i['src']}: {i['problem']} (alt {i['alt']!r})" for i in report["bad_images"]]
    problems += [f"raw math left: {needle}" for needle in report["raw_math"]]
    problems += [f"not served: {f['url']} (HTTP {f['status']})" for f in report.get("failed", [])]
    return problems


def _address(page: Path, html_dir: Path, base_url: str | None) -> str:
    if base_url is None:
        return page.as_uri()
    return base_url + quote(page.relative_to(html_dir).as_posix())


@contextmanager
def served(html_dir: Path) -> Iterator[str]:
    """Serve ``html_dir`` over HTTP on 127.0.0.1 (a free port) while the block runs, with the handler of
    ``python -m http.server``; yields the site's base address, e.g. ``http://127.0.0.1:41234/``."""
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # one line per file would drown the report
        pass


def check_site(html_dir: str | Path, browser: str | None = None, *, serve: bool = False) -> dict[str, list[str]]:
    """``{page (relative): [problems]}`` for every page of the built book with a problem, and the number of pages
    checked under the key ``""`` (as a one-element list). ``serve``: the pages are opened over HTTP from
    :func:`served` (127.0.0.1), as the published site is read, instead of from disk."""
    html_dir = Path(html_dir).resolve()
    browser = browser or chromium()
    if browser is None:
        raise RuntimeError("chromium is not installed")
    out: dict[str, list[str]] = {}
    all_pages = pages(html_dir)
    with tempfile.TemporaryDirectory(prefix="book-check-") as profile, ExitStack() as stack:
        base_url = stack.enter_context(served(html_dir)) if serve else None
        for page in all_pages:
            problems = check_page(page, html_dir, browser, Path(profile), base_url)
            if problems:
                out[str(page.relative_to(html_dir))] = problems
    out[""] = [str(len(all_pages))]
    return out


def main(argv: list[str]) -> int:
    serve = "--http" in argv
    argv = [a for a in argv if a != "--http"]
    if len(argv) != 1:
        print("usage: python -m tests.book.test_browser [--http] HTML_DIR   (e.g. _build/html)", file=sys.stderr)
        return 2
    report = check_site(argv[0], serve=serve)
    checked = report.pop("")[0]
    for page, problems in report.items():
        for problem in problems:
            print(f"{page}: {problem}")
    print(f"{checked} pages checked, {len(report)} with problems, {sum(map(len, report.values()))} problems")
    return 1 if report else 0


def test_checker_finds_each_kind_of_problem(tmp_path: Path):
    """The checker itself, on a hand-made page with one problem of each kind and one clean page."""
    import pytest

    browser = chromium()
    if browser is None:
        pytest.skip("chromium is not installed")
    (tmp_path / "ok.png").write_bytes(_PNG)
    good = (
        '<html><body><main style="width:600px"><p>fine</p><table><tr><td>1</td></tr></table>'
        '<img src="ok.png" alt="A red square drawn for the test"><a href="bad.html">x</a>'
        '<div class="article-header-buttons"><img src="ok.png" alt="Binder logo"></div></main></body></html>'
    )
    (tmp_path / "good.html").write_text(good.replace('<a href="bad.html">x</a>', ""))
    bad = (
        '<html><body><main style="width:600px"><p>PLACEHOLDER and $$x^2$$ and \\frac{1}{2} at $K = 10$</p>'
        '<div style="overflow-x:auto"><table style="width:2000px"><tr><td>wide</td></tr></table></div>'
        '<img src="ok.png" alt="ok.png"><img src="missing.png" alt="a missing image here">'
        '<img src="ok.png" alt="Binder logo">'
        '<a href="nowhere.html">x</a></main></body></html>'
    )
    (tmp_path / "bad.html").write_text(bad)
    # a table that fits the padded box but not the content column inside the padding (as in the book's theme)
    padded = (
        '<html><body><main style="width:600px;padding:0 40px;box-sizing:border-box">'
        '<div style="overflow-x:auto"><table style="width:560px"><tr><td>a little too wide</td></tr></table>'
        "</div></main></body></html>"
    )
    (tmp_path / "padded.html").write_text(padded)
    report = check_site(tmp_path, browser)
    assert report[""] == ["3"] and "good.html" not in report
    served_report = check_site(tmp_path, browser, serve=True)  # the same pages over http://127.0.0.1
    assert served_report.keys() == report.keys()
    assert "not served: http://127.0.0.1:" in "\n".join(served_report["bad.html"])  # missing.png: HTTP 404
    assert all("not served" not in p for p in report["bad.html"])  # from disk there is no status to report
    assert report["padded.html"] == ["table wider than the page (560 > 520 px): 'a little too wide'"]
    text = "\n".join(report["bad.html"])
    for needle in (
        "broken local link: a nowhere.html",
        "broken local link: img missing.png",
        "PLACEHOLDER",
        "table wider than the page",
        "ok.png: no real alt text",
        "(alt 'Binder logo')",  # short alt text is right on a toolbar icon (good.html), not in the article
        "missing.png: did not load",
        "raw math left: $$",
        "raw math left: \\frac",
        "raw math left: $K = 10$",
    ):
        assert needle in text, (needle, text)


# a 2 x 2 red PNG
_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000002000000020802000000fdd49a730000001049444154789c63f8cfc000440c100a"
    "001fee03fd8b5f14d40000000049454e44ae426082"
)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
