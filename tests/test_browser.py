"""The built book in headless Chromium, offline: every page loads without errors from the book's own assets,
every figure renders, and every static explorer's controls change its figure. Screenshots go to
``_build/browser-artifacts/``.

Needs ``_build/html`` (``make book``; or the folder in ``$LATENTBOOK_HTML``) and Debian's ``/usr/bin/chromium`` (``bash tools/ensure_chromium.sh``),
driven by the ``playwright`` package from PyPI (never ``playwright install``). The book is served by
``http.server`` on 127.0.0.1; every request to another host is blocked, so a page that needs the network fails.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

from .built_book import newest_source

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("LATENTBOOK_HTML", ROOT / "_build" / "html"))  # another built site, if set
# Screenshots of this run only, one folder per pytest-xdist worker (each clears its own at its start)
ARTIFACTS = ROOT / "_build" / "browser-artifacts" / os.environ.get("PYTEST_XDIST_WORKER", "main")
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (BUILD / "index.html").is_file(), reason="no built book in _build/html: run `make book` first"
    ),
    pytest.mark.skipif(
        not CHROMIUM.is_file(), reason="Debian chromium is missing: run `bash tools/ensure_chromium.sh`"
    ),
]


@pytest.fixture(scope="module", autouse=True)
def built_book_is_current():
    """Refuse to test a ``_build/html`` older than its sources: it would pass or fail for a book that is gone."""
    if "LATENTBOOK_HTML" in os.environ:
        return
    # tools/build_book.sh writes this marker after every build, incremental ones too (Sphinx rewrites only the
    # pages that changed, so index.html can be older than a source that a later build did include).
    marker = BUILD.parent / ".package-source-hash"
    built = max((BUILD / "index.html").stat().st_mtime, marker.stat().st_mtime if marker.is_file() else 0.0)
    newest, path = newest_source()
    if newest > built:
        pytest.fail(
            f"_build/html is older than {path.relative_to(ROOT)}: rebuild the book (make book) before the browser "
            "tests, or set LATENTBOOK_HTML to test another build"
        )


def _pages() -> list[str]:
    """Every HTML page of the site, relative to _build/html (not the static or source folders)."""
    if not BUILD.is_dir():
        return []
    return sorted(
        str(path.relative_to(BUILD))
        for path in BUILD.rglob("*.html")
        if not any(part.startswith("_") for part in path.relative_to(BUILD).parts)
    )


PAGES = _pages()
EXPLORER_PAGES = [
    page for page in PAGES if 'class="latentbook-explorer"' in (BUILD / page).read_text("utf-8")
]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def site():
    shutil.rmtree(ARTIFACTS, ignore_errors=True)  # screenshots of this run only
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(BUILD))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),  # a fresh user-data-dir
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
        )
        blocked: list[str] = []

        def offline(route) -> None:
            if urlparse(route.request.url).hostname == "127.0.0.1":
                route.continue_()
            else:
                blocked.append(route.request.url)
                route.abort()

        context.route("**/*", offline)
        context.blocked = blocked
        yield context
        context.close()


class _Watch:
    """Console errors, uncaught exceptions and failed responses of one page, sorted into the book's own or not."""

    def __init__(self, page, site: str):
        self.site = site
        self.own: list[str] = []
        self.foreign: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.own.append(f"uncaught exception: {error}"))
        page.on("response", self._response)

    def _mine(self, url: str) -> bool:
        # Chromium asks for /favicon.ico by itself when a page names no icon: not an asset of the book
        return url.startswith(self.site) and not url.endswith("/favicon.ico")

    def _console(self, message) -> None:
        if message.type != "error":
            return
        url = (message.location or {}).get("url", "")
        (self.own if self._mine(url) else self.foreign).append(f"{message.text} ({url})")

    def _response(self, response) -> None:
        if response.status >= 400 and self._mine(response.url):
            self.own.append(f"HTTP {response.status} for {response.url}")


