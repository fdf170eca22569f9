"""The package's structure, read from its source (ast), nothing imported: no import cycle between
modules, the library never imports report/ or cli/, no module over 500 lines, no private name
imported from another module.

Each rule lists today's known violations, which other branches of issue #27 are removing. A
violation not listed fails, and so does a listed one that no longer exists: the lists only
shrink. The layers are also import-linter contracts (pyproject.toml, `lint-imports`), which
follow indirect imports too; these tests name the file and line of each direct one.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gpucluster_analysis"
MAX_LINES = 500

# Import cycles, each the set of modules that import one another (a strongly connected component).
KNOWN_CYCLES: set[frozenset[str]] = set()

# (importer, imported): the library reaching up into report/ or cli/.
KNOWN_UPWARD: set[tuple[str, str]] = set()

# Modules over MAX_LINES lines, still to be split.
KNOWN_LARGE: set[str] = set()

# (importer, module imported from, name): a private name used outside its module.
KNOWN_PRIVATE: set[tuple[str, str, str]] = set()


@dataclass(frozen=True)
class Import:
    importer: str  # path under the package, e.g. "ingest/slurm/sacct.py"
    module: str  # the package module the name comes from (or is)
    name: str | None  # the name taken from `module`; None when `module` itself is imported
    line: int


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@cache
def _modules() -> dict[str, str]:
    """Dotted module name -> path under the package, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        parts = [PACKAGE.name, *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = rel.as_posix()
    return out


def _package_of(path: str) -> list[str]:
    """The dotted parts of the package a module file sits in."""
    return [PACKAGE.name, *Path(path).parent.parts]


def _owner(dotted: str) -> str:
    """The module that holds `dotted`: itself, or the nearest enclosing module."""
    modules = _modules()
    while dotted not in modules:
        dotted = dotted.rpartition(".")[0]
    return dotted


@cache
def _imports() -> tuple[Import, ...]:
    """Every import of a package module by a package module, at any depth (inside functions and
    `if TYPE_CHECKING:` too: each is a dependency of the design)."""
    modules = _modules()
    out = []
    for path in modules.values():
        for node in ast.walk(ast.parse((PACKAGE / path).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == PACKAGE.name:
                        out.append(Import(path, _owner(alias.name), None, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = _package_of(path)[: len(_package_of(path)) - node.level + 1]
                    base = ".".join([*package, base] if base else package)
                if base.split(".")[0] != PACKAGE.name:
                    continue
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    if full in modules:  # a module
                        out.append(Import(path, full, None, node.lineno))
                    else:
                        out.append(Import(path, _owner(base), alias.name, node.lineno))
    return tuple(out)


def _edges() -> dict[str, set[str]]:
    paths = _modules()
    edges: dict[str, set[str]] = {path: set() for path in paths.values()}
    for imp in _imports():
        if paths[imp.module] != imp.importer:
            edges[imp.importer].add(paths[imp.module])
    return edges


def _cycles(edges: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _check(found: set, known: set, what: str) -> None:
    new, gone = found - known, known - found
    message = []
    if new:
        message.append(f"new {what} (fix them; do not list them): {sorted(map(_shown, new))}")
    if gone:
        message.append(f"listed {what} that no longer exist (take them off the list): {sorted(map(_shown, gone))}")
    assert not message, "\n".join(message)


def _shown(item: object) -> object:
    return sorted(item) if isinstance(item, frozenset) else item


# ------------------------------------------------------------------ the rules


def test_no_import_cycle_between_modules() -> None:
    _check(_cycles(_edges()), KNOWN_CYCLES, "import cycles")


def test_the_library_never_imports_report_or_cli() -> None:
    """Below report/ and cli/ (the entry point __main__.py aside): ingest/, analyze/, replay/,
    spark/ and every other library module; and report/ never imports cli/."""
    upward = set()
    for importer, imported in ((i, m) for i, targets in _edges().items() for m in targets):
        top, target_top = importer.split("/")[0], imported.split("/")[0]
        if importer == "__main__.py" or top == "cli":
            continue
        if target_top == "cli" or (target_top == "report" and top != "report"):
            upward.add((importer, imported))
    _check(upward, KNOWN_UPWARD, "imports of report/ or cli/ from below")


def test_no_module_over_500_lines() -> None:
    large = {
        path
        for path in _modules().values()
        if len((PACKAGE / path).read_text(encoding="utf-8").splitlines()) > MAX_LINES
    }
    _check(large, KNOWN_LARGE, f"modules over {MAX_LINES} lines")


def test_no_private_name_is_imported_from_another_module() -> None:
    """`from m import _x` of a name, or `m._x` on an imported package module. A private module
    (cli/_options.py) may be imported within its own package."""
    paths = _modules()
    found = set()
    for imp in _imports():
        source = paths[imp.module]
        if imp.name is None:
            own_package = imp.module.rpartition(".")[0] == ".".join(_package_of(imp.importer))
            if _is_private(imp.module.rpartition(".")[2]) and not own_package:
                found.add((imp.importer, source, imp.module.rpartition(".")[2]))
        elif _is_private(imp.name) and source != imp.importer:
            found.add((imp.importer, source, imp.name))
    # attributes read on a package module bound by an import: `slurm._MISSING`
    for path in paths.values():
        tree = ast.parse((PACKAGE / path).read_text(encoding="utf-8"))
        bound = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == PACKAGE.name:
                for alias in node.names:
                    if f"{node.module}.{alias.name}" in paths:
                        bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in paths:
                        bound[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and _is_private(node.attr)
                and paths[bound[node.value.id]] != path
            ):
                found.add((path, paths[bound[node.value.id]], node.attr))
    _check(found, KNOWN_PRIVATE, "private names imported across modules")


# ------------------------------------------------------------------ the checks themselves


def test_the_cycle_finder_finds_a_cycle_through_three_modules_and_not_a_chain() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(edges) == {frozenset({"a", "b", "c"})}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == set()


def test_the_import_reader_resolves_relative_and_module_imports() -> None:
    imports = _imports()
    # spark/engine.py: `from gpucluster_analysis.analyze.selection import Selection`
    assert any(
        i.importer == "spark/engine.py"
        and i.module == "gpucluster_analysis.analyze.selection"
        and i.name == "Selection"
        for i in imports
    )
    # __main__.py imports cli/ (the entry point, allowed)
    assert any(i.importer == "__main__.py" and i.module == "gpucluster_analysis.cli" for i in imports)
    assert len(_modules()) > 100


def test_a_listed_violation_that_is_gone_fails() -> None:
    try:
        _check({"a"}, {"a", "b"}, "things")
    except AssertionError as e:
        assert "take them off the list" in str(e) and "'b'" in str(e)
    else:
        raise AssertionError("a listed violation that no longer exists passed")
