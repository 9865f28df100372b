"""The import contract: memory/ in layers, the lab on the library's public API (issue 13).

Every import of every module is read from its source (``ast``: top-level, inside functions and under
``TYPE_CHECKING`` alike) and checked against these rules:

* ``memory`` is layered ``core < embed < store < runtime < write < eval < adapters < tools``: a module imports only modules of its
  own layer or below (``memory/__init__.py``, the public API, and ``memory/__main__.py`` sit above them all);
* only ``memory.store.chroma`` imports ``chromadb``;
* nothing in ``memory`` imports the lab, Streamlit or plotly;
* the lab (``app.py``, ``lab/``) imports the library only through its public surfaces: ``memory`` (the runtime
  API) and ``memory.eval`` (the evaluation tools).

``test_a_forbidden_edge_is_caught`` shows the checker failing on a planted edge of each kind.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("core", "embed", "store", "runtime", "write", "eval", "adapters", "tools")
"""memory's subpackages, lowest first."""
CHROMA_ADAPTER = "memory.store.chroma"
PUBLIC_SURFACES = frozenset({"memory", "memory.eval"})
FORBIDDEN_IN_LIBRARY = ("lab", "streamlit", "plotly")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file (or in ``source``, read as that file), relative
    ones resolved."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = []
    text = path.read_text(encoding="utf-8") if source is None else source
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]  # "from memory import eval"
    return found


def layer(module: str) -> int | None:
    """The layer index of a memory module; None for memory itself and memory.__main__ (above every layer)."""
    parts = module.split(".")
    if parts[0] != "memory" or len(parts) == 1 or parts[1] == "__main__":
        return None
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else None


def violations(path: Path, source: str | None = None) -> list[str]:
    """Every broken rule of the file at ``path`` (or of ``source`` as if it were that file)."""
    me = module_name(path)
    mine = layer(me)
    found = []
    for line, target in imports(path, source):
        where = f"{path.relative_to(ROOT)}:{line} imports {target}"
        top = target.split(".")[0]
        if me.startswith("memory"):
            if top in FORBIDDEN_IN_LIBRARY:
                found.append(f"{where}: the library never imports {top}")
            if top == "chromadb" and me != CHROMA_ADAPTER:
                found.append(f"{where}: only {CHROMA_ADAPTER} touches chromadb")
            theirs = layer(target) if top == "memory" else None
            if mine is not None and theirs is not None and theirs > mine:
                found.append(f"{where}: layer {LAYERS[mine]} may not import layer {LAYERS[theirs]}")
        elif top == "memory" and not _public(target):
            found.append(f"{where}: the lab uses the public API only ({', '.join(sorted(PUBLIC_SURFACES))})")
    return found


def _public(target: str) -> bool:
    """``memory``, ``memory.eval`` and a name imported from them (``memory.MemoryManager``, ``memory.eval.sweep``)."""
    parent = target.rpartition(".")[0]
    return target in PUBLIC_SURFACES or (parent in PUBLIC_SURFACES and not _is_module(target))


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def library_and_lab() -> list[Path]:
    return sorted([*ROOT.glob("memory/**/*.py"), *ROOT.glob("lab/**/*.py"), ROOT / "app.py"])


def test_the_tree_keeps_the_import_contract():
    found = [v for path in library_and_lab() for v in violations(path)]
    assert not found, "\n".join(found)


def test_every_library_module_is_in_a_layer():
    loose = [module_name(p) for p in ROOT.glob("memory/**/*.py")
             if layer(module_name(p)) is None and module_name(p) not in ("memory", "memory.__main__")]
    assert not loose, loose


@pytest.mark.parametrize("planted, source, expected", [
    ("memory/core/_planted.py", "from memory.runtime.manager import MemoryManager\n", "layer core may not import layer runtime"),
    ("memory/store/_planted.py", "def f():\n    from ..eval import sweep\n", "layer store may not import layer eval"),
    ("memory/runtime/_planted.py", "import chromadb\n", "only memory.store.chroma touches chromadb"),
    ("memory/eval/_planted.py", "import plotly.graph_objects as go\n", "the library never imports plotly"),
    ("memory/write/_planted.py", "from lab.i18n import t\n", "the library never imports lab"),
    ("lab/_planted.py", "from memory.store.chroma import MemoryStore\n", "the lab uses the public API only"),
    ("lab/_planted.py", "from memory.runtime import manager\n", "the lab uses the public API only"),
    ("memory/embed/_planted.py", "from memory.store.chroma import MemoryStore\n", "layer embed may not import layer store"),
])
def test_a_forbidden_edge_is_caught(planted, source, expected):
    """The checker on a file that is not written anywhere: each kind of forbidden edge is named."""
    _assert_caught(violations, planted, source, expected)


