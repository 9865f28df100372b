"""Memory Governance Lab, warm: ``streamlit run serve.py`` serves app.py once the room's starting states are ready.

Before the server opens its port, each UI language's default model is loaded and its default starting state (the
shipped lesson scenario through the default write path) is built, as the room's first arrival would otherwise do
while everyone waits (lab.engine.warm_starting_states). Then every participant's first page starts from a copy.
``MEMORY_LAB_WARM`` names the languages to warm (default ``en,zh``; ``none`` starts at once, as ``streamlit run
app.py`` does). Streamlit runs this file's ``app`` (``st.App``) with its own server; every ``--server.*`` option of
``streamlit run`` still applies.

The URL is printed once the lab is warm, after the warm-up's lines: Streamlit prints it as it binds the port, before
this file is even imported, so the lab's ``.streamlit/config.toml`` hides Streamlit's own welcome message
(``logger.hideWelcomeMessage``) and :func:`print_urls` prints the same lines when the lab is ready (an instructor
read the URL off the console while the warm-up still ran, and the room's first pages waited).

Two things keep a room's arrivals cheap (``python -m bench.room_protocol`` measures both):

* **Static files compressed once, cacheable.** Streamlit serves its frontend's bundles uncompressed (it leaves that to
  a proxy, which a workshop room does not have): 9.5 MB per participant over the room's Wi-Fi for the recall page.
  :class:`CompressedStatic` compresses each of Streamlit's static files once (zstd and gzip, while the lab warms:
  :data:`STATIC`) and serves those bytes from memory to every browser that accepts them, with Streamlit's own
  Cache-Control (hashed bundles ``immutable`` for a year, so a reload fetches nothing).
* **The collector's cost flat as labs grow.** Streamlit runs a full collection after every script run
  (``runner.postScriptGC``): it walks every object of every live lab and session, so each run cost more as the room
  filled (15.5 s of the server's CPU over a room of 100's arrivals and slider moves, 2.4 s for a room of 30). serve.py
  turns it off (unless an instructor set it) and leaves collection to Python's own generational thresholds, whose full
  collections come once the long-lived heap has grown by a quarter (2.3 s for the room of 100, 0.9 s for 30). And
  once the warm-up has built the starting states, everything alive (models, libraries, starting states) is moved out of
  the collector's generations (``gc.freeze``), so no collection walks it again.
"""

import asyncio
import gc
import gzip
import logging
import mimetypes
import os
import sys
import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Callable

import streamlit as st
from starlette.middleware import Middleware
from streamlit import config, file_util

from lab.i18n import LANGUAGES

log = logging.getLogger(__name__)

WARM_ENV = "MEMORY_LAB_WARM"
WARM_LINE = "the lab is warm: participants can open it now"
"""What the server prints once warm, just before its port opens."""


def warm_languages(value: str | None) -> list[str]:
    """The languages ``MEMORY_LAB_WARM`` names (``en,zh`` when unset, none for ``none`` or empty); ValueError naming
    the variable for a language the lab does not have."""
    if value is None:
        return list(LANGUAGES)
    langs = list(dict.fromkeys(part.strip() for part in value.split(",") if part.strip() and part.strip() != "none"))
    unknown = [lang for lang in langs if lang not in LANGUAGES]
    if unknown:
        raise ValueError(f"{WARM_ENV}: unknown language {unknown[0]!r} (use {', '.join(LANGUAGES)} or none)")
    return langs


