"""The package's modules form layers: no import cycle between them, counting
imports inside functions too (an import in a function is a cycle waiting to
be untangled, not a way round one)."""
import ast
import pathlib

import pyautodiff

PACKAGE = pathlib.Path(pyautodiff.__file__).parent

# Imports that still close a cycle, each "importer -> imported"; the count
# may only go down: test_known_cycles_still_exist fails once one is gone, so
# that it is struck off here.  (None left.)
KNOWN_CYCLE_IMPORTS = set()


def _modules():
    """name -> (path, is a package's __init__) for every module of the
    package, generated ones included."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        out[".".join(parts)] = (path, is_package)
    return out


def _imports(modules):
    """importer -> {imported: first line}: every import statement (module
    level or in a function) naming another module of the package.  A
    package's __init__ importing its own submodules is not counted (it is
    what a package is), and `from . import x` counts as importing x, not the
    package."""
    graph = {name: {} for name in modules}
    for name, (path, is_package) in modules.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[:len(here) - (node.level - 1)]
                    base = ".".join(base + ([node.module] if node.module else []))
                else:
                    base = node.module
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules
                           else base for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:   # a name in a module
                    target = target.rpartition(".")[0]
                if not target or target == name:
                    continue
                if is_package and target.startswith(name + "."):
                    continue
                graph[name].setdefault(target, node.lineno)
    return graph


def _cycle(graph):
    """One import cycle of graph as a list of modules, or None."""
    colour = dict.fromkeys(graph, 0)            # 0 new, 1 on the path, 2 done
    path = []

    def visit(name):
        colour[name] = 1
        path.append(name)
        for target in sorted(graph[name]):
            if colour[target] == 1:
                return path[path.index(target):] + [target]
            if colour[target] == 0:
                found = visit(target)
                if found:
                    return found
        path.pop()
        colour[name] = 2
        return None

    for name in sorted(graph):
        if colour[name] == 0:
            found = visit(name)
            if found:
                return found
    return None


def _without_known(graph):
    return {name: {t: line for t, line in targets.items()
                   if (name, t) not in KNOWN_CYCLE_IMPORTS}
            for name, targets in graph.items()}


def test_the_graph_sees_imports_in_functions_and_from_dot(tmp_path):
    graph = _imports(_modules())
    assert "pyautodiff.tape_state" in graph["pyautodiff.value"]    # module level
    (tmp_path / "a.py").write_text("def f():\n    from .b import g\n    return g\n")
    (tmp_path / "b.py").write_text("from . import a\n")
    pkg = {"p": (tmp_path / "__init__.py", True), "p.a": (tmp_path / "a.py", False),
           "p.b": (tmp_path / "b.py", False)}
    (tmp_path / "__init__.py").write_text("")
    small = _imports(pkg)
    assert "p.b" in small["p.a"] and "p.a" in small["p.b"]       # in a function
    assert _cycle(small) is not None
    assert "pyautodiff._core" in graph["pyautodiff._generated"]    # from .. import _core
    assert "pyautodiff.value" not in graph["pyautodiff"]           # its own submodule


def test_modules_import_each_other_without_a_cycle():
    cycle = _cycle(_without_known(_imports(_modules())))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_known_cycles_still_exist():
    """Each known exception is still an import that closes a cycle; one
    that no longer is must leave KNOWN_CYCLE_IMPORTS."""
    graph = _without_known(_imports(_modules()))
    for importer, imported in sorted(KNOWN_CYCLE_IMPORTS):
        assert imported in _imports(_modules())[importer], \
            f"{importer} no longer imports {imported}: strike it off"
        # it closes a cycle if the imported module leads back to the importer
        seen, todo = set(), [imported]
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(graph[name])
        assert importer in seen, \
            f"{importer} -> {imported} closes no cycle any more: strike it off"
