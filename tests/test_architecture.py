"""The import contract: memory/ in layers, the lab on the library's public API (issue 13).

Every import of every module is read from its source (``ast``: top-level, inside functions and under
``TYPE_CHECKING`` alike) and checked against these rules:

* ``memory`` is layered ``core < embed < store < runtime < write < eval < adapters < reliability < tools``: a module
  imports only modules of its own layer or below (``memory/__init__.py``, the public API, and ``memory/__main__.py`` sit
  above them all);
* an adapter (``memory/adapters/``) imports the library only through its public surfaces, as the lab does: ``memory``
  (the runtime API: the manager, its lifecycle calls ``revise``/``supersede``/``retire``/``history``/``delete_records``,
  ``Owner``, ``validate_identifier``...) and ``memory.eval`` (the operating point), and its own package
  ``memory.adapters``; never a module below them (``memory.runtime.manager``, ``memory.store.journal``...);
* no circle: in the import graph of ``memory/`` (an edge for every import of a module of ``memory``, inside functions
  too, ``if TYPE_CHECKING:`` imports left out) no two modules reach each other.

Three seams are checked by their code rather than their imports (issue 52):

* one owner check: only ``memory/core/owner.py`` defines a function named like ``check_owner``/``validate_owner`` or
  validates an identifier as ``"tenant_id"``/``"user_id"`` (the owner error); the entry points (the CLI, the MCP server,
  the LangGraph store, the lab) validate their own parameters (``--tenant``, ``tenant``) and hand the library plain
  identifiers, which it turns into one :class:`memory.core.owner.Owner`;
* one owner value below the entry points: no function of ``memory/store/``, ``memory/runtime/`` or ``memory/write/``
  takes the owner as two loose strings (``tenant_id`` and ``user_id``, or ``tenant`` and ``user``), but the few public
  calls of ``OWNER_ENTRY_POINTS``, which keep their documented keywords and make the ``Owner`` once;
* the adapters map onto the runtime's lifecycle calls and write no record lifecycle field themselves
  (``is_deprecated``, ``superseded_by``, ``supersedes``, ``archived``, ``version``, ``valid_until``);
* one test for Chinese characters (issue 48): no module of ``memory/write/`` outside its language readers
  (``memory/write/lang/``) tests a text for Chinese characters itself (a character class or a comparison over the
  CJK block, a compiled ``CJK`` pattern): the shared write path asks the statement's reader (``language_of``).
* only ``memory.store.chroma`` imports ``chromadb``;
* nothing in ``memory`` imports the lab, Streamlit or plotly;
* the lab (``app.py``, ``lab/``) imports the library only through its public surfaces: ``memory`` (the runtime
  API) and ``memory.eval`` (the evaluation tools).

``test_a_forbidden_edge_is_caught`` shows the checker failing on a planted edge of each kind.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("core", "embed", "store", "runtime", "write", "eval", "adapters", "reliability", "tools")
"""memory's subpackages, lowest first."""
CHROMA_ADAPTER = "memory.store.chroma"
PUBLIC_SURFACES = frozenset({"memory", "memory.eval"})
FORBIDDEN_IN_LIBRARY = ("lab", "streamlit", "plotly")
ADAPTERS = "memory.adapters"


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
            if me.startswith(ADAPTERS) and top == "memory" and not (_public(target) or target.startswith(ADAPTERS)):
                found.append(f"{where}: an adapter uses the public API only ({', '.join(sorted(PUBLIC_SURFACES))})")
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
    ("memory/adapters/_planted.py", "from memory.runtime.manager import MemoryManager\n",
     "an adapter uses the public API only"),
    ("memory/adapters/_planted.py", "def f():\n    from memory.store.journal import Plan\n",
     "an adapter uses the public API only"),
    ("memory/adapters/_planted.py", "from memory.eval.operating_point import OperatingPoint\n",
     "an adapter uses the public API only"),
    ("memory/reliability/_planted.py", "from memory.tools.cli import main\n", "layer reliability may not import layer tools"),
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


def test_adapters_may_use_the_public_api():
    """The rule lets through what the adapters are meant to use: ``memory``'s and ``memory.eval``'s names, their own
    package."""
    path = ROOT / "memory" / "adapters" / "_planted.py"
    source = ("from memory import MemoryManager, Retire, Supersede, memory_id_for\nfrom memory.eval import OperatingPoint\n"
              "from memory.adapters.langgraph_store import item_text\nimport memory\n")
    assert violations(path, source) == []


