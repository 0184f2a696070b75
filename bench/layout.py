"""The layout figures of issue 48, before and after: how the library's code is laid out
at each of a few commits, as one markdown table.

    python -m bench.layout [REF ...] [--detail]      # default: 17a052b HEAD

Each ref's library (`supervisor_graph/`, `nodes/`, `checkpointers/`) is read from
`git archive REF` in memory, so the checkout's own files do not matter. The two links
`supervisor_graph/nodes` and `supervisor_graph/checkpointers` come out of the archive
as links and are skipped: each module is counted once, under its top-level path, and
`supervisor_graph.nodes.x` / `nodes.x` name the same module. Standard library only.

What is measured, and how:

- A module is a `.py` file; its lines are its physical lines (`wc -l`, blank lines,
  comments and docstrings included).
- A function is every `def` / `async def`, methods and nested ones included; its length
  is `lineno..end_lineno` of the def (from the `def` line to its last line, decorators
  not counted).
- An import is every `import` / `from ... import` anywhere in a module (inside
  functions and `if TYPE_CHECKING:` too: either way the module knows the other).
  `from pkg import name` points at `pkg.name` when that is a module, else at `pkg`.
- Files per capability: the modules of each capability (`CAPABILITIES`, old and new
  homes alike) and how many other library modules import one of them.

`--detail` also lists each capability's modules and importers, and the modules over
440 lines.

Duplicate pairs come from the `duplicates` command, which this script does not call
(it is not on every machine). The recipe, per ref, for what issue 48 counts (library
code only, the links removed so nothing is read twice):

    d=$(mktemp -d)
    git archive REF supervisor_graph nodes checkpointers | tar -x -C "$d"
    rm "$d/supervisor_graph/nodes" "$d/supervisor_graph/checkpointers"
    duplicates --repo "$d" --most 60
    rm -rf "$d"

Pairs marked `boilerplate`, and pairs whose shared run is only imports, `__all__` or a
docstring, are not counted against the limit of 8.
"""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIBRARY = ("supervisor_graph", "nodes", "checkpointers")
DEFAULT_REFS = ("17a052b", "HEAD")
LONG_FUNCTION = 80  # the limit on a function
MODULE_LIMIT = 450  # ... and on a module
NEAR_LIMIT = 440  # a module this long is where commits start moving code only to fit
CROWDED = 430  # issue 48's "seven modules" near the limit at 17a052b are those of 430+ lines
LONGEST_SHOWN = 5

# Each capability's own modules, as path patterns (fnmatch: `*` crosses folders). Both
# layouts are listed: at 17a052b the capabilities were flat files in nodes/ (guards also
# in supervisor_graph/guardrails/); from issue 48 on they live in nodes/steps/,
# nodes/guards/ and nodes/background/. A pattern that matches nothing at a ref is inert,
# so one table serves every ref. The token counter is compaction's and the TypedDict
# rebuild structured output's (each is imported by that one step alone). Usage accounting
# had no module at 17a052b (the sums were in nodes/state.py, `step_finish` in
# nodes/supervisor.py, neither of them usage's alone); nodes/spent.py came after it.
CAPABILITIES: dict[str, tuple[str, ...]] = {
    "budget": ("nodes/budget.py", "nodes/steps/budget.py"),
    "compaction": ("nodes/compaction.py", "nodes/tokens.py", "nodes/steps/compaction.py", "nodes/steps/tokens.py"),
    "structured output": (
        "nodes/structured_output.py",
        "nodes/steps/structured_output.py",
        "nodes/steps/typed_dicts.py",
        "nodes/steps/output_schema.py",
    ),
    "working memory": ("nodes/working_memory.py", "nodes/steps/working_memory.py"),
    "guards/guardrails": ("nodes/guard*.py", "nodes/guards/*.py", "supervisor_graph/guardrails/*.py"),
    "decisions": ("nodes/decisions.py", "nodes/steps/decisions.py"),
    "usage accounting": ("nodes/spent.py", "nodes/steps/usage.py"),
    "background tasks": ("nodes/background*.py", "nodes/background/*.py", "supervisor_graph/background/*.py"),
}
# the links inside supervisor_graph: `supervisor_graph.nodes.x` is the module `nodes.x`
ALIASES = (("supervisor_graph.nodes", "nodes"), ("supervisor_graph.checkpointers", "checkpointers"))


