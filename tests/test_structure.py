"""The shape of the house (issue 9): imports point one way, functions stay short, and the
documentation says what the code and the rules hold."""

from __future__ import annotations

import ast
import re

import pytest
import yaml
from ddp_doctor.errors import ExitCode
from helpers import ROOT

WIZARD = ROOT / "wizard"
RULES = ROOT / "rules"
MAX_FUNCTION_LINES = 60
LONG_REASON = "Long because"  # a function over the limit says why in its docstring
TERMINAL_MODULES = {"rich", "questionary", "prompt_toolkit"}


def _trees() -> dict[str, ast.Module]:
    return {f.stem: ast.parse(f.read_text("utf-8")) for f in sorted(WIZARD.glob("*.py"))}


def _package_imports(tree: ast.Module) -> set[str]:
    """Modules of the package this module imports, at the top or inside functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:  # `from . import x`: x is a module or a name of __init__
                found |= {
                    a.name if (WIZARD / f"{a.name}.py").exists() else "__init__" for a in node.names
                }
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            found |= {n.split(".")[1] for n in names if n.startswith("ddp_doctor.")}
    return found


def _absolute_imports(tree: ast.Module) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


GRAPH = {name: _package_imports(tree) for name, tree in _trees().items()}


def test_the_graph_was_read():
    assert {"cli", "engine", "kb"} <= set(GRAPH) and "engine" in GRAPH["cli"]


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
    importers = sorted(name for name, deps in GRAPH.items() if "cli" in deps)
    assert importers == ["__main__"]  # the `python -m ddp_doctor` entry point only


def test_the_interview_state_has_no_terminal_imports():
    trees = _trees()
    pure = {"interview", "answers", "engine", "errors", "inputs"}
    leaks = {m: _absolute_imports(trees[m]) & TERMINAL_MODULES for m in pure}
    assert not {m: v for m, v in leaks.items() if v}


def _long_functions() -> list[str]:
    out = []
    for name, tree in _trees().items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES and LONG_REASON not in (
                    ast.get_docstring(node) or ""
                ):
                    out.append(f"wizard/{name}.py:{node.lineno} {node.name} ({lines} lines)")
    return out


def test_no_function_is_long_without_a_reason():
    assert not _long_functions()


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
