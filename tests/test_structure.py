"""The shape of the house (issue 9): imports point one way, functions stay short, and the
documentation says what the code and the rules hold."""

from __future__ import annotations

import ast
import re

import pytest
import yaml
from ddp_doctor.common.errors import ExitCode
from helpers import ROOT

WIZARD = ROOT / "wizard"
RULES = ROOT / "rules"
MAX_FUNCTION_LINES = 60
MAX_CLASS_LINES = 150  # a class a reader holds at once (issue 23)
LONG_REASON = "Long because"  # a function over the limit says why in its docstring
TERMINAL_MODULES = {"rich", "questionary", "prompt_toolkit"}


# The layers, lowest first: a module may import its own layer and the layers before it.
# probe and run are tools of their own beside each other; cli sits on top of everything.
LAYERS = ["common", "knowledge", "reading", "reasoning", "output", "talk", "probe", "run", "cli"]


def _name(path) -> str:
    """`layer.module` for a module of a layer (`layer` for its __init__), the stem at the top."""
    parts = path.relative_to(WIZARD).with_suffix("").parts
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _trees() -> dict[str, ast.Module]:
    return {_name(f): ast.parse(f.read_text("utf-8")) for f in sorted(WIZARD.rglob("*.py"))}


def _resolve(current: str, level: int, module: str | None) -> str:
    """The absolute `layer.module` name a relative import in `current` points at."""
    package = (
        current.split(".")
        if (WIZARD / current.replace(".", "/")).is_dir()
        else (current.split(".")[:-1])
    )
    base = package[: len(package) - (level - 1)]
    return ".".join(base + (module.split(".") if module else []))


def _package_imports(name: str, tree: ast.Module) -> set[str]:
    """Modules of the package this module imports, at the top or inside functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            target = _resolve(name, node.level, node.module)
            if node.module:
                found.add(target)
            else:  # `from . import x`: x is a module, or a name of the package's __init__
                for a in node.names:
                    sub = f"{target}.{a.name}" if target else a.name
                    found.add(sub if sub in MODULES else target or "__init__")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            found |= {n.split(".", 1)[1] for n in names if n.startswith("ddp_doctor.")}
    return found


def _absolute_imports(tree: ast.Module) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


TREES = _trees()
MODULES = set(TREES)
GRAPH = {name: _package_imports(name, tree) for name, tree in TREES.items()}


def test_the_graph_was_read():
    assert {"cli.main", "reasoning.engine", "knowledge.kb"} <= set(GRAPH)
    assert "reasoning.engine" in GRAPH["cli.main"]
    assert set(GRAPH) <= MODULES and all(deps <= MODULES | {"__init__"} for deps in GRAPH.values())


def test_every_module_lives_in_a_layer():
    """The tree shows the design: only the package's own two files sit at the top."""
    loose = sorted(m for m in MODULES if "." not in m and m not in LAYERS)
    assert loose == ["__init__", "__main__"]
    assert sorted({m.split(".")[0] for m in MODULES} - {"__init__", "__main__"}) == sorted(LAYERS)


def test_every_layer_says_what_it_may_import():
    for rank, layer in enumerate(LAYERS):
        doc = (ast.get_docstring(TREES[layer]) or "").lower()
        assert "may import" in doc, f"wizard/{layer}/__init__.py does not say what it may import"
        named = set(re.findall(r"[a-z]+", doc.split("may import", 1)[1])) & set(LAYERS)
        assert named <= set(LAYERS[: rank + 1]), f"wizard/{layer}/__init__.py allows {named}"


def test_imports_go_down_the_layers_only():
    def rank(module: str) -> int:
        return LAYERS.index(module.split(".")[0])

    upward = sorted(
        f"{module} imports {dep}"
        for module, deps in GRAPH.items()
        if module.split(".")[0] in LAYERS
        for dep in deps
        if dep != "__init__"
        and rank(dep) > rank(module)
        and {module.split(".")[0], dep.split(".")[0]} != {"probe", "run"}
    )
    assert not upward
    siblings = sorted(
        f"{m} imports {d}"
        for m, deps in GRAPH.items()
        for d in deps
        if {m.split(".")[0], d.split(".")[0]} == {"probe", "run"}
    )
    assert not siblings  # probe and run are tools of their own: neither uses the other


