"""The layout's rules, read off the import graph of the source.

``udfs/`` (the pure per-batch computation) imports neither pyspark nor ``pipeline/`` (the Spark
side); ``pipeline/`` uses ``udfs/``, never the other way; neither imports ``devtools/`` (developer
tools that stay out of the wheel). Inside each, every subpackage is one capability and may
import only the ones :data:`ALLOWED` lists, so the tree reads as the data flow. Checked twice:
in the source (every import statement, also inside functions) and at run time (importing each
``udfs`` module in a fresh interpreter loads neither pyspark nor ``pipeline``).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIRST_PARTY = ("udfs", "pipeline", "devtools")

# unit -> the units it may import (a unit is a subpackage, or a top-level module of udfs/ or
# pipeline/). Every unit may import itself. pyspark is allowed in pipeline/ and devtools/ only.
_PIPELINE_BASE = {"pipeline.settings", "pipeline.session", "pipeline.progress", "pipeline.version", "pipeline.options"}
_COMMANDS = _PIPELINE_BASE | {"pipeline.runner"}  # what a capability's command module may use
ALLOWED: dict[str, set[str]] = {
    "udfs.errors": set(),
    "udfs.flink": {"udfs.errors"},
    "udfs.spec": {"udfs.errors", "udfs.flink"},
    "udfs.compute": {"udfs.errors", "udfs.flink", "udfs.spec"},
    "udfs.savepoint": set(),
    "udfs.restore": {"udfs.errors", "udfs.flink", "udfs.compute", "udfs.spec", "udfs.savepoint"},
    "udfs.render": set(),
    "pipeline.version": set(),
    "pipeline.settings": {"udfs.flink"},
    "pipeline.session": {"pipeline.settings"},
    "pipeline.progress": set(),
    "pipeline.options": set(),
    "pipeline.worker_daemon": set(),  # it imports the worker modules by name, at its start
    "pipeline.runner": _PIPELINE_BASE | {"pipeline.tables"},
    "pipeline.tables": _PIPELINE_BASE | {"udfs.spec", "udfs.flink", "udfs.savepoint"},
    "pipeline.compute": _COMMANDS | {"pipeline.tables", "udfs.errors", "udfs.spec", "udfs.flink", "udfs.compute"},
    "pipeline.restore": _COMMANDS
    | {"pipeline.tables", "pipeline.compute", "pipeline.export"}
    | {"udfs.flink", "udfs.restore", "udfs.savepoint", "udfs.spec"},
    "pipeline.render": _PIPELINE_BASE | {"pipeline.tables", "udfs.render"},
    "pipeline.export": _PIPELINE_BASE,
    "pipeline.cli": _PIPELINE_BASE
    | {"pipeline.compute", "pipeline.restore", "pipeline.export", "pipeline.render", "pipeline.tables", "udfs.flink"},
}


def _modules() -> list[Path]:
    return sorted(p for pkg in FIRST_PARTY for p in (ROOT / pkg).rglob("*.py"))


def _unit(dotted: str) -> str:
    """``udfs.flink.hashing`` -> ``udfs.flink``; ``pipeline.cli`` -> itself; ``devtools.x`` -> ``devtools``."""
    parts = dotted.split(".")
    if parts[0] == "devtools":
        return "devtools"
    return ".".join(parts[:2])


def _imports(path: Path) -> set[str]:
    """Every module an import statement in the file names (``from a.b import c`` -> ``a.b.c`` and ``a.b``)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{alias.name}" for alias in node.names}
    return out


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_every_unit_is_declared():
    """A new subpackage or top-level module must say what it may import."""
    units = {_unit(_module_name(p)) for p in _modules()} - {"udfs", "pipeline", "devtools"}
    assert units <= set(ALLOWED) | {"devtools"}, sorted(units - set(ALLOWED))
    assert {"udfs.spec", "udfs.flink", "udfs.compute", "udfs.savepoint", "pipeline.compute", "pipeline.tables"} <= units


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_imports_follow_the_layout(path: Path):
    module = _module_name(path)
    unit = _unit(module)
    if unit in ("udfs", "pipeline"):  # the packages' own __init__
        unit = module
    imported = _imports(path)
    roots = {m.split(".")[0] for m in imported}
    if module.startswith("udfs"):
        assert not roots & {"pyspark", "pipeline", "devtools"}, f"{module} imports {sorted(roots)}"
    if module.startswith("pipeline"):
        assert "devtools" not in roots, f"{module} imports devtools"
    if unit == "devtools" or unit in ("udfs", "pipeline"):
        return
    first_party = {_unit(m) for m in imported if m.split(".")[0] in FIRST_PARTY and m not in FIRST_PARTY}
    # ``from udfs.flink import profiles`` names the unit udfs.flink either way
    bad = sorted(first_party - ALLOWED[unit] - {unit})
    assert not bad, f"{module} ({unit}) imports {bad}; allowed: {sorted(ALLOWED[unit])}"


