"""The layout's one rule: ``udfs/`` (the pure per-batch computation) depends on neither
``pipeline/`` (the Spark side) nor pyspark; ``pipeline/`` depends on ``udfs/``, never the
other way. Checked twice: in the source (every import statement, also inside functions) and
at run time (importing each module in a fresh interpreter loads neither)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# every module under udfs/, subpackages included (udfs/savepoint/...), as a dotted path below udfs
UDF_MODULES = sorted(
    ".".join(p.relative_to(ROOT / "udfs").with_suffix("").parts)
    for p in (ROOT / "udfs").rglob("*.py")
    if p.stem != "__init__"
)
FORBIDDEN = ("pyspark", "pipeline")


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_udfs_modules_are_found():
    assert {"spec_contract", "flink_profiles", "graph_batch", "chaining_rules", "hash_layers"} <= set(UDF_MODULES)
    assert {"savepoint.state_meta", "savepoint.serializer_snapshots"} <= set(UDF_MODULES)


@pytest.mark.parametrize("module", UDF_MODULES)
def test_no_udfs_source_imports_pyspark_or_pipeline(module):
    roots = _imported_roots(ROOT / "udfs" / f"{module.replace('.', '/')}.py")
    assert not roots & set(FORBIDDEN), f"udfs/{module}.py imports {sorted(roots & set(FORBIDDEN))}"


def test_importing_any_udfs_module_loads_neither_pyspark_nor_pipeline():
    """All modules in one fresh interpreter, each checked right after its own import."""
    code = (
        "import importlib, sys\n"
        f"for m in {UDF_MODULES!r}:\n"
        "    importlib.import_module('udfs.' + m)\n"
        f"    bad = sorted(k for k in sys.modules if k.split('.')[0] in {FORBIDDEN!r})\n"
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
    assert _imported_roots(f) >= {"pipeline", "pyspark"}
