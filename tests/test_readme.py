"""README is for users and stays true: the module tree it links (docs/modules.md) lists every
module of pipeline/ and udfs/ (and nothing that is not there), its conformance table is the one the results in
conformance/results/ give, its two commands are the Makefile's, and it tells no history (no
commit hashes, no issue numbers): that lives in docs/."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
MODULES = (ROOT / "docs" / "modules.md").read_text()


def _tree() -> list[str]:
    """The paths docs/modules.md's tree names (indentation = folder nesting)."""
    assert "(docs/modules.md)" in README.split("## How it works", 1)[1].split("\n## ", 1)[0]
    block = MODULES.split("```", 2)[1]
    stack: list[tuple[int, str]] = []
    paths = []
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        name = line.split()[0]
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "".join(p for _, p in stack) + name
        if name.endswith("/"):
            stack.append((indent, name))
        paths.append(path)
    return paths


def test_the_tree_lists_every_module_and_only_modules_that_exist():
    listed = {p for p in _tree() if p.endswith(".py")}
    actual = {p.relative_to(ROOT).as_posix() for pkg in ("pipeline", "udfs") for p in (ROOT / pkg).rglob("*.py")
              if p.name != "__init__.py"}  # fmt: skip
    assert actual - listed == set(), f"modules missing from docs/modules.md: {sorted(actual - listed)}"
    assert listed - actual == set(), f"docs/modules.md lists modules that do not exist: {sorted(listed - actual)}"


def test_the_conformance_table_is_the_results():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "conformance_table.py")], capture_output=True,
                         text=True, check=True).stdout.strip()  # fmt: skip
    assert out in README


def test_the_two_commands_and_ci():
    assert "make demo" in README and "make test" in README
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_readme_is_a_guide_not_a_diary():
    assert len(README.splitlines()) <= 330  # a user's guide of about 300 lines
    assert not re.search(r"\bissues? \d+", README, re.I)
    hashes = [h for h in re.findall(r"(?<![0-9a-zA-Z-])[0-9a-f]{7,12}(?![0-9a-zA-Z])", README) if re.search(r"\d", h)
              and re.search(r"[a-f]", h)]  # fmt: skip
    assert not hashes, f"commit hashes in README: {hashes}"


def test_the_example_queries_are_counted_and_numbered():
    """README's count of jobs/example_queries.sql is the file's, numbered 1..N without a gap."""
    numbers = [int(n) for n in re.findall(r"^-- (\d+)\. ", (ROOT / "jobs" / "example_queries.sql").read_text(), re.M)]
    assert numbers == list(range(1, len(numbers) + 1)), numbers
    assert f"`jobs/example_queries.sql` holds {len(numbers)} queries" in README


_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(md: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (lower case, punctuation dropped, spaces -> -)."""
    heads = re.findall(r"^#+\s+(.+?)\s*$", re.sub(r"```.*?```", "", md.read_text(), flags=re.S), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def test_every_relative_link_in_readme_and_docs_resolves():
    """A link to a file of the repository (or one of its headings), from README.md or docs/*.md,
    names a path that exists, relative to the file that holds the link."""
    broken = []
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = re.sub(r"```.*?```", "", md.read_text(), flags=re.S)  # code blocks are not links
        for target in _LINK.findall(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                continue
            path, _, anchor = target.partition("#")
            dest = (md.parent / path) if path else md
            if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in _anchors(dest)):
                broken.append(f"{md.relative_to(ROOT)}: {target}")
    assert not broken, broken
