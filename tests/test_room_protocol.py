"""The room at the protocol level (bench/room_protocol.py), serve.py's compressed, cacheable static files and its
collector settings.

The unit tests drive serve.py's :class:`CompressedStatic` in process (Starlette's test client, the installed Streamlit's
real static folder) and its :func:`freeze_collector` (no full collection after every script run, unless an instructor
asked for it). The ``process`` tests start ``streamlit run serve.py`` once for the module (English warmed, a
fresh data folder) and run the bench's own client against it: three participants, each with its page, the lab's recall
metrics and no exception element, and a slider rerun that came back."""

from __future__ import annotations

import asyncio
import gzip
import json

import pytest

from bench.room_protocol import ROOT, Assets, _static_dir, room_clients, served, summarize
from serve import IMMUTABLE, POST_SCRIPT_GC, CompressedStatic, PackedFiles, _gzip, accepted_codings, freeze_collector

STATIC = _static_dir()
PLOTLY = next((STATIC / "static" / "js").glob("PlotlyChart.*.js"))
"""The largest bundle a lab page loads (the recall chart): 4.7 MB as it is."""
PLOTLY_GZIP_MAX = 1_500_000
"""What the plotly bundle may weigh gzipped (1.42 MB at level 9)."""
PLOTLY_ZSTD_MAX = 1_300_000
"""... and in zstd (1.22 MB at level 12)."""
BROWSER = "gzip, deflate, br, zstd"
"""Chromium's Accept-Encoding."""
EN = json.loads((ROOT / "lab" / "locales" / "en.json").read_text(encoding="utf-8"))


def _client(files: PackedFiles):
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    async def streamlit(request):  # stands for Streamlit's own routes: what the middleware passes on
        return PlainTextResponse("passed on")

    app = Starlette(routes=[Route("/{path:path}", streamlit, methods=["GET", "HEAD"])],
                    middleware=[Middleware(CompressedStatic, files=files)])
    return TestClient(app)


@pytest.fixture(scope="module")
def files() -> PackedFiles:
    return PackedFiles(STATIC)


@pytest.fixture(scope="module")
def gzip_only() -> PackedFiles:
    """A server without the zstandard package: gzip alone."""
    return PackedFiles(STATIC, codecs={"gzip": _gzip})


def _plotly(client, accept: str):
    url = f"/{PLOTLY.relative_to(STATIC).as_posix()}"
    with client.stream("GET", url, headers={"Accept-Encoding": accept}) as resp:
        wire = b"".join(resp.iter_raw())  # the bytes as sent, before the client decodes them
        return resp, wire


def test_a_large_bundle_comes_back_gzipped_once_compressed_and_cacheable(gzip_only):
    resp, wire = _plotly(_client(gzip_only), BROWSER)
    assert resp.status_code == 200
    assert resp.headers["content-encoding"] == "gzip"
    assert len(wire) == int(resp.headers["content-length"]) < PLOTLY_GZIP_MAX < PLOTLY.stat().st_size
    assert gzip.decompress(wire) == PLOTLY.read_bytes()
    assert resp.headers["cache-control"] == IMMUTABLE
    assert resp.headers["vary"] == "Accept-Encoding"
    assert resp.headers["content-type"].startswith("text/javascript")
    head = _client(gzip_only).head(f"/{PLOTLY.relative_to(STATIC).as_posix()}", headers={"Accept-Encoding": "gzip"})
    assert head.headers["content-encoding"] == "gzip" and head.content == b""


def test_a_browser_that_takes_zstd_gets_the_smaller_copy(files):
    zstandard = pytest.importorskip("zstandard")
    resp, wire = _plotly(_client(files), BROWSER)
    assert resp.headers["content-encoding"] == "zstd"
    assert len(wire) < PLOTLY_ZSTD_MAX
    assert zstandard.ZstdDecompressor().decompress(wire) == PLOTLY.read_bytes()
    resp, wire = _plotly(_client(files), "gzip, deflate")  # a browser without zstd (Safari) still gets gzip
    assert resp.headers["content-encoding"] == "gzip" and gzip.decompress(wire) == PLOTLY.read_bytes()


@pytest.mark.parametrize("accept", ["identity", "gzip;q=0, br", "br", ""], ids=["identity", "refused", "br", "none"])
def test_a_client_that_takes_none_of_the_codings_gets_streamlits_own_answer(files, accept):
    resp, wire = _plotly(_client(files), accept)
    assert wire == b"passed on" and "content-encoding" not in resp.headers


def test_a_range_request_gets_streamlits_own_answer(files):
    url = f"/{PLOTLY.relative_to(STATIC).as_posix()}"
    resp = _client(files).get(url, headers={"Accept-Encoding": BROWSER, "Range": "bytes=0-99"})
    assert resp.text == "passed on" and "content-encoding" not in resp.headers


@pytest.mark.parametrize("path", ["/static/js/../../index.html", "/static/js/no-such.js", "/app.py", "/",
                                  "/static/media/SourceSansVF-Upright.ttf.BsWL4Kly.woff2", "/static/js/%2e%2e/x.js"])
def test_only_the_exact_names_of_compressible_static_files_are_served_from_memory(files, path):
    """A path that is not exactly one of Streamlit's compressible static files (a traversal, a missing file, the root
    document, a woff2 font that is compressed already) goes on to Streamlit: nothing reaches the file system."""
    resp = _client(files).get(path, headers={"Accept-Encoding": BROWSER})
    assert resp.text == "passed on" and "content-encoding" not in resp.headers