def _artifact(name: str) -> Path:
    """A file under ARTIFACTS; each part of ``name`` made safe as a file name."""
    path = ARTIFACTS.joinpath(*(re.sub(r"[^A-Za-z0-9_.-]+", "_", part) for part in name.split("/")))
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


_IMAGES_LOADED = """async () => {
  const images = Array.from(document.images);
  for (const img of images) { img.loading = "eager"; }
  await Promise.all(images.map(img => img.complete ? null : new Promise(done => {
    img.addEventListener("load", done); img.addEventListener("error", done); setTimeout(done, 15000);
  })));
  return images.filter(img => !(img.complete && img.naturalWidth > 0)).map(img => img.currentSrc || img.src);
}"""


@pytest.mark.parametrize("page_path", PAGES)
def test_page_loads_offline_without_errors_and_its_figures_render(browser, site, page_path):
    page = browser.new_page()
    watch = _Watch(page, site)
    page.goto(site + page_path, wait_until="load")
    page.wait_for_load_state("networkidle")
    broken = page.evaluate(_IMAGES_LOADED)
    page.screenshot(path=_artifact(f"pages/{page_path}.png"))
    n_images = page.evaluate("document.images.length")
    page.close()
    if watch.foreign:
        _artifact(f"pages/{page_path}.foreign-errors.txt").write_text("\n".join(watch.foreign))
    assert not watch.own, f"{page_path}: errors from the book's own assets:\n" + "\n".join(watch.own)
    assert not broken, f"{page_path}: {len(broken)} of {n_images} images did not load: {broken}"


_STATE = """(element) => JSON.stringify({
  title: element.layout.title && element.layout.title.text,
  shown: element.data.map((t, i) => t.visible === true ? i : -1).filter(i => i >= 0),
  data: element.data.filter(t => t.visible === true).map(t => [t.x, t.y]),
})"""
# plotly applies a slider step in the next animation frame (sliders/draw.js: requestAnimationFrame), so the
# figure is read again until it differs from ``before`` or the wait runs out
_CHANGED = f"""([element, before]) => ({_STATE})(element) !== before"""


class _Explorer:
    """Drives one static explorer with the mouse, as a reader would, and screenshots each step."""

    def __init__(self, page, element, name: str):
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        self.page, self.element, self.name = page, element, name
        self.timeout_error = PlaywrightTimeout
        self.shots = 0
        self.positions = iter([0.05, 0.95] * 50)  # alternate ends of the slider: every move changes the depth
        element.locator(".main-svg").first.wait_for(timeout=60000)
        element.scroll_into_view_if_needed()
        self.menus = element.evaluate("(e) => e.layout.updatemenus.map(m => m.buttons.map(b => b.label))")

    def state(self) -> str:
        return self.element.evaluate(_STATE)

    def state_after(self, before: str, timeout_ms: float = 10000) -> str:
        """The figure's state once it differs from ``before``, or as it is after ``timeout_ms``."""
        handle = self.element.element_handle()
        try:
            self.page.wait_for_function(_CHANGED, arg=[handle, before], timeout=timeout_ms)
        except self.timeout_error:
            pass
        return self.state()

    def snap(self, what: str) -> None:
        self.shots += 1
        self.element.screenshot(path=_artifact(f"explorers/{self.name}-{self.shots:02d}-{what}.png"))

    def choose(self, menu: int, label: str) -> None:
        before = self.state()
        self.element.locator(".updatemenu-header-group").nth(menu).click()
        item = self.element.locator(".updatemenu-item-text", has_text=re.compile(f"^{re.escape(label)}$"))
        item.first.click()
        after = self.state_after(before)
        self.snap(label)
        assert after != before, f"{self.name}: choosing {label!r} did not change the figure"

    def slide(self) -> None:
        fraction = next(self.positions)
        before = self.state()
        box = self.element.locator(".slider-rail-rect").first.bounding_box()
        self.page.mouse.click(box["x"] + fraction * box["width"], box["y"] + box["height"] / 2)
        after = self.state_after(before)
        self.snap(f"slider-{fraction:.2f}")
        assert after != before, (
            f"{self.name}: moving the depth slider to {fraction:.0%} did not change the figure"
        )
        assert json.loads(after)["title"] != json.loads(before)["title"]


