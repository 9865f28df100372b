"""AppTest shows a fragment run as a browser does: the fragment redrawn, the rest of the page kept.

Streamlit 1.67's AppTest builds each run's element tree from that run's messages alone, so after a fragment-only run
(a recall knob's move on the recall page: lab/pages/recall.py, lab.state.knob_moved) ``at.sidebar``, the title and
the pickers were gone from the tree, although the browser keeps them on screen, and the next ``set_value`` found no
slider. :func:`keep_the_page` makes the tree of a fragment run the last tree's messages without the fragments that
ran, then the fragment run's own: what the browser shows. :data:`LAST_RUN` keeps what the run itself drew, for
the tests about fragment runs (tests/test_recall_fragment.py).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

from streamlit.runtime.scriptrunner import ScriptRunnerEvent
from streamlit.testing.v1.local_script_runner import LocalScriptRunner


@dataclass
class Run:
    """One AppTest run as the script drew it."""

    fragment_ids: list[str] = field(default_factory=list)
    """The fragments that ran alone, or empty for a run of the whole script."""
    messages: list[Any] = field(default_factory=list)
    """The run's own ForwardMsgs (a fragment run's deltas only)."""


_PAGES: "weakref.WeakKeyDictionary[Any, list[Any]]" = weakref.WeakKeyDictionary()
"""An AppTest's session state -> the messages of the page its last run left on screen."""
LAST_RUN: "weakref.WeakKeyDictionary[Any, Run]" = weakref.WeakKeyDictionary()
"""An AppTest's session state (``at.session_state._state``) -> its last run as drawn."""


def _fragment_ids(runner: LocalScriptRunner) -> list[str]:
    """The fragments the runner's last script start ran alone (empty: the whole script)."""
    started = [data for event, data in zip(runner.events, runner.event_data)
               if event == ScriptRunnerEvent.SCRIPT_STARTED]
    return list(started[-1].get("fragment_ids_this_run") or []) if started else []


def keep_the_page() -> None:
    """Patch LocalScriptRunner.forward_msgs (what AppTest parses into its tree) once per process."""
    own = LocalScriptRunner.forward_msgs
    if getattr(own, "keeps_the_page", False):
        return

    def forward_msgs(self: LocalScriptRunner) -> list[Any]:
        drawn = own(self)
        ids = _fragment_ids(self)
        key = self.session_state
        LAST_RUN[key] = Run(ids, list(drawn))
        if ids and key in _PAGES:
            kept = [m for m in _PAGES[key] if not (m.HasField("delta") and m.delta.fragment_id in ids)]
            drawn = kept + list(drawn)
        _PAGES[key] = list(drawn)
        return drawn

    forward_msgs.keeps_the_page = True  # type: ignore[attr-defined]
    LocalScriptRunner.forward_msgs = forward_msgs  # type: ignore[method-assign]
