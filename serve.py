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
"""

import asyncio
import os
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import streamlit as st
from streamlit import config

from lab.i18n import LANGUAGES

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


@asynccontextmanager
async def warm(_app):
    """Build the starting states before the port opens; one line per step on stderr."""
    if LANGS:
        from lab.engine import warm_starting_states

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
            print(f"  warming the lab failed ({exc}); it starts cold", file=sys.stderr, flush=True)
        else:
            print(f"  {WARM_LINE} ({time.perf_counter() - started:.1f} s)", file=sys.stderr, flush=True)
    print_urls()  # once warm (or cold after a failed warm-up), as the port opens
    yield


app = st.App("app.py", lifespan=warm)