@pytest.mark.skipif(not EXPLORER_PAGES, reason="no static explorer in the built book")
@pytest.mark.parametrize("page_path", EXPLORER_PAGES)
def test_static_explorer_controls_change_the_figure_offline(browser, site, page_path):
    page = browser.new_page()
    watch = _Watch(page, site)
    page.goto(site + page_path, wait_until="load")
    elements = page.locator(".latentbook-explorer")
    assert elements.count() >= 1
    for k in range(elements.count()):
        explorer = _Explorer(page, elements.nth(k), f"{page_path}-{k}")
        assert page.evaluate("typeof window.Plotly") == "object"
        explorer.snap("start")
        explorer.slide()
        explorer.slide()
        models, metrics = explorer.menus
        for label in metrics[1:]:  # every other metric, for the first model
            explorer.choose(1, label)
            explorer.slide()
        for label in models[1:]:  # every other model, on the last metric
            explorer.choose(0, label)
            explorer.slide()
        explorer.choose(1, metrics[0])  # back to the first metric, at the last model's depth
    page.close()
    assert not watch.own, f"{page_path}: errors from the book's own assets:\n" + "\n".join(watch.own)
    assert not [url for url in browser.blocked if "plotly" in url], "plotly.js was requested from the network"


# Every table, code block and figure of a page, measured against the width of the content column (its inner
# width, without the column's padding). A table is measured by the box that scrolls it sideways (a wrapper, or
# the table itself), so a wide table in its own scrolling box passes and one without fails; an element that is
# not shown (a collapsed hide-input cell) has no box and is skipped.
_TOO_WIDE = """() => {
  const column = document.querySelector(".bd-article") || document.querySelector("main");
  if (!column) { return ["no .bd-article or main on the page"]; }
  const style = getComputedStyle(column);
  const inner = column.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const found = [];
  const scrolls = (e) => ["auto", "scroll"].includes(getComputedStyle(e).overflowX);
  const scroller = (e) => {  // the element itself or an ancestor inside the column that scrolls sideways
    for (let a = e; a && a !== column; a = a.parentElement) { if (scrolls(a)) { return a; } }
    return null;
  };
  for (const element of column.querySelectorAll("table, pre, figure, img")) {
    const box = element.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) { continue; }
    const own = element.tagName === "TABLE" ? scroller(element) : null;  // a wide table scrolls in its box
    const width = own ? own.getBoundingClientRect().width : Math.max(box.width, element.scrollWidth);
    if (width > inner + 2) {
      const what = (element.getAttribute("src") || element.textContent || "").trim().replace(/\\s+/g, " ");
      found.push(`${element.tagName.toLowerCase()} ${Math.round(width)} px wide in a ${Math.round(inner)} px`
        + ` column: ${what.slice(0, 80)}`);
    }
  }
  return found;
}"""


@pytest.mark.parametrize("page_path", PAGES)
def test_no_table_code_block_or_figure_is_wider_than_the_content_column(browser, site, page_path):
    page = browser.new_page()
    page.goto(site + page_path, wait_until="load")
    page.wait_for_load_state("networkidle")
    page.evaluate(_IMAGES_LOADED)
    page.evaluate("document.fonts.ready.then(() => true)")
    too_wide = page.evaluate(_TOO_WIDE)
    if too_wide:  # measured again once the layout has settled (a busy machine can measure mid-layout)
        page.wait_for_timeout(2000)
        too_wide = page.evaluate(_TOO_WIDE)
    if too_wide:
        page.screenshot(path=_artifact(f"too-wide/{page_path}.png"), full_page=True)
    page.close()
    assert not too_wide, f"{page_path}: wider than the content column:\n" + "\n".join(too_wide)


