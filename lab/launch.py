"""Start the lab: ``memory-lab`` (or ``python -m lab``), from an installed wheel or from a checkout.

It is ``streamlit run serve.py``, the README's command: each UI language's model and lesson scenario are made
ready before the port opens (``MEMORY_LAB_WARM=none`` starts at once, as ``streamlit run app.py`` does). The entry
scripts (``app.py``, ``serve.py``, ``.streamlit/config.toml``) live at the repository root; a wheel carries a copy
of them as ``lab/_app/`` (setup.py), which is run when present, the root's otherwise (a checkout, an editable
install). Every argument goes on to ``streamlit run``: ``memory-lab --server.port 8502``, ``memory-lab
--server.address 0.0.0.0`` for a room. The lab keeps its data in ``./.memory-data`` of the folder it is started in
(``MEMORY_DATA_DIR`` for another), as ``streamlit run`` does.
"""

from __future__ import annotations

import sys
from pathlib import Path

PACKAGED = Path(__file__).resolve().parent / "_app"
"""The entry scripts as a wheel installs them (setup.py copies them there when the wheel is built)."""
CHECKOUT = Path(__file__).resolve().parent.parent
"""The repository root, where the entry scripts live in a checkout."""
ENTRY_FILES = ("app.py", "serve.py", ".streamlit/config.toml")


def entry_dir() -> Path | None:
    """The folder holding the lab's entry scripts: the installed copy, else the checkout's; None when neither has
    them all."""
    for folder in (PACKAGED, CHECKOUT):
        if all((folder / name).is_file() for name in ENTRY_FILES):
            return folder
    return None


def main(argv: list[str] | None = None) -> None:
    """``streamlit run <entry>/serve.py ARGS``; exit status 2 and one line on stderr when the scripts are missing."""
    folder = entry_dir()
    if folder is None:
        print("memory-lab: the lab's entry scripts (app.py, serve.py, .streamlit/config.toml) are not installed; "
              "reinstall the package from a wheel or run it from a checkout", file=sys.stderr)
        raise SystemExit(2)
    from streamlit.web import cli

    cli.main(["run", str(folder / "serve.py"), *(sys.argv[1:] if argv is None else argv)], prog_name="memory-lab")
