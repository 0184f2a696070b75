"""Finding the agent a command names: TARGET is `package.module:attr` or
`path/to/file.py:attr`, and `load_agent` imports it or says in one line why not."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from supervisor_graph.agent import Agent
from supervisor_graph.cli.output import one_line
from supervisor_graph.declaration.errors import CLIError

__all__ = ["load_agent"]


def load_agent(target: str) -> Agent:
    """The `Agent` that `module:attr` or `path/to/file.py:attr` names."""
    source, sep, attr = target.rpartition(":")
    if not sep or not source or not attr:
        raise CLIError(f"target {target!r} must look like module:attr or path/to/file.py:attr")
    if source.endswith(".py") or "/" in source or os.sep in source:
        module = _import_file(Path(source))
    else:
        module = _import_module(source)
    agents = sorted(name for name, value in vars(module).items() if isinstance(value, Agent))
    hint = f" (agents defined there: {', '.join(agents)})" if agents else ""
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CLIError(f"{source!r} has no attribute {attr!r}{hint}")
        obj = getattr(obj, part)
    if not isinstance(obj, Agent):
        raise CLIError(f"{target!r} is not a supervisor_graph.Agent but a {type(obj).__name__} object{hint}")
    return obj


def _import_module(name: str) -> ModuleType:
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # console scripts do not see the working directory
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise CLIError(
                f"cannot import {name!r}: no module named {exc.name!r} (check the name and the working directory)"
            ) from None
        raise CLIError(f"importing {name!r} failed: {one_line(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - the user's module raised while importing
        raise CLIError(f"importing {name!r} failed: {one_line(exc)}") from None


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise CLIError(f"file {str(path)!r} not found")
    name = "_sg_target_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CLIError(f"cannot load {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.resolve().parent))  # so the file can import its neighbours
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001
        raise CLIError(f"importing {str(path)!r} failed: {one_line(exc)}") from None
    return module