def _assert_caught(checker, planted: str, source: str, expected: str) -> None:
    """``checker`` run on ``source`` as if it were the file ``planted`` (which must not exist) names ``expected``."""
    path = ROOT / planted
    assert not path.exists()
    found = checker(path, source)
    assert any(expected in v for v in found), found


def test_public_names_pass_and_submodules_do_not():
    assert _public("memory") and _public("memory.MemoryManager") and _public("memory.eval.run_study")
    assert not _public("memory.store") and not _public("memory.eval.study")


def reached_through(path: Path, source: str | None = None) -> list[str]:
    """Where a lab file reaches past a manager into its store (``x.store.…``, ``x.texts.…``)."""
    text = path.read_text(encoding="utf-8") if source is None else source
    found = []
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                and node.value.attr in ("store", "texts"):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} uses .{node.value.attr}.{node.attr}")
    return found


def test_the_lab_uses_the_manager_not_its_store():
    """The lab talks to a MemoryManager; what it needs of the store is a manager method (owners, count, drop, ...)."""
    found = [v for path in sorted([*ROOT.glob("lab/**/*.py"), ROOT / "app.py"]) for v in reached_through(path)]
    assert not found, "\n".join(found)
    planted = reached_through(ROOT / "lab" / "_planted.py", "def f(lab):\n    return lab.manager.store.texts.owners()\n")
    assert any("uses .store.texts" in v for v in planted), planted  # the checker sees a planted reach-through


STORE_KEEPERS = ("memory/store/", "memory/runtime/manager.py")
"""The store adapter and the one class that holds it: the only code that touches the text store (``.texts``)."""


def leaks(path: Path, source: str | None = None) -> list[str]:
    """Where a library or lab file breaks the store's seal: reaches a store's text store (``store.texts``) or
    Chroma collection (``store.collection``) outside the adapter and the manager, or uses another object's private name
    (``x._name`` with ``x`` not ``self``/``cls`` and ``_name`` defined nowhere in this file)."""
    rel = path.relative_to(ROOT).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source, filename=str(path))
    own = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    targets = [t for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
    own |= {t.attr for t in targets if isinstance(t, ast.Attribute)} | {t.id for t in targets if isinstance(t, ast.Name)}
    found = [f"{rel}:{node.lineno} imports {node.module}.{alias.name}: a private name of another module"
             for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        where = f"{rel}:{node.lineno} uses {ast.unparse(node)}"
        holder = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", None)
        if node.attr in ("texts", "collection") and holder == "store" and not rel.startswith(STORE_KEEPERS):
            found.append(f"{where}: only the store and the manager touch the text store and Chroma")
        private = node.attr.startswith("_") and not node.attr.startswith("__")
        if private and node.attr not in own and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            found.append(f"{where}: a private name of another module")
    return found


def test_the_store_and_the_manager_are_sealed():
    """Erasure, lifecycle, ingestion, the tools and the lab use the store's and the manager's methods only."""
    found = [v for path in library_and_lab() for v in leaks(path)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("planted, source, expected", [
    ("memory/runtime/_planted.py", "def f(manager):\n    return manager.store.texts.journal_pending()\n",
     "only the store and the manager touch the text store"),
    ("memory/write/_planted.py", "def f(store):\n    return store.collection.get()\n",
     "only the store and the manager touch the text store"),
    ("memory/runtime/_planted.py", "def f(manager):\n    with manager._lock:\n        pass\n",
     "a private name of another module"),
    ("lab/_planted.py", "def f(store, ids):\n    return store._join(ids)\n", "a private name of another module"),
    ("memory/write/_planted.py", "from memory.runtime.manager import _check_owner\n", "a private name of another module"),
])
def test_a_leak_is_caught(planted, source, expected):
    _assert_caught(leaks, planted, source, expected)