@dataclass
class Module:
    path: str
    name: str
    lines: int
    imports: set[str] = field(default_factory=set)  # library modules, by name
    import_statements: list[str] = field(default_factory=list)  # one entry per statement naming a library module


@dataclass
class Function:
    path: str
    qualname: str
    length: int


@dataclass
class Tree:
    ref: str
    modules: dict[str, Module]  # by name
    functions: list[Function]

    def by_path(self) -> dict[str, Module]:
        return {m.path: m for m in self.modules.values()}


def read_library(ref: str, repo: Path = REPO) -> dict[str, str]:
    """The `.py` files of the library at `ref`, path -> text; links skipped."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, *LIBRARY], cwd=repo, capture_output=True, check=True
    ).stdout
    files: dict[str, str] = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".py"):
                handle = tar.extractfile(member)
                assert handle is not None
                files[member.name] = handle.read().decode("utf-8")
    return files


def module_name(path: str) -> str:
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def canonical(name: str) -> str:
    for alias, real in ALIASES:
        if name == alias or name.startswith(alias + "."):
            return real + name[len(alias) :]
    return name


def _longest_known(name: str, known: Iterable[str]) -> str | None:
    names = set(known)
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in names:
            return candidate
    return None


def _imports_of(module: Module, tree: ast.Module, known: set[str], is_package: bool) -> None:
    for node in ast.walk(tree):
        targets: set[str] = set()
        if isinstance(node, ast.Import):
            for alias in node.names:
                hit = _longest_known(canonical(alias.name), known)
                if hit:
                    targets.add(hit)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = module.name.split(".") if is_package else module.name.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            base = canonical(base)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                hit = sub if sub in known else _longest_known(base, known)
                if hit:
                    targets.add(hit)
        targets.discard(module.name)
        if targets:
            module.imports |= targets
            module.import_statements.extend(sorted(targets))


def _functions_of(path: str, tree: ast.Module) -> list[Function]:
    found: list[Function] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                qualname = prefix + child.name
                end = child.end_lineno or child.lineno
                found.append(Function(path, qualname, end - child.lineno + 1))
                visit(child, qualname + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def measure(ref: str, repo: Path = REPO) -> Tree:
    files = read_library(ref, repo)
    modules = {module_name(p): Module(p, module_name(p), len(text.splitlines())) for p, text in files.items()}
    known = set(modules)
    functions: list[Function] = []
    for module in modules.values():
        parsed = ast.parse(files[module.path], filename=module.path)
        _imports_of(module, parsed, known, module.path.endswith("__init__.py"))
        functions.extend(_functions_of(module.path, parsed))
    return Tree(ref, modules, functions)


def capability_modules(tree: Tree, capability: str) -> list[str]:
    patterns = CAPABILITIES[capability]
    return sorted(m.name for m in tree.modules.values() if any(fnmatch(m.path, p) for p in patterns))


def importers(tree: Tree, own: list[str]) -> list[str]:
    owned = set(own)
    return sorted(m.name for m in tree.modules.values() if m.name not in owned and m.imports & owned)


def _in_nodes(module: Module) -> bool:
    return module.path.startswith("nodes/")


def _capability_of(tree: Tree, name: str) -> str | None:
    path = tree.modules[name].path
    return next((c for c, patterns in CAPABILITIES.items() if any(fnmatch(path, p) for p in patterns)), None)


def rows(tree: Tree) -> dict[str, str]:
    """One ref's column: row label -> cell."""
    mods = list(tree.modules.values())
    nodes = [m for m in mods if _in_nodes(m)]
    top = [m for m in nodes if m.path.count("/") == 1]
    folders = {m.path.split("/")[1] for m in nodes if m.path.count("/") > 1}
    col: dict[str, str] = {
        "modules directly in nodes/ (with `__init__`)": str(len(top)),
        "folders in nodes/": f"{len(folders)}" + (f" ({', '.join(sorted(folders))})" if folders else ""),
        "nodes/ modules, lines": f"{len(nodes)}, {sum(m.lines for m in nodes):,}",
        "library modules, lines": f"{len(mods)}, {sum(m.lines for m in mods):,}",
    }
    long = sorted(
        (f for f in tree.functions if f.length > LONG_FUNCTION), key=lambda f: (-f.length, f.path, f.qualname)
    )
    col[f"functions over {LONG_FUNCTION} lines"] = str(len(long))
    ranked = sorted(tree.functions, key=lambda f: (-f.length, f.path, f.qualname))
    for i in range(LONGEST_SHOWN):
        f = ranked[i] if i < len(ranked) else None
        col[f"longest function #{i + 1}"] = f"{f.length} `{f.path}:{f.qualname}`" if f else "-"
    col[f"modules over {NEAR_LIMIT} lines"] = str(sum(m.lines > NEAR_LIMIT for m in mods))
    col[f"modules within 5 lines of {MODULE_LIMIT} (445-450)"] = str(
        sum(MODULE_LIMIT - 5 <= m.lines <= MODULE_LIMIT for m in mods)
    )
    col[f"modules of {CROWDED}+ lines"] = str(sum(m.lines >= CROWDED for m in mods))
    col[f"modules over {MODULE_LIMIT} lines"] = str(sum(m.lines > MODULE_LIMIT for m in mods))
    longest = max(mods, key=lambda m: (m.lines, m.path))
    col["longest module"] = f"{longest.lines} `{longest.path}`"
    for capability in CAPABILITIES:
        own = capability_modules(tree, capability)
        label = f"{capability}: own modules / importers"
        col[label] = f"{len(own)} / {len(importers(tree, own))}" if own else "no module"
    names = {m.name for m in nodes}
    edges = {(m.name, t) for m in nodes for t in m.imports if t in names}
    statements = sum(1 for m in nodes for t in m.import_statements if t in names)
    col["imports among nodes/ modules: distinct edges"] = str(len(edges))
    col["imports among nodes/ modules: (statement, module) pairs"] = str(statements)
    for core in ("nodes.spec", "nodes.options"):
        module = tree.modules.get(core)
        if module is None:
            col[f"`{core}` imports capability modules"] = "-"
            continue
        caps = sorted(t for t in module.imports if _capability_of(tree, t))
        short = [t.removeprefix("nodes.") for t in caps]
        col[f"`{core}` imports capability modules"] = f"{len(caps)}" + (f" ({', '.join(short)})" if short else "")
        others = sorted(t.removeprefix("nodes.") for t in module.imports if t in names and t not in caps)
        col[f"`{core}` imports other nodes/ modules"] = f"{len(others)}" + (f" ({', '.join(others)})" if others else "")
    return col