def test_the_import_graph_has_no_cycle():
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for dep in sorted(GRAPH.get(node, ())):
            if state.get(dep) == "open":
                raise AssertionError(
                    "import cycle: " + " -> ".join(path[path.index(dep) :] + [dep])
                )
            if dep not in state:
                visit(dep, path + [dep])
        state[node] = "done"

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])


def test_nothing_imports_the_command_line():
    importers = sorted(
        name
        for name, deps in GRAPH.items()
        if any(d.split(".")[0] == "cli" for d in deps) and not name.startswith("cli")
    )
    assert importers == ["__main__"]  # the `python -m ddp_doctor` entry point only


def test_the_interview_state_has_no_terminal_imports():
    pure = {"talk.interview", "talk.answers", "reasoning.engine", "common.errors", "reading.inputs"}
    leaks = {m: _absolute_imports(TREES[m]) & TERMINAL_MODULES for m in pure}
    assert not {m: v for m, v in leaks.items() if v}


def _long_functions() -> list[str]:
    out = []
    for name, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES and LONG_REASON not in (
                    ast.get_docstring(node) or ""
                ):
                    out.append(
                        f"wizard/{name.replace('.', '/')}.py:{node.lineno} {node.name} ({lines} lines)"
                    )
    return out


def test_no_function_is_long_without_a_reason():
    assert not _long_functions()


def test_no_class_is_over_the_limit():
    """A class does one job with the state that job needs: past the limit, split it by
    responsibility (as session.py, scanner.py and analyser.py were), never by line count."""
    long = [
        f"wizard/{name.replace('.', '/')}.py:{node.lineno} {node.name} "
        f"({node.end_lineno - node.lineno + 1} lines)"
        for name, tree in TREES.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES
    ]
    assert not long


# ---------------------------------------------------------------------------- README


README = (ROOT / "README.md").read_text("utf-8")


def _readme_ids(kind: str) -> set[str]:
    """The ids listed after `families` / `causes` in README's 'Stable ids' paragraph."""
    paragraph = README.split("Stable ids:", 1)[1].split("\n\n", 1)[0]
    part = re.split(r"\b(families|causes|fixes)\b", paragraph)
    listed = {part[i]: part[i + 1] for i in range(1, len(part) - 1, 2)}
    return set(re.findall(r"`([a-z0-9_]+)`", listed[kind]))


@pytest.mark.parametrize(
    ("kind", "file", "key"),
    [("families", "signatures", "families"), ("causes", "causes", "causes")],
)
def test_readme_stable_ids_equal_the_rules_ids(kind, file, key):
    data = yaml.safe_load((RULES / f"{file}.yaml").read_text("utf-8"))
    assert _readme_ids(kind) == {item["id"] for item in data[key]}


def test_readme_exit_code_table_equals_the_exit_codes():
    section = README.split("### Exit codes", 1)[1].split("###", 1)[0]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)}
    assert documented == {int(code) for code in ExitCode}


def test_the_public_api_is_small_and_import_stays_light():
    import subprocess
    import sys

    code = (
        "import sys, ddp_doctor; light = not {'torch', 'ddp_doctor.probe'} & set(sys.modules); "
        "names = [getattr(ddp_doctor, n) for n in ddp_doctor.__all__]; "
        "print(light, sorted(ddp_doctor.__all__), ddp_doctor.find_unused_parameters.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    light, *rest = done.stdout.split(" ", 1)
    assert light == "True"  # `import ddp_doctor` loads neither the probe nor torch
    assert "find_unused_parameters" in rest[0] and "__version__" in rest[0]
