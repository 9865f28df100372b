"""Build hook (pyproject.toml holds the metadata): the lab's entry scripts go into the wheel.

``app.py`` and ``serve.py`` (the router and the warm server, ``streamlit run`` at the repository root) and
``.streamlit/config.toml`` (the lab's server settings, read by Streamlit from beside the script it runs) live at the
repository root, outside any package. A wheel carries them as ``lab/_app/``: copied when the wheel is built, so the
repository keeps one copy of each. ``memory-lab`` (``python -m lab``, lab/launch.py) runs the installed
``lab/_app/serve.py``; tests/test_wheel.py installs a wheel in a fresh venv and opens the lab from there.
"""

from __future__ import annotations

import os

from setuptools import setup
from setuptools.command.build_py import build_py

LAB_ENTRY = ("app.py", "serve.py", os.path.join(".streamlit", "config.toml"))
"""The files copied, relative to the repository root and to ``lab/_app/`` in the wheel."""


class BuildWithLabEntry(build_py):
    """``build_py``, then the lab's entry scripts copied to ``lab/_app/`` (not in an editable install, whose
    ``lab`` is the repository's own: lab/launch.py then runs the root's files)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = os.path.join(self.build_lib, "lab", "_app")
        for name in LAB_ENTRY:
            self.mkpath(os.path.dirname(os.path.join(target, name)))
            self.copy_file(name, os.path.join(target, name))


setup(cmdclass={"build_py": BuildWithLabEntry})