def table(trees: list[Tree]) -> str:
    columns = [rows(t) for t in trees]
    labels = list(columns[0])
    for col in columns[1:]:
        labels += [label for label in col if label not in labels]
    out = ["| figure | " + " | ".join(f"`{t.ref}`" for t in trees) + " |", "|---" * (len(trees) + 1) + "|"]
    out += [f"| {label} | " + " | ".join(col.get(label, "-") for col in columns) + " |" for label in labels]
    return "\n".join(out)


def detail(tree: Tree) -> str:
    out = [f"### `{tree.ref}`"]
    for capability in CAPABILITIES:
        own = capability_modules(tree, capability)
        out.append(f"- {capability}: own {', '.join(own) or '-'}; imported by {', '.join(importers(tree, own)) or '-'}")
    near = sorted((m for m in tree.modules.values() if m.lines > NEAR_LIMIT), key=lambda m: -m.lines)
    out.append(f"- modules over {NEAR_LIMIT} lines: " + (", ".join(f"{m.path} {m.lines}" for m in near) or "-"))
    long = sorted((f for f in tree.functions if f.length > LONG_FUNCTION), key=lambda f: -f.length)
    out.append(
        f"- functions over {LONG_FUNCTION} lines: "
        + (", ".join(f"{f.path}:{f.qualname} {f.length}" for f in long) or "-")
    )
    return "\n".join(out)


def short_ref(ref: str, repo: Path = REPO) -> str:
    sha = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    return ref if sha.startswith(ref) else f"{ref} ({sha})"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    show_detail = "--detail" in args
    refs = [a for a in args if a != "--detail"] or list(DEFAULT_REFS)
    trees = [measure(ref) for ref in refs]
    for tree in trees:
        tree.ref = short_ref(tree.ref)
    print(table(trees))
    if show_detail:
        for tree in trees:
            print()
            print(detail(tree))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