def test_accept_encoding_is_read_as_browsers_write_it():
    assert accepted_codings(BROWSER) == {"gzip", "deflate", "br", "zstd"}
    assert accepted_codings("br;q=1.0, gzip;q=0.8") == {"br", "gzip"}
    assert accepted_codings("*") == {"gzip"}
    assert accepted_codings("gzip;q=0, zstd;q=0.0") == set()
    assert accepted_codings("gzip;q=x") == set()
    assert accepted_codings("") == set()


def test_each_file_is_compressed_once_however_many_ask_at_once():
    from concurrent.futures import ThreadPoolExecutor

    calls = []

    def counted(raw: bytes) -> bytes:
        calls.append(len(raw))
        return _gzip(raw)

    packed = PackedFiles(STATIC, codecs={"gzip": counted})
    name = PLOTLY.relative_to(STATIC).as_posix()
    with ThreadPoolExecutor(8) as pool:
        bodies = list(pool.map(lambda _: packed.get(name, "gzip"), range(8)))
    assert len(calls) == 1 and len({id(b) for b in bodies}) == 1
    assert packed.ready(name, "gzip") == (True, bodies[0])


def test_the_client_fetches_the_chunks_of_the_elements_a_page_draws():
    """A browser loads an element type's frontend bundle when the page first draws one: the recall page's plotly chart
    is most of a participant's bytes, so the bench's client must fetch it too."""
    assets = Assets.from_static(STATIC)
    plotly = assets.for_element("plotly_chart")
    assert plotly[0] == f"static/js/{PLOTLY.name}" and len(plotly) > 5
    assert all((STATIC / path).is_file() for name in ("plotly_chart", "dataframe", "slider", "table")
               for path in assets.for_element(name))
    assert assets.for_element("markdown") == ()  # drawn by the main bundle
    assert all((STATIC / path).is_file() for path in assets.fonts_for({"text"}, icons=True))


@pytest.fixture
def post_script_gc(monkeypatch):
    """Streamlit's runner.postScriptGC as the test found it, restored after; gc.freeze and gc.collect recorded, not
    run (a frozen test process would keep every later cycle)."""
    import gc

    from streamlit import config

    option = config._config_options[POST_SCRIPT_GC]  # type: ignore[index]
    saved = (option.value, option.where_defined)
    calls: list[str] = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(gc, "collect", lambda *args: calls.append("collect") or 0)
    yield calls
    config._set_option(POST_SCRIPT_GC, *saved)


def test_no_full_collection_after_every_script_run_and_the_warm_heap_frozen(post_script_gc):
    from streamlit import config

    freeze_collector()
    assert config.get_option(POST_SCRIPT_GC) is False
    assert post_script_gc == ["collect", "freeze"]


def test_an_instructors_own_post_script_gc_setting_is_kept(post_script_gc):
    from streamlit import config

    config._set_option(POST_SCRIPT_GC, True, "command-line")  # streamlit run serve.py --runner.postScriptGC true
    freeze_collector()
    assert config.get_option(POST_SCRIPT_GC) is True


# --- against a real serve.py ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    log = tmp_path_factory.mktemp("room-protocol") / "streamlit.log"
    with served("serve.py", cwd=ROOT, env_extra={"MEMORY_LAB_WARM": "en"}, log=log, timeout_s=180) as server:
        yield server


@pytest.mark.process
def test_three_participants_get_the_recall_page_and_their_slider_reruns(lab_server):
    base, proc = lab_server
    results, phases = asyncio.run(room_clients(base, proc.pid, 3, 1.0, 120, bare=False))
    for r in results:
        assert not r.error, r.error
        assert r.exceptions == []
        assert r.lab_page and not r.room_full and r.served
        assert {EN["recall.m_blind"], EN["recall.m_governed"]} <= set(r.metrics), r.metrics
        assert r.slider_s is not None and r.slider_kind in ("page", "fragment")
        assert r.http_bytes > 0 and r.ws_bytes_page > 0 and r.ws_bytes_slider > 0
    summary = summarize(results, **phases)
    assert summary["served"] == 3 and summary["slider_moves"] == 3
    assert summary["cpu_per_arrival_s"] > 0


@pytest.mark.process
def test_the_served_bundles_are_gzipped_and_cacheable(lab_server):
    """On the real server: index.html's main bundle and the plotly bundle come gzipped (to a client without zstd) with
    Streamlit's Cache-Control; a participant's whole first page (HTTP and websocket) stays under 3 MB."""
    import urllib.request

    base, proc = lab_server
    index = next((STATIC / "static" / "js").glob("index.*.js"))
    for bundle in (index, PLOTLY):
        request = urllib.request.Request(f"{base}/static/js/{bundle.name}", headers={"Accept-Encoding": "gzip, br"})
        with urllib.request.urlopen(request, timeout=30) as resp:
            body = resp.read()
            assert resp.headers["Content-Encoding"] == "gzip"
            assert resp.headers["Cache-Control"] == IMMUTABLE
        assert gzip.decompress(body) == bundle.read_bytes()
        assert len(body) < bundle.stat().st_size / 3
    results, _ = asyncio.run(room_clients(base, proc.pid, 1, 0.0, 120, bare=False))
    assert results[0].served, results[0]
    assert results[0].http_bytes + results[0].ws_bytes_page < 3_000_000