# --- no circle between modules ---------------------------------------------------------------------------------------

def import_graph(planted: dict[str, str] | None = None) -> dict[str, set[str]]:
    """module -> the modules of ``memory`` it imports (inside functions too; not under ``if TYPE_CHECKING:``).
    ``planted``: files (path relative to the root) read from these sources instead of the disk, or added.

    ``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``; ``import a.b`` to ``a.b``. The
    packages a submodule's import runs on the way (``a``, ``a.b``'s ``__init__``) are not edges: a circle is two
    modules that name each other."""
    sources = {p.relative_to(ROOT).as_posix(): None for p in ROOT.glob("memory/**/*.py")}
    sources.update(planted or {})
    modules = {module_name(ROOT / rel): rel for rel in sources}
    graph: dict[str, set[str]] = {}
    for name, rel in modules.items():
        source = sources[rel]
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8") if source is None else source, filename=rel)
        hidden = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _is_type_checking(node.test)
                  for stmt in node.body for n in ast.walk(stmt)}
        package = name if rel.endswith("__init__.py") else name.rpartition(".")[0]
        out: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in hidden:
                continue
            if isinstance(node, ast.Import):
                out |= {alias.name for alias in node.names if alias.name in modules}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    base = ".".join(anchor[: len(anchor) - (node.level - 1)] + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    if target in modules:
                        out.add(target)
                    elif base in modules:
                        out.add(base)
        out.discard(name)
        graph[name] = out
    return graph


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that reach each other (strongly connected components of more than one module), each
    sorted, found without recursion (Tarjan's algorithm with an explicit stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_two_modules_import_each_other():
    found = circles(import_graph())
    assert not found, "\n".join(" <-> ".join(group) for group in found)


@pytest.mark.parametrize("planted, expected", [
    # the circle issue 52 broke: the shared helper importing the embedders back (inside a function: it counts)
    ({"memory/embed/batching.py": "def f():\n    from memory.embed.embedders import make_embedder\n"},
     ["memory.embed.batching", "memory.embed.embedders", "memory.embed.endpoint"]),
    # erase reading the manager again (the manager imports erase)
    ({"memory/runtime/_planted.py": "from memory.runtime.manager import MemoryManager\n",
      "memory/runtime/_planted_b.py": "from memory.runtime import _planted\n"}, None),
    ({"memory/runtime/erase.py": "from memory.runtime.manager import MemoryManager\n"},
     ["memory.runtime.erase", "memory.runtime.manager"]),
    # a check importing the runner that imports it
    ({"memory/reliability/check.py": "from memory.reliability.runner import STEPS\n"}, "memory.reliability.runner"),
])
def test_a_circle_is_caught(planted, expected):
    found = circles(import_graph(planted))
    if expected is None:  # a chain, no circle
        assert not found, found
    elif isinstance(expected, str):
        assert any(expected in group for group in found), found
    else:
        assert expected in found, found


def test_a_type_checking_import_is_no_edge():
    planted = {"memory/runtime/erase.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                          "    from memory.runtime.manager import MemoryManager\n"}
    assert "memory.runtime.manager" not in import_graph(planted)["memory.runtime.erase"]
    assert not circles(import_graph(planted))


# --- one owner check -------------------------------------------------------------------------------------------------

OWNER_MODULE = "memory/core/owner.py"
OWNER_FIELDS = frozenset({"tenant_id", "user_id"})
"""The names the owner check validates under: the owner error ("tenant_id must be a plain string, ...")."""


def owner_checks(path: Path, source: str | None = None) -> list[str]:
    """Where a file outside memory/core/owner.py checks an owner itself: a function named like ``check_owner`` /
    ``validate_owner``, or an identifier validated under the owner's field names (``validate_identifier(x,
    "tenant_id")``)."""
    rel = path.relative_to(ROOT).as_posix()
    if rel == OWNER_MODULE:
        return []
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source, filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bare = node.name.lower().strip("_")
            if bare in ("check_owner", "validate_owner", "owner_check", "checked_owner"):
                found.append(f"{rel}:{node.lineno} defines {node.name}: the owner is checked in {OWNER_MODULE} only")
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            named = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)]
            named += [k.value.value for k in node.keywords if k.arg == "field_name" and isinstance(k.value, ast.Constant)]
            if name == "validate_identifier" and OWNER_FIELDS & set(named):
                found.append(f"{rel}:{node.lineno} validates {named[0]} itself: use memory.core.owner (Owner.of, "
                             "check_owner)")
    return found


def test_the_owner_is_checked_in_one_place():
    found = [v for path in library_and_lab() for v in owner_checks(path)]
    assert not found, "\n".join(found)
    assert owner_checks(ROOT / OWNER_MODULE) == []


@pytest.mark.parametrize("planted, source, expected", [
    ("memory/store/_planted.py", "def _check_owner(t, u):\n    return t, u\n", "defines _check_owner"),
    ("memory/runtime/_planted.py", "def f(t):\n    return validate_identifier(t, 'tenant_id')\n",
     "validates tenant_id itself"),
    ("lab/_planted.py", "def f(u):\n    return schema.validate_identifier(u, field_name='user_id')\n",
     "validates user_id itself"),
])
def test_a_second_owner_check_is_caught(planted, source, expected):
    _assert_caught(owner_checks, planted, source, expected)


def test_the_owner_error_is_the_one_it_was():
    """One check, the same one-line errors as the two copies it replaced."""
    from memory import IdentifierError, Owner
    from memory.core.owner import check_owner

    assert Owner.of("acme", "alice") == Owner("acme", "alice") and tuple(Owner.of("acme", "alice")) == ("acme", "alice")
    assert check_owner("cafe\u0301", "bob") == ("caf\u00e9", "bob")  # the stored (NFC) form
    with pytest.raises(IdentifierError, match="^tenant_id must be a plain string, got NoneType$"):
        check_owner(None, "alice")
    with pytest.raises(IdentifierError, match="^user_id must be a plain string, got dict$"):
        Owner("acme", {"$ne": ""})  # type: ignore[arg-type]
    with pytest.raises(IdentifierError, match="^user_id must be a non-empty string$"):
        Owner.of("acme", " ")


# --- one owner value below the entry points ---------------------------------------------------------------------------

BELOW_ENTRY_POINTS = ("memory/store/", "memory/runtime/", "memory/write/")
"""The layers the owner reaches only as one :class:`memory.core.owner.Owner`."""
OWNER_PAIRS = (frozenset({"tenant_id", "user_id"}), frozenset({"tenant", "user"}))
OWNER_ENTRY_POINTS = {
    "memory/runtime/manager.py": ("MemoryManager",),
    "memory/runtime/lifecycle.py": ("forget", "set_valid_until", "version_chain"),
    "memory/write/ingest.py": ("Ingestor",),
}
"""The calls below the adapters that still take ``tenant_id=`` / ``user_id=``: the library's public API as README, docs/
and the tests call it (the public methods of ``MemoryManager`` and ``Ingestor``, the lifecycle functions ``memory``
exports). Each makes the ``Owner`` once (``Owner.of``) and passes it on. A class named here lets its public methods
through, never a private one (``_name``), and only in its own file; the store (``memory/store/``) has no entry point:
its methods take an ``Owner``, which it unpacks into its SQL parameters and Chroma calls itself."""


def owner_pairs(path: Path, source: str | None = None) -> list[str]:
    """Where a function of the store, the runtime or the write path takes the owner as two strings (both parameters of
    a pair of :data:`OWNER_PAIRS`), other than a public entry point of :data:`OWNER_ENTRY_POINTS`."""
    rel = path.relative_to(ROOT).as_posix()
    if not rel.startswith(BELOW_ENTRY_POINTS):
        return []
    allowed = OWNER_ENTRY_POINTS.get(rel, ())
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source, filename=str(path))
    found: list[str] = []

    def visit(node: ast.AST, where: str | None) -> None:
        """``where``: "" at the module's top level, a top-level class's name in its body, None anywhere else."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, child.name if where == "" else None)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = child.args
                params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
                pair = next((p for p in OWNER_PAIRS if p <= params), None)
                entry = (where == "" and child.name in allowed) or \
                    (bool(where) and where in allowed and not child.name.startswith("_"))
                if pair is not None and not entry:
                    name = f"{where}.{child.name}" if where else child.name
                    found.append(f"{rel}:{child.lineno} {name} takes {' and '.join(sorted(pair))}: below the entry "
                                 "points the owner is one Owner (memory.core.owner)")
                visit(child, None)
            else:
                visit(child, where)

    visit(tree, "")
    return found


def test_the_owner_travels_as_one_value_below_the_entry_points():
    """No store method, no private helper of the runtime or the write path, takes ``tenant_id`` and ``user_id``."""
    found = [v for path in sorted(ROOT.glob("memory/**/*.py")) for v in owner_pairs(path)]
    assert not found, "\n".join(found)


def test_the_owner_entry_points_are_the_public_api():
    """Every entry point let through is a name ``memory`` exports from that file (``set_valid_until``: documented as
    ``memory.runtime.lifecycle.set_valid_until`` in docs/write-path.md, not re-exported), so the list cannot let an
    internal helper through; and each takes the owner's two keywords (the list holds nothing stale)."""
    import memory

    for rel, names in OWNER_ENTRY_POINTS.items():
        for name in names:
            exported = name in memory.__all__ and getattr(memory, name).__module__ == module_name(ROOT / rel)
            assert exported or (rel, name) == ("memory/runtime/lifecycle.py", "set_valid_until"), (rel, name)
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        taking = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
                functions = [node] if isinstance(node, ast.FunctionDef) else \
                    [f for f in node.body if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")]
                if any(OWNER_PAIRS[0] <= {a.arg for a in f.args.kwonlyargs} for f in functions):
                    taking.add(node.name)
        assert taking == set(names), (rel, set(names) - taking)


@pytest.mark.parametrize("planted, source, expected", [
    ("memory/store/_planted.py", "class Store:\n    def count(self, tenant_id, user_id):\n        return 0\n",
     "Store.count takes tenant_id and user_id"),
    ("memory/store/_planted.py", "def rows(db, *, tenant_id: str, user_id: str):\n    return []\n",
     "rows takes tenant_id and user_id"),
    ("memory/runtime/_planted.py", "def _walk(manager, start, *, tenant_id, user_id):\n    return []\n",
     "_walk takes tenant_id and user_id"),
    ("memory/runtime/_planted.py", "def delete_everywhere(manager, tenant_id, user_id):\n    pass\n",
     "delete_everywhere takes tenant_id and user_id"),
    # an entry point's private method, and an entry point's name in another file, are no entry points
    ("memory/runtime/_planted.py", "class MemoryManager:\n    def _refuse(self, tenant_id, user_id):\n        pass\n",
     "MemoryManager._refuse takes tenant_id and user_id"),
    ("memory/write/_planted.py", "class Ingestor:\n    def decisions(self, *, tenant, user):\n        pass\n",
     "Ingestor.decisions takes tenant and user"),
    ("memory/write/_planted.py", "def f(items):\n    def read(tenant_id, user_id):\n        pass\n    return read\n",
     "read takes tenant_id and user_id"),
])
def test_a_loose_owner_below_the_entry_points_is_caught(planted, source, expected):
    _assert_caught(owner_pairs, planted, source, expected)


def test_one_owner_value_and_the_entry_points_pass():
    """What the rule lets through: an ``Owner`` parameter, one of a pair alone, the layers above (the adapters, the
    lab), and the entry points in their own file."""
    runtime = ROOT / "memory" / "runtime" / "_planted.py"
    assert owner_pairs(runtime, "def _walk(manager, start, owner):\n    pass\ndef _mark(tenant_id, key):\n    pass\n") == []
    assert owner_pairs(ROOT / "memory" / "adapters" / "_planted.py", "def f(tenant_id, user_id):\n    pass\n") == []
    manager = (ROOT / "memory" / "runtime" / "manager.py").read_text(encoding="utf-8")
    assert "def recent(self, *, tenant_id: str, user_id: str)" in manager and owner_pairs(ROOT / "memory" / "runtime"
                                                                                        / "manager.py") == []


# --- the adapters write no record lifecycle field ---------------------------------------------------------------------

LIFECYCLE_FIELDS = ("is_deprecated", "superseded_by", "supersedes", "archived", "version", "valid_until")
"""A record's lifecycle fields: set by the runtime (memory/runtime/versions.py, lifecycle.py) and the write path."""
_WRITES_FIELD = re.compile(r"\b(is_deprecated|superseded_by|supersedes|archived)\s*=(?!=)")
"""The grep: one of the unambiguous field names assigned or passed (``x.archived = True``, ``replace(r,
is_deprecated=True)``). ``version`` and ``valid_until`` are other things' names too (a server's ``version="1"``): the
AST check below catches those on records."""


def lifecycle_writes(path: Path, source: str | None = None) -> list[str]:
    """Where an adapter file writes a record's lifecycle field: the grep above, then the AST for every field (an
    attribute assigned, a ``replace``/``MemoryRecord`` keyword, a ``setattr``, a key assigned by subscript)."""
    rel = path.relative_to(ROOT).as_posix()
    text = path.read_text(encoding="utf-8") if source is None else source
    found = [f"{rel}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if _WRITES_FIELD.search(line)]
    for node in ast.walk(ast.parse(text, filename=str(path))):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            if isinstance(t, ast.Attribute) and t.attr in LIFECYCLE_FIELDS or \
                    isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value in LIFECYCLE_FIELDS:
                found.append(f"{rel}:{node.lineno}: assigns {ast.unparse(t)}")
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("replace", "MemoryRecord", "_replace"):
                found += [f"{rel}:{node.lineno}: {name}(..., {k.arg}=...)" for k in node.keywords if k.arg in LIFECYCLE_FIELDS]
            if name == "setattr" and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                    and node.args[1].value in LIFECYCLE_FIELDS:
                found.append(f"{rel}:{node.lineno}: setattr(..., {node.args[1].value!r}, ...)")
    return found


def test_the_adapters_write_no_lifecycle_field():
    """The LangGraph store and the MCP server map onto the runtime's calls (MemoryManager.revise, supersede, retire,
    delete_records): a version chain or a retirement is written by the runtime, never by an adapter."""
    adapters = sorted(ROOT.glob("memory/adapters/*.py"))
    assert any(p.name == "langgraph_store.py" for p in adapters)
    found = [v for path in adapters for v in lifecycle_writes(path)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("source, expected", [
    ("def f(old):\n    return replace(old, is_deprecated=True, archived=True)\n", "is_deprecated=True"),
    ("def f(new, old):\n    return dataclasses.replace(new, version=old.version + 1)\n", "replace(..., version=...)"),
    ("def f(r, new):\n    r.superseded_by = new.memory_id\n", "superseded_by = new.memory_id"),
    ("def f(r):\n    setattr(r, 'valid_until', 0.0)\n", "setattr(..., 'valid_until', ...)"),
    ("def f(row):\n    row['version'] = 2\n", "assigns row['version']"),
])
def test_a_lifecycle_write_in_an_adapter_is_caught(source, expected):
    _assert_caught(lifecycle_writes, "memory/adapters/_planted.py", source, expected)


WRITE_PATH = ROOT / "memory" / "write"
LANG_READERS = WRITE_PATH / "lang"
_HAN_TEST = re.compile(r"\\u4e00|\\u9fff|\\U00004e00|0x4e00|\b19968\b|\[[^\]\n]*\u4e00-|\b_?CJK\b")
"""A test for Chinese characters written out: the block's bounds as escapes, numbers or a literal range, or a pattern
named CJK."""


def han_tests(path: Path, source: str | None = None) -> list[str]:
    """Where a file tests a text for Chinese characters itself (line by line)."""
    rel = path.relative_to(ROOT)
    text = path.read_text(encoding="utf-8") if source is None else source
    return [f"{rel}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1)
            if _HAN_TEST.search(line)]


def test_only_the_language_readers_test_for_chinese_characters():
    """"Is this Chinese?" is decided in memory/write/lang/ (script.is_chinese, language_of), nowhere else of the
    write path: extraction, the rules and the learned judge's features ask the statement's reader."""
    files = [p for p in sorted(WRITE_PATH.rglob("*.py")) if LANG_READERS not in p.parents]
    assert any(p.name == "extract.py" for p in files) and any(p.name == "zh.py" for p in LANG_READERS.iterdir())
    found = [hit for path in files for hit in han_tests(path)]
    assert not found, "\n".join(found)
    assert any(han_tests(p) for p in LANG_READERS.glob("*.py")), "the readers' own test is found (the checker works)"


@pytest.mark.parametrize("source, expected", [
    ('_CJK = re.compile(r"[\\u4e00-\\u9fff]")\n', "_CJK = re.compile"),
    ('chinese = bool(re.search("[\u4e00-\u9fff]", text))\n', "re.search("),
    ("chinese = any(0x4e00 <= ord(ch) <= 0x9fff for ch in text)\n", "ord(ch)"),
    ('chinese = any("\\u4e00" <= ch <= "\\u9fff" for ch in text)\n', "<= ch <="),
    ("zh = bool(CJK.search(text))\n", "CJK.search"),
])
def test_a_planted_chinese_test_outside_the_readers_is_caught(source, expected):
    _assert_caught(han_tests, "memory/write/_planted.py", source, expected)
