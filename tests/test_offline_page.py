"""No page asks a host other than the lab's server for anything, and a chart's camera gives the slide (issue 51).

A room without internet got a missing icon on every page: the page icon (``:material/memory:``) was fetched from
fonts.gstatic.com by Streamlit's front end. Each page of lab.PAGES, in English and in Chinese, is opened in a fresh
Chromium context (an empty cache: every file the page needs is asked for) on `streamlit run serve.py` (the README's
command, warm), and every request and websocket of the page is recorded with its host. The recall page's chart is
then downloaded through the modebar's camera, as a presenter would: a 2560x1440 PNG (1280x720 at 2x) named for the
chart, drawn from a chart whose title is in the page's language and whose bars are named by the memories' texts. And
the study page's report downloads with its charts drawn on the server (kaleido and Chromium, inside the lab's server).
"""

from __future__ import annotations

import re
import struct
from urllib.parse import urlparse

import pytest

from lab import PAGES, i18n
from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, LOAD_TIMEOUT_MS, SCREEN, _lab_server, _open_watching

pytestmark = pytest.mark.browser

LOCAL = {"127.0.0.1"}
IDS = re.compile(r"^m\d+(·\d+)?$")


@pytest.fixture(scope="module")
def offline_server(tmp_path_factory):
    with _lab_server(tmp_path_factory) as base:
        yield base


@pytest.fixture(scope="module")
def chromium(offline_server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def recorded(chromium):
    """A tab in a new context (no cache, no cookies) and the list of every URL it asks for (requests, websockets)."""
    context = chromium.new_context(viewport=SCREEN, accept_downloads=True)
    tab = context.new_page()
    asked: list[str] = []
    tab.on("request", lambda request: asked.append(request.url))
    tab.on("websocket", lambda socket: asked.append(socket.url))
    yield tab, asked
    context.close()


def _outside(asked: list[str]) -> list[str]:
    return [url for url in asked if urlparse(url).scheme not in ("data", "blob") and urlparse(url).hostname not in LOCAL]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("spec", PAGES, ids=[p.url_path for p in PAGES])
def test_every_page_loads_with_no_request_outside_the_server(offline_server, recorded, spec, lang):
    tab, asked = recorded
    _open_watching(tab, f"{offline_server}/{spec.link}" + ("?lang=zh" if lang == "zh" else ""), chart=spec.has_chart)
    tab.wait_for_timeout(500)  # the favicon and late fonts are asked for after the first run
    assert tab.locator("[data-testid='stException']").count() == 0
    assert len(asked) > 10, asked  # the recording works: the page's own files were asked for
    assert _outside(asked) == [], _outside(asked)


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_charts_camera_gives_a_titled_slide_at_2x_with_texts_for_labels(offline_server, recorded, lang):
    """One click on the recall chart's camera: ``recall-candidates.png``, 2560x1440; the chart drawn has its title in
    the page's language and its bars named by texts (no m4, m54), and the download asks nothing outside."""
    tab, asked = recorded
    _open_watching(tab, f"{offline_server}/" + ("?lang=zh" if lang == "zh" else ""), chart=True)  # warm: its model
    chart = tab.locator(".stPlotlyChart").first
    title = chart.locator(".gtitle").first.text_content() or ""  # SVG text
    assert title.startswith(i18n.TEXT["fig.title.candidates"][lang]), title
    ticks = [t for t in chart.locator(".xtick text").all_text_contents() if t.strip()]
    assert ticks and not [t for t in ticks if IDS.match(t)], ticks
    chart.hover()
    camera = chart.locator(".modebar-btn[data-title^='Download plot']")
    camera.wait_for(state="visible", timeout=LOAD_TIMEOUT_MS)
    with tab.expect_download(timeout=60_000) as download:
        camera.click()
    assert download.value.suggested_filename == "recall-candidates.png"
    assert _png_size(open(download.value.path(), "rb").read()) == (2560, 1440)
    assert _outside(asked) == [], _outside(asked)


def test_the_study_pages_report_downloads_with_every_chart_as_a_slide(offline_server, recorded):
    """The study page's "Download report" (the shipped scenario runs at once): a zip whose report.md names the
    dataset and shows each chart, the charts drawn by the server as 2560x1440 PNGs while the page asks nothing
    outside."""
    import io
    import zipfile

    from lab import report

    tab, asked = recorded
    _open_watching(tab, f"{offline_server}/study-view", chart=True)
    with tab.expect_download(timeout=120_000) as download:
        tab.get_by_role("button", name=i18n.TEXT["report.download"]["en"]).click()
    assert download.value.suggested_filename.startswith("study-report-workshop-en-")
    zipped = zipfile.ZipFile(io.BytesIO(open(download.value.path(), "rb").read()))
    text = zipped.read("report.md").decode("utf-8")
    assert "`workshop-en`" in text and "## Recommended operating point" in text
    for chart in report.CHARTS:
        assert f"](charts/{chart}.png)" in text, text
        assert _png_size(zipped.read(f"charts/{chart}.png")) == (2560, 1440), chart
    assert _outside(asked) == [], _outside(asked)
