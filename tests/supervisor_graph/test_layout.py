"""The house by concern (docs/architecture.md): the public names of this release, imports
that point one way with no circle, and modules small enough to read.

Imports are read from the source, not from `sys.modules`: an import inside a function
counts like one at the top (it runs on the first call), an import under
`if TYPE_CHECKING:` does not (it never runs). Importing `a.b.c` also runs `a.b`'s
`__init__`, so that `__init__` counts as imported by modules outside `a.b`."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import supervisor_graph

ROOT = Path(__file__).resolve().parents[2]

# supervisor_graph.__all__ of release 0.1 (issue 27: the restructure changes no public name), and the
# names later issues add (A2AAgent: issue 31; StorageUnavailableError: issue 46; InheritContext: issue 51)
PUBLIC_NAMES = {
    "A2AAgent", "AbortController", "AbortSignal", "Agent", "AgentDefinition", "AgentStream", "AgentVersion", "Budget",
    "DELEGATION_HOOK_ERRORS", "DelegationCompleteContext", "DelegationCompleteResult", "DelegationOptions",
    "DelegationResult", "DelegationStartContext", "DelegationStartResult", "FinishChunk", "GenerateResult", "StructuredOutputError",
    "IterationContext", "IterationResult", "Memory", "MemoryOptions", "MissingAPIKeyError", "ModelCallError",
    "NothingPendingError", "PendingApprovalError", "PendingItem", "RESOURCE_ID_KEY", "RUN_ID_KEY", "RemoteAgent",
    "RequestContext", "RunContext", "RunOptions", "Score", "ScoringContext", "StreamChunk", "SupervisorGraphError",
    "SupervisorState", "THREAD_ID_KEY", "TaskCompleteResult", "ThreadBusyError", "ThreadRecord", "ToolCallInfo",
    "Usage", "VERSIONS_KEY", "VersionSelection", "WorkingMemory", "WorkingMemoryError", "compile_agent",
    "create_rubric_scorer", "create_scorer", "create_tool", "current_request_context", "current_tool_call", "suspend",
    "StorageUnavailableError", "InheritContext",
}  # fmt: skip

# Top to bottom: a module may import its own layer and the layers below it, never above.
LAYERS: list[set[str]] = [
    {"bench"},
    {"supervisor_graph.cli"},
    {
        "supervisor_graph.agui", "supervisor_graph.a2a", "supervisor_graph.examples", "supervisor_graph.mcp",
        "supervisor_graph.evals",
    },
    {"supervisor_graph"},  # the public surface: re-exports only
    {"supervisor_graph.agent"},
    {"supervisor_graph.run"},
    {"supervisor_graph.compiler"},
    {"supervisor_graph.background"},
    {"supervisor_graph.memory"},
    {"supervisor_graph.declaration", "supervisor_graph.testing", "supervisor_graph.guardrails"},
    {"supervisor_graph.sync_loop"},
    {"supervisor_graph.nodes"},
    {"supervisor_graph.checkpointers"},
]
MAX_LINES = 450


def _sources() -> dict[str, Path]:
    """Module name -> file, for the three source folders (as installed) and bench/."""
    modules = {}
    for folder, package in (
        ("supervisor_graph", "supervisor_graph"),
        ("nodes", "supervisor_graph.nodes"),
        ("checkpointers", "supervisor_graph.checkpointers"),
        ("bench", "bench"),
    ):
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if folder == "supervisor_graph" and parts[0] in ("nodes", "checkpointers"):
                continue  # the symlinks to the top-level folders
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(module: str, path: Path) -> Iterator[str]:
    """Every module name an import statement of `module` may load (TYPE_CHECKING aside)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(node: ast.AST) -> Iterator[str]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    yield from visit(other)
                continue
            if isinstance(child, ast.Import):
                yield from (alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - child.level + 1] + ([child.module] if child.module else []))
                yield base
                yield from (f"{base}.{alias.name}" for alias in child.names)
            yield from visit(child)

    yield from visit(ast.parse(path.read_text(encoding="utf-8")))


def _graph() -> dict[str, set[str]]:
    """Module -> the house's modules it imports (the nearest known name of each import)."""
    modules = _sources()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        edges = set()
        for name in _imported(module, path):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                edges.add(name)
        # importing a.b.c first runs a.b's __init__: an edge to it too, unless the importer
        # lives in a.b (a package's __init__ re-exporting its own modules is no circle).
        # The root's __init__ is the public surface: importing it is the user's entry.
        for name in list(edges):
            parts = name.split(".")
            edges.update(
                package
                for package in (".".join(parts[:i]) for i in range(2, len(parts)))
                if not module.startswith(package + ".")
            )
        graph[module] = {name for name in edges if name != module and name in modules}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _layer(module: str) -> int:
    """The layer of the most specific name that holds `module`."""
    best, depth = -1, -1
    for level, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and name.count(".") > depth:
                best, depth = level, name.count(".")
    assert best >= 0, f"{module} is in no layer of LAYERS: add it"
    return best


def test_the_public_names_are_those_of_the_release() -> None:
    assert set(supervisor_graph.__all__) == PUBLIC_NAMES
    assert len(supervisor_graph.__all__) == len(PUBLIC_NAMES)  # no name listed twice
    missing = [name for name in PUBLIC_NAMES if not hasattr(supervisor_graph, name)]
    assert not missing


def test_no_import_circle_in_the_house() -> None:
    assert _circles(_graph()) == []


def test_the_circle_check_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_imports_point_down_the_layers() -> None:
    upward = [
        f"{module} imports {name}"
        for module, names in _graph().items()
        for name in names
        if _layer(name) < _layer(module)
    ]
    assert upward == []


def test_no_module_is_longer_than_it_can_be_read() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for module, path in _sources().items()
        if not module.startswith(("bench", "supervisor_graph.examples"))
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_every_package_says_what_it_holds_and_may_import() -> None:
    silent = []
    for module, path in _sources().items():
        if path.name != "__init__.py" or module in ("bench", "supervisor_graph"):
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if not any(word in doc.lower() for word in ("imports ", "import nothing", "imports nothing")):
            silent.append(module)
    assert silent == []


def test_nodes_is_rooms_by_concern_with_few_modules_at_its_top() -> None:
    """SPEC §32: the room of a behaviour is found from folder names, so at most six
    modules sit directly in `nodes/` (the ones every room shares)."""
    top = sorted(p.name for p in (ROOT / "nodes").glob("*.py"))
    assert len(top) <= 6, top
    rooms = sorted(p.name for p in (ROOT / "nodes").iterdir() if (p / "__init__.py").is_file())
    assert {"turn", "steps", "guards", "delegation"} <= set(rooms), rooms