def test_importing_any_udfs_module_loads_neither_pyspark_nor_pipeline():
    """All modules in one fresh interpreter, each checked right after its own import."""
    names = [_module_name(p) for p in _modules() if p.parts[len(ROOT.parts)] == "udfs"]
    code = (
        "import importlib, sys\n"
        f"for m in {names!r}:\n"
        "    importlib.import_module(m)\n"
        "    bad = sorted(k for k in sys.modules if k.split('.')[0] in ('pyspark', 'pipeline', 'devtools'))\n"
        "    assert not bad, (m, bad)\n"
        "print(len(sys.modules))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert int(p.stdout.strip()) > 0


def test_the_ast_scan_sees_an_import_inside_a_function(tmp_path):
    """The scan would catch a lazy import too (the way pipeline/ modules import Spark late)."""
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from pipeline.session import get_spark\n    import pyspark.sql\n")
    assert _imports(f) >= {"pipeline.session", "pyspark.sql"}


def test_a_forbidden_edge_is_caught():
    """The rule itself: udfs.flink importing udfs.spec would be refused."""
    assert "udfs.spec" not in ALLOWED["udfs.flink"]
    assert "pipeline.restore" not in ALLOWED["pipeline.compute"]


# ------------------------------------------------------------------------------------------------
#  Sizes a reader can hold: a function of at most 60 lines in pipeline/ and udfs/ (a data literal
#  -- a table of names, a dict of constants -- does not count), a module of udfs/restore (the
#  restore rules, which grow with every Flink line) of at most 600.
# ------------------------------------------------------------------------------------------------

MAX_FUNCTION_LINES = 60
MAX_RESTORE_MODULE_LINES = 600
# "path::function" -> its length, for functions in files others were changing when the limit came
# in, to be split there; it only shrinks.
LONG_FUNCTIONS_ALLOWED: dict[str, int] = {}


def _is_data(node: ast.AST) -> bool:
    """A literal made of constants only (strings, numbers, nested lists/tuples/sets/dicts of them)."""
    if isinstance(node, ast.Constant | ast.JoinedStr):
        return True
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(_is_data(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_data(k) and _is_data(v) for k, v in zip(node.keys, node.values, strict=True))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_data(node.left) and _is_data(node.right)
    return False


def function_lengths(path: Path) -> dict[str, int]:
    """Each function's (and method's) lines, from its first decorator to its last line, less the
    lines of the multi-line data literals inside it."""
    out = {}
    for fn in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        start = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
        data: set[int] = set()
        for n in ast.walk(fn):
            if isinstance(n, ast.List | ast.Tuple | ast.Set | ast.Dict) and n.end_lineno != n.lineno and _is_data(n):
                data |= set(range(n.lineno, (n.end_lineno or n.lineno) + 1))
        out[f"{fn.name}:{fn.lineno}"] = (fn.end_lineno or fn.lineno) - start + 1 - len(data)
    return out


def test_no_function_in_pipeline_or_udfs_is_longer_than_60_lines():
    long = {}
    for path in sorted(p for pkg in ("pipeline", "udfs") for p in (ROOT / pkg).rglob("*.py")):
        for name, lines in function_lengths(path).items():
            key = f"{path.relative_to(ROOT).as_posix()}::{name.split(':')[0]}"
            if lines > max(MAX_FUNCTION_LINES, LONG_FUNCTIONS_ALLOWED.get(key, 0)):
                long[f"{key} (line {name.split(':')[1]})"] = lines
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them): {long}"


def test_the_allowlist_names_only_functions_still_too_long():
    """An allowed function that was split leaves the list."""
    lengths = {}
    for key in LONG_FUNCTIONS_ALLOWED:
        path, name = key.split("::")
        lengths[key] = max((n for f, n in function_lengths(ROOT / path).items() if f.split(":")[0] == name), default=0)
    assert all(n > MAX_FUNCTION_LINES for n in lengths.values()), lengths


def test_no_module_of_udfs_restore_is_longer_than_600_lines():
    long = {
        p.relative_to(ROOT).as_posix(): n
        for p in sorted((ROOT / "udfs" / "restore").rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_RESTORE_MODULE_LINES
    }
    assert not long, f"modules of udfs/restore over {MAX_RESTORE_MODULE_LINES} lines: {long}"


def test_the_function_length_counts_code_not_data(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        "def f():\n    x = {\n        'a': 1,\n        'b': 2,\n    }\n    return x\n\n\n@dec\ndef g():\n    pass\n"
    )
    assert function_lengths(f) == {"f:1": 2, "g:10": 3}


def test_no_test_asserts_on_a_measured_duration():
    """Speed is measured by the benchmark scripts in bench/, against Flink timed the same day,
    never by a test asserting on a clock: no test reads a CPU or interval timer (a deadline that
    stops waiting, as tests/browser.py's, reads time.monotonic and is allowed)."""
    timers = ("process_time(", "perf_counter(", "thread_time(")
    found = {
        p.name: [t for t in timers if t in p.read_text()]
        for p in sorted((ROOT / "tests").glob("*.py"))
        if p.name != Path(__file__).name
    }
    assert not {k: v for k, v in found.items() if v}, found
