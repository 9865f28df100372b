"""Memory Governance Lab, warm: ``streamlit run serve.py`` serves app.py once the room's starting states are ready.

Before the server opens its port, each UI language's default model is loaded and its default starting state (the
shipped lesson scenario through the default write path) is built, as the room's first arrival would otherwise do
while everyone waits (lab.engine.warm_starting_states). Then every participant's first page starts from a copy.
``MEMORY_LAB_WARM`` names the languages to warm (default ``en,zh``; ``none`` starts at once, as ``streamlit run
app.py`` does). Streamlit runs this file's ``app`` (``st.App``) with its own server; every ``--server.*`` option of
``streamlit run`` still applies.
"""

import asyncio
import os
import sys
import time
from contextlib import asynccontextmanager

import streamlit as st

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
    yield


app = st.App("app.py", lifespan=warm)