def test_no_command_on_any_page_has_its_double_hyphen_turned_into_a_dash():
    """Glued commands and docstrings are text, not code literals; Sphinx's smart dashes would print
    ``--max-prompts`` as ``–max-prompts``, which a reader cannot paste (``smartquotes_action`` in _config.yml)."""
    dashed = {
        page: sorted(set(re.findall(r"[\s(>]\u2013[a-z][a-z-]+", (BUILD / page).read_text(encoding="utf-8"))))
        for page in _pages()
    }
    dashed = {page: found for page, found in dashed.items() if found}
    assert not dashed, f"an option printed with a dash instead of '--': {dashed}"


# Where the title, the legend, the toolbar and the menus of a plotly figure lie; which of them overlap.
_OVERLAPS = """(element) => {
  const box = (selector) => {
    const found = element.querySelector(selector);
    if (!found) { return null; }
    const r = found.getBoundingClientRect();
    return r.width > 0 && r.height > 0 ? {left: r.left, top: r.top, right: r.right, bottom: r.bottom} : null;
  };
  const parts = {title: box(".gtitle"), legend: box(".legend"), toolbar: box(".modebar"),
                 menus: box(".updatemenu-container")};
  const hit = (a, b) => a && b && a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const pairs = [["title", "legend"], ["title", "toolbar"], ["legend", "menus"], ["legend", "toolbar"]];
  return {found: Object.keys(parts).filter(k => parts[k]),
          overlaps: pairs.filter(([a, b]) => hit(parts[a], parts[b])).map(([a, b]) => `${a} overlaps ${b}`)};
}"""


@pytest.mark.parametrize("metric", ["omega", "spectrum"])
def test_the_explorers_title_legend_and_toolbar_do_not_overlap(browser, metric):
    """The static explorer (the book's) and the live one's figure layout (JupyterLab's), each with the legend of
    ``metric`` (the spectrum view's has two rows), drawn by the book's plotly.js: the title, legend, toolbar
    and menus each keep their own place."""
    import numpy as np
    import plotly
    import plotly.graph_objects as go

    from latentbook.analysis import synthetic
    from latentbook.view import explorer, static_explorer, widgets

    states = np.random.default_rng(0).standard_normal((5, 200, 48))
    cap = synthetic.as_capture(states, np.repeat(np.arange(40), 5), np.tile(np.arange(5), 40))
    views = {
        "a model with a long name": explorer.ModelViews("m", cap),
        "random:twin": explorer.ModelViews("t", cap),
    }
    static = static_explorer.static_explorer(views, metrics=[metric])
    live = go.Figure(
        data=static.data, layout=widgets.figure_layout() | {"title": {"text": static.layout.title.text}}
    )
    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    for name, figure in (("static", static), ("live", live)):
        page = browser.new_page()
        page.set_content('<div id="figure" style="width:900px;height:700px"></div>')
        page.add_script_tag(path=str(plotly_js))
        page.evaluate(
            "(f) => Plotly.newPlot('figure', f.data, f.layout, {responsive: true, displaylogo: false})",
            json.loads(figure.to_json()),
        )
        page.hover("#figure .main-svg")  # the toolbar shows on hover
        layout = page.locator("#figure").evaluate(_OVERLAPS)
        page.screenshot(path=_artifact(f"explorer-layout/{name}-{metric}.png"))
        page.close()
        assert {"title", "legend", "toolbar"} <= set(layout["found"]), (name, layout)
        assert not layout["overlaps"], f"{name} explorer, {metric}: {layout['overlaps']}"


def _page_at_book_width(browser, site: str, page_path: str):
    """``page_path`` loaded in a 1366 px wide window (the width the book's standard is stated at)."""
    page = browser.new_page()
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(site + page_path, wait_until="load")
    page.wait_for_load_state("networkidle")
    page.evaluate(_IMAGES_LOADED)
    page.evaluate("document.fonts.ready.then(() => true)")
    return page


