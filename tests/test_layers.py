"""dscir's imports form one-way layers with no circle (docs/architecture.md).

Every module of the package is parsed with ``ast`` and every import of a dscir
module is an edge of the graph: module-level ones, those inside functions and
methods, and those under ``if TYPE_CHECKING:``. Function-level imports are
counted because they hide a circle without removing it: the two modules still
need each other to be understood, tested and moved. Type-only imports are
counted because a lower module that names an upper module's types depends on
its design just the same, and a circle of them is a circle a reader follows.

Two checks on that graph:

- no circle, between modules and between packages (``dscir.api`` <->
  ``dscir.report`` is a circle even when no two modules form one), at the
  top-level packages of ``dscir`` and one level further (``dscir.models.lda``
  <-> ``dscir.models.mixtures.dp``);
- no import upwards against ``LAYERS``: a module imports from its own layer's
  packages (acyclically, by the first check) and from the layers below.

And one check of what an import loads: each lower package, imported alone in a
fresh interpreter, loads no module of a layer above it (the package's own
``__init__`` re-exports the API lazily) and not Dask's cluster client.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dscir"

#: Top to bottom, as in docs/architecture.md. Packages of one layer may import
#: each other (without a circle); nothing imports from a layer above its own.
#: ``dscir`` is the package's own ``__init__`` (the Python API's front door),
#: not its submodules.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cli", ("dscir.cli", "dscir.__main__")),
    ("report", ("dscir.report",)),
    ("api", ("dscir", "dscir.api", "dscir.experiments")),
    ("engine, runs, monitor, diagnostics", ("dscir.engine", "dscir.runs", "dscir.monitor",
                                            "dscir.diagnostics", "dscir.display")),
    ("models", ("dscir.models",)),
    ("samplers", ("dscir.samplers",)),
    ("corpus and foundations", ("dscir.corpus", "dscir.rng", "dscir.errors", "dscir.params",
                                "dscir.integrity", "dscir.progress")),
)

#: Circles still allowed, each as the set of its modules (none left).
PENDING: tuple[frozenset[str], ...] = ()


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _known(name: str, known) -> str | None:
    """The module ``name`` denotes: itself, or the package holding the attribute."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(name: str, path: Path, known) -> dict[str, int]:
    """The dscir modules ``name`` imports anywhere in its file, with a line of each."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's own package upwards
                package = name if path.name == "__init__.py" else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            # "from P import m" imports the module P.m when there is one
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        for target in targets:
            if target == "dscir" or target.startswith("dscir."):
                module = _known(target, known)
                if module is not None and module != name:
                    found.setdefault(module, node.lineno)
    return found


def graph(root: Path = PACKAGE) -> dict[str, dict[str, int]]:
    known = modules(root)
    return {name: imports(name, path, known) for name, path in known.items()}


def circles(edges) -> list[frozenset[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(frozenset(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def packages(edges, depth: int, names=None) -> dict[str, set[str]]:
    """The graph between the packages ``depth`` levels under dscir (each module
    stands for its package); below depth 1 only packages (``names``) are nodes,
    as single modules are the module graph's."""
    def key(m: str) -> str | None:
        k = ".".join(m.split(".")[:depth + 1])
        return k if "." in k and (depth == 1 or k in names) else None

    out: dict[str, set[str]] = {}
    for a, targets in edges.items():
        for b in targets:
            if key(a) and key(b) and key(a) != key(b):
                out.setdefault(key(a), set()).add(key(b))
    return out


def layer_of(module: str) -> int:
    """The index in ``LAYERS`` (0 at the top) of the longest package holding ``module``."""
    best = None
    for i, (_, names) in enumerate(LAYERS):
        for p in names:
            inside = module == p or (p != "dscir" and module.startswith(p + "."))
            if inside and (best is None or len(p) > best[0]):
                best = (len(p), i)
    assert best is not None, f"{module} is in no layer: add its package to LAYERS " \
                             "and to docs/architecture.md"
    return best[1]


def _describe(component, edges) -> str:
    links = [f"{a} -> {b} (line {edges[a][b]})" for a in sorted(component)
             for b in sorted(edges[a]) if b in component]
    return "; ".join(links)


def test_the_graph_sees_function_level_and_type_checking_imports(tmp_path):
    pkg = tmp_path / "dscir"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("from .a import f\n")
    (pkg / "low" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dscir.low import b\n"
        "def f():\n    import dscir.high\n")
    (pkg / "low" / "b.py").write_text("def g():\n    from dscir.low import a\n")
    (pkg / "high.py").write_text("from dscir import low\n")
    edges = graph(pkg)
    assert edges["dscir.low.a"] == {"dscir.low.b": 3, "dscir.high": 5}
    assert edges["dscir.low"] == {"dscir.low.a": 1}
    assert circles(edges) == [frozenset({"dscir.low", "dscir.low.a", "dscir.low.b",
                                         "dscir.high"})]
    assert circles(packages(edges, 1)) == [frozenset({"dscir.low", "dscir.high"})]
    assert circles(packages(edges, 2, {"dscir", "dscir.low"})) == []


def test_every_module_is_in_a_layer():
    for module in modules():
        layer_of(module)


def test_no_import_circle_between_modules():
    edges = graph()
    found = [c for c in circles(edges) if c not in PENDING]
    assert not found, "import circles: " + " | ".join(_describe(c, edges) for c in found)


def test_pending_circles_still_exist():
    """An allowance outlives its circle only by mistake: remove it from PENDING."""
    found = set(circles(graph()))
    gone = [sorted(c) for c in PENDING if c not in found]
    assert not gone, f"these circles are gone, remove them from PENDING: {gone}"


def test_no_import_circle_between_packages():
    edges = graph()
    names = {m for m, path in modules().items() if path.name == "__init__.py"}
    for depth in (1, 2):
        between = packages(edges, depth, names)
        found = circles(between)
        assert not found, f"package circles at depth {depth}: " + " | ".join(
            f"{a} -> {b}" for c in found for a in sorted(c) for b in sorted(between[a])
            if b in c)


def test_no_import_goes_up_a_layer():
    upward = [f"{a} (line {line}) imports {b}: {LAYERS[layer_of(a)][0]} is below "
              f"{LAYERS[layer_of(b)][0]}"
              for a, targets in sorted(graph().items()) for b, line in sorted(targets.items())
              if layer_of(b) < layer_of(a)]
    assert not upward, "\n".join(upward)


#: Lower packages imported alone (the models together), each with the third-party
#: packages it must not load.
LEAVES = (("dscir.rng", ("distributed", "zarr")), ("dscir.samplers", ("distributed", "zarr")),
          ("dscir.corpus", ("distributed",)),
          ("dscir.models.lda, dscir.models.mixtures.dp, dscir.models.mixtures.finite", ("distributed",)))


@pytest.mark.parametrize("packages, absent", LEAVES, ids=[p.split(",")[0] for p, _ in LEAVES])
def test_a_lower_package_loads_nothing_above_it(packages, absent):
    code = f"import sys, {packages}; print(' '.join(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    loaded = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                            capture_output=True, text=True).stdout.split()
    names = packages.split(", ")
    assert set(names) <= set(loaded)  # the imports ran
    layer = min(layer_of(p) for p in names)
    above = [m for m in loaded if m in modules() and m != "dscir" and layer_of(m) < layer]
    assert not above, f"import {packages} loads {above}"
    heavy = [m for m in absent if m in loaded]
    assert not heavy, f"import {packages} loads {heavy}"