def _languages_or_exit() -> list[str]:
    """The languages to warm; a bad ``MEMORY_LAB_WARM`` is one line on stderr and exit status 2, before any server."""
    try:
        return warm_languages(os.environ.get(WARM_ENV))
    except ValueError as exc:
        print(f"serve.py: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


LANGS = _languages_or_exit()

HIDE_KEY = "logger.hideWelcomeMessage"
OWN_CONFIG = Path(__file__).resolve().parent / ".streamlit" / "config.toml"
"""The lab's own Streamlit settings, which hide Streamlit's early welcome message so that serve.py prints it once warm."""
WILDCARDS = ("0.0.0.0", "::", "")


def held_by_the_lab(where: str | None) -> bool:
    """True when the welcome message is hidden by the lab's own config.toml (``where``: Streamlit's record of where
    the option was set), so serve.py prints it once warm; False when an instructor hid it (a flag, another config
    file) or Streamlit printed it already."""
    if not where or not where.endswith("config.toml"):
        return False
    try:
        return Path(where).resolve() == OWN_CONFIG
    except OSError:
        return False


def lab_urls() -> list[tuple[str, str]]:
    """(name, URL) as Streamlit words them when it starts: the address the server was told to show or bind, else the
    local and the network URL. No outside request (Streamlit's "External URL" asks an outside host for this machine's
    address; a room without internet waited for it)."""
    from streamlit import net_util
    from streamlit.web.server.server_util import get_url

    if config.is_manually_set("browser.serverAddress"):
        return [("URL", get_url(config.get_option("browser.serverAddress")))]
    address = config.get_option("server.address") or ""
    if config.is_manually_set("server.address") and address not in WILDCARDS:
        return [("URL", get_url(address))]
    urls = [("Local URL", get_url("localhost"))]
    internal = net_util.get_internal_ip()
    if internal:
        urls.append(("Network URL", get_url(internal)))
    return urls


def print_urls() -> None:
    """Streamlit's welcome message with the lab's URLs, on stdout, when the lab's config held it back."""
    if not (config.get_option(HIDE_KEY) and held_by_the_lab(config.get_where_defined(HIDE_KEY))):
        return
    lines = ["", "  You can now view your Streamlit app in your browser.", ""]
    lines += [f"  {name}: {url}" for name, url in lab_urls()]
    print("\n".join([*lines, ""]), flush=True)


GZIP_LEVEL = 9
ZSTD_LEVEL = 12
"""Paid once per file, never per request: zstd while the lab warms (Streamlit's 23 MB of bundles: about 2.5 s of one
core), gzip on a client's first request for a file (about 1 s for all of them). zstd (which Chromium and Firefox accept) takes the recall page's bundles from 9.5 MB to 2.8 MB, gzip to
3.0 MB."""
MIN_BYTES = 1000
"""Smaller files go as they are (Streamlit's own threshold for compressing a response)."""
SUFFIXES = frozenset({".js", ".mjs", ".css", ".html", ".json", ".map", ".svg", ".txt", ".ttf"})
"""Text and uncompressed fonts; images and woff2 fonts are compressed already."""
IMMUTABLE = "public, immutable, max-age=31536000"
"""Streamlit's Cache-Control for its hashed bundles (starlette_static_routes): a browser asks once."""


def _gzip(raw: bytes) -> bytes:
    return gzip.compress(raw, compresslevel=GZIP_LEVEL, mtime=0)


def _codecs() -> dict[str, Callable[[bytes], bytes]]:
    """Content codings this server can give, best first: zstd when the ``zstandard`` package is installed (LangGraph's
    client brings it: requirements-adapters.txt), and gzip."""
    codecs: dict[str, Callable[[bytes], bytes]] = {}
    try:
        import zstandard
    except ImportError:
        pass
    else:
        codecs["zstd"] = lambda raw: zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(raw)  # one per call: threads
    codecs["gzip"] = _gzip
    return codecs


class PackedFiles:
    """Streamlit's static files (``static/...`` under its static folder), each compressed once per content coding and
    kept in memory.

    :meth:`get` gives a file's compressed bytes, compressing it on first use (one thread compresses it; others asking
    meanwhile wait for that one); :meth:`fill` compresses them all (serve.py's warm-up, before the port opens). A file
    not worth compressing (small, or compressed already) gives None and is served by Streamlit as it is."""

    def __init__(self, folder: Path | None = None, codecs: dict[str, Callable[[bytes], bytes]] | None = None) -> None:
        self.folder = Path(folder or file_util.get_static_dir())
        self.codecs = codecs if codecs is not None else _codecs()
        self._lock = threading.Lock()
        self._files: dict[str, Path] | None = None
        self._done: dict[tuple[str, str], bytes | None] = {}
        self._busy: dict[tuple[str, str], threading.Event] = {}

    def files(self) -> dict[str, Path]:
        """URL path (``static/js/index.X.js``) -> file, for the files worth compressing (listed once)."""
        if self._files is None:
            found = {}
            for path in (self.folder / "static").rglob("*"):
                if path.suffix in SUFFIXES and path.is_file() and path.stat().st_size >= MIN_BYTES:
                    found[path.relative_to(self.folder).as_posix()] = path
            self._files = found
        return self._files

    def ready(self, name: str, coding: str) -> tuple[bool, bytes | None]:
        """(True, the compressed bytes or None) once ``name`` has been compressed with ``coding`` (or found not worth
        it); (False, None) before. Never waits: for the server's event loop."""
        key = (name, coding)
        if key not in self._done:
            return False, None
        return True, self._done[key]

    def get(self, name: str, coding: str) -> bytes | None:
        path, codec = self.files().get(name), self.codecs.get(coding)
        if path is None or codec is None:
            return None
        key = (name, coding)
        while True:
            with self._lock:
                if key in self._done:
                    return self._done[key]
                busy = self._busy.get(key)
                if busy is None:
                    busy = self._busy[key] = threading.Event()
                    break
            busy.wait()
        result = None
        try:
            raw = path.read_bytes()
            packed = codec(raw)
            result = packed if len(packed) < 0.9 * len(raw) else None
        except Exception:  # noqa: BLE001 - a file that cannot be compressed is served as it is, by Streamlit
            log.exception("compressing %s (%s)", name, coding)
        finally:
            with self._lock:
                self._done[key] = result
                self._busy.pop(key).set()
        return result

    def fill(self) -> int:
        """Compress every file with the best coding (what browsers ask for: zstd when it is installed), those not done
        yet; the bytes kept. Another coding's copy is made when a client first asks for it."""
        best = next(iter(self.codecs), None)
        return 0 if best is None else sum(len(self.get(name, best) or b"") for name in self.files())


STATIC = PackedFiles()


def accepted_codings(value: str) -> set[str]:
    """The content codings an Accept-Encoding header value accepts (``gzip;q=0`` refuses gzip; ``*`` is gzip)."""
    accepted = set()
    for part in value.split(","):
        token, _, params = part.strip().partition(";")
        token = token.strip().lower()
        weight = params.strip().lower()
        if weight.startswith("q="):
            try:
                if float(weight[2:]) <= 0:
                    continue
            except ValueError:
                continue
        if token:
            accepted.add("gzip" if token == "*" else token)
    return accepted


class CompressedStatic:
    """ASGI middleware: a GET or HEAD for one of Streamlit's static files (``/static/...``) from a client that accepts
    one of :data:`STATIC`'s codings (zstd, else gzip) gets that compressed copy, with Streamlit's Cache-Control and
    ``Vary: Accept-Encoding``. Anything else (another path, a Range request, no coding in common) goes on to Streamlit
    unchanged. Only the exact names of files in Streamlit's static folder match (a dict lookup), so no request path
    ever reaches the file system."""

    def __init__(self, app, files: PackedFiles | None = None) -> None:
        self.app = app
        self.files = files or STATIC

    async def __call__(self, scope, receive, send) -> None:
        name = self._static_name(scope)
        if name is not None and name in self.files.files():
            headers = {k.lower(): v for k, v in scope.get("headers", ())}
            accepted = accepted_codings(headers.get(b"accept-encoding", b"").decode("latin-1"))
            coding = next((c for c in self.files.codecs if c in accepted), None)
            if b"range" not in headers and coding is not None:
                known, body = self.files.ready(name, coding)
                if not known:
                    body = await asyncio.to_thread(self.files.get, name, coding)
                if body is not None:
                    await self._send(send, name, coding, body, head=scope["method"] == "HEAD")
                    return
        await self.app(scope, receive, send)

    @staticmethod
    def _static_name(scope) -> str | None:
        if scope["type"] != "http" or scope.get("method") not in ("GET", "HEAD"):
            return None
        path: str = scope.get("path", "")
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        base = (config.get_option("server.baseUrlPath") or "").strip("/")
        if base:
            if not path.startswith(f"/{base}/"):
                return None
            path = path[len(base) + 1:]
        return path[1:] if path.startswith("/static/") else None

    @staticmethod
    async def _send(send, name: str, coding: str, body: bytes, *, head: bool) -> None:
        media = mimetypes.guess_type(name)[0] or "application/octet-stream"
        if media.startswith("text/"):
            media += "; charset=utf-8"
        headers = [(b"content-type", media.encode()), (b"content-encoding", coding.encode()),
                   (b"content-length", str(len(body)).encode()), (b"vary", b"Accept-Encoding"),
                   (b"cache-control", IMMUTABLE.encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if head else body})


POST_SCRIPT_GC = "runner.postScriptGC"


def freeze_collector() -> None:
    """No full collection after every script run (``runner.postScriptGC``, unless an instructor set it), and everything
    alive now (after the warm-up: models, libraries, starting states) moved out of the collector's generations
    (``gc.freeze``): the collector's cost per run stays flat however many labs the room holds."""
    if not config.is_manually_set(POST_SCRIPT_GC):
        config.set_option(POST_SCRIPT_GC, False, where_defined="serve.py")
    gc.collect()
    gc.freeze()


async def _packed(packing: "asyncio.Task[int]") -> None:
    try:
        await packing
    except Exception as exc:  # noqa: BLE001 - each file is then compressed on its first request instead
        print(f"  compressing the static files failed ({exc}); each is compressed when first asked for",
              file=sys.stderr, flush=True)


@asynccontextmanager
async def warm(_app):
    """Build the starting states and compress the static files (side by side) before the port opens, one line per
    step on stderr; then freeze what was built out of the collector's way. Cold (``MEMORY_LAB_WARM=none``), the port
    opens at once and each static file is compressed when first asked for."""
    if LANGS:
        from lab.engine import warm_starting_states

        packing = asyncio.create_task(asyncio.to_thread(STATIC.fill))
        started = time.perf_counter()
        steps = 2 * len(LANGS)
        done = 0

        def report(line: str) -> None:
            nonlocal done
            done += 1
            print(f"  warming the lab [{done}/{steps}] {line}", file=sys.stderr, flush=True)

        try:
            await asyncio.to_thread(warm_starting_states, LANGS, report)
        except Exception as exc:  # noqa: BLE001 - the lab still starts; its first page shows the same error itself
            await _packed(packing)
            print(f"  warming the lab failed ({exc}); it starts cold", file=sys.stderr, flush=True)
        else:
            await _packed(packing)
            print(f"  {WARM_LINE} ({time.perf_counter() - started:.1f} s)", file=sys.stderr, flush=True)
    freeze_collector()
    print_urls()  # once warm (or cold after a failed warm-up), as the port opens
    yield


app = st.App("app.py", lifespan=warm, middleware=[Middleware(CompressedStatic)])
