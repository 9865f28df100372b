"""The reliability checks behind ``python -m memory reliability`` (memory/tools/cli.py dispatches to
:func:`memory.reliability.runner.run_report`), a package of their own beside the CLI:

* :mod:`~memory.reliability.check`: :class:`Check` and :class:`Report`, what every check returns (the bottom: it
  imports no check);
* the checks, each ``check_xxx(embedder, scale, folder) -> Check``: :mod:`~memory.reliability.engine` (isolation,
  erasure, hostile identifiers, crash safety, async kills), :mod:`~memory.reliability.store` (faults and races of the
  store), :mod:`~memory.reliability.writes` (the write path's messages), :mod:`~memory.reliability.inputs` (hostile
  input through the CLI and the library), :mod:`~memory.reliability.shared` (a store shared by processes and by the
  clients of a ``chroma run``), :mod:`~memory.reliability.erase_kills` (interrupted erasures);
* :mod:`~memory.reliability.runner`: :data:`STEPS` and :func:`run_report`, which runs them (the top).

Nothing here is imported by ``memory`` itself; the checks import the library's layers, never the CLI. This module
imports nothing, so a check's child process loads only the module it runs.
"""
