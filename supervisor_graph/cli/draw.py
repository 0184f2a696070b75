"""`supervisor-graph draw TARGET`: the agent's compiled graph as Mermaid text, or as a
PNG with whichever local renderer is installed (pygraphviz, else pyppeteer)."""

from __future__ import annotations

import argparse
import importlib.util

from supervisor_graph.cli.output import PROG, one_line, print_error
from supervisor_graph.cli.target import load_agent
from supervisor_graph.compiler.build import compile_agent
from supervisor_graph.declaration.errors import CLIError

__all__ = ["cmd_draw"]


def cmd_draw(args: argparse.Namespace) -> int:
    # drawing calls no model: no credentials needed
    graph = compile_agent(load_agent(args.target), check_models=False).get_graph()
    if args.png is None:
        print(graph.draw_mermaid())
        return 0
    if importlib.util.find_spec("pygraphviz") is not None:
        graph.draw_png(args.png)
    elif importlib.util.find_spec("pyppeteer") is not None:
        from langchain_core.runnables.graph import MermaidDrawMethod

        try:
            graph.draw_mermaid_png(output_file_path=args.png, draw_method=MermaidDrawMethod.PYPPETEER)
        except Exception as exc:  # noqa: BLE001 - e.g. no browser for pyppeteer
            print_error(f"pyppeteer could not render the graph: {one_line(exc)}")
            return 1
    else:
        raise CLIError(
            "--png needs a local renderer: pip install pygraphviz (with Graphviz, e.g. apt-get install graphviz "
            f"libgraphviz-dev) or pyppeteer; or drop --png: `{PROG} draw {args.target}` prints Mermaid text"
        )
    print(f"wrote {args.png}")
    return 0
