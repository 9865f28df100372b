"""``python -m memory ...`` run inside the test process: :func:`memory.tools.cli.main` with its output captured.

For CLI tests whose subject is the command (its arguments, its JSON, its one-line errors, what it writes), not the
process: a new interpreter imports torch and loads the models again for every command (seconds each), while the test
process holds them already (``memory.embed.embedders`` loads each model once per process). What only a real process
shows (the interpreter's exit status, a kill, argv bytes that are not UTF-8, the terminal's encoding, environment
variables read at start-up, what imported libraries print on a real stderr) stays tested through subprocesses.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import traceback
from contextlib import redirect_stderr, redirect_stdout

from memory.tools.cli import main


def run_cli(*args: str, cwd: str | os.PathLike[str] | None = None) -> subprocess.CompletedProcess[str]:
    """``main(args)`` with sys.stdout and sys.stderr captured (tqdm and ``print`` look them up at call time), in
    ``cwd`` when given (restored after). Shaped like ``subprocess.run(..., capture_output=True, text=True)``:
    SystemExit gives its status as the interpreter would, and an exception ``main`` lets through gives status 1
    and its traceback on stderr."""
    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = _exit_status(exc.code)
            except Exception:  # noqa: BLE001 - what the interpreter would print for an uncaught exception
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess([sys.executable, "-m", "memory", *args], code, out.getvalue(), err.getvalue())


def _exit_status(code: object) -> int:
    """The status ``sys.exit(code)`` gives a process: None is 0, an int is itself, anything else is printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