# An image's alt text must say what it shows: not empty, not a file name or path (one word holding a slash),
# not a hash. The theme's own icons (``_static/``: the index's collapse toggles) are controls, not figures.
_BAD_ALT = r"""() => Array.from(document.querySelectorAll(".bd-article img"))
  .filter(img => !(img.getAttribute("src") || "").includes("_static/")).map(img => {
  const alt = (img.getAttribute("alt") || "").trim();
  const named = /^\S*[\\/]\S*$/.test(alt) || /\.(png|jpe?g|gif|svg|webp)$/i.test(alt) || /^[0-9a-f]{16,}$/i.test(alt);
  return alt.length < 12 || named ? `${img.getAttribute("src")}: alt ${JSON.stringify(alt)}` : null;
}).filter(Boolean)"""


@pytest.mark.parametrize("page_path", PAGES)
def test_every_image_has_alt_text_that_says_what_it_shows(browser, site, page_path):
    page = _page_at_book_width(browser, site, page_path)
    bad = page.evaluate(_BAD_ALT)
    page.close()
    assert not bad, f"{page_path}: images whose alt text is empty or a file name:\n" + "\n".join(bad)


# Every word and number in a table cell, as the page lays it out: a token whose text spans more than one line
# box (Range.getClientRects gives one rectangle per line) is broken mid-token ("stays_liq/uid", "7.5e-/08"),
# unless it is a hyphenated word of a prose table, which may break after its hyphen.
_BROKEN_IN_TABLES = r"""() => {
  const found = [];
  for (const cell of document.querySelectorAll(".bd-article table td, .bd-article table th")) {
    if (cell.getBoundingClientRect().width === 0) { continue; }
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/\S+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0)
          .map(r => Math.round(r.top)));
        // a hyphenated word of prose ("between-class") may break after its hyphen, as print does; names,
        // numbers and anything a code cell printed may not
        const prose = /^[(\[]?[A-Za-z]*[-\u2013][A-Za-z\-\u2013]*[)\],.;:]?$/.test(match[0])
          && !cell.closest(".cell_output");
        if (lines.size > 1 && !prose) { found.push(`${match[0]} (in a cell of ${cell.closest("table").rows.length} rows)`); }
      }
    }
  }
  return found;
}"""


@pytest.mark.parametrize("page_path", PAGES)
def test_no_word_or_number_in_a_table_is_broken_across_lines(browser, site, page_path):
    page = _page_at_book_width(browser, site, page_path)
    broken = page.evaluate(_BROKEN_IN_TABLES)
    page.close()
    assert not broken, f"{page_path}: {len(broken)} tokens broken inside table cells:\n" + "\n".join(
        broken[:20]
    )


# Every element that holds text of its own, outside formulas (MathJax scales its scripts on purpose), at its
# computed font size.
_SMALL_TEXT = """(minimum) => {
  const found = [];
  for (const element of document.querySelectorAll("body *")) {
    if (element.closest("mjx-container, script, style, svg")) { continue; }
    const own = Array.from(element.childNodes).some(n => n.nodeType === 3 && n.data.trim());
    if (!own) { continue; }
    const box = element.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) { continue; }
    const size = parseFloat(getComputedStyle(element).fontSize);
    if (size < minimum) {
      found.push(`${element.tagName.toLowerCase()} at ${size} px: ${element.textContent.trim().slice(0, 40)}`);
    }
  }
  return found;
}"""


@pytest.mark.parametrize("page_path", PAGES)
def test_no_text_is_under_9_px(browser, site, page_path):
    """Figures' text is checked where they are drawn (view.figure_check, tests/test_figure_check.py)."""
    page = _page_at_book_width(browser, site, page_path)
    small = page.evaluate(_SMALL_TEXT, 9)
    page.close()
    assert not small, f"{page_path}: text under 9 px:\n" + "\n".join(small[:20])
