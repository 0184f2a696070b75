"""Answering a paused run's pending items: asking at the terminal (approve / edit the
arguments / reject with a reason / show the arguments, as the tool allows; JSON resume
data for a suspended tool), or `--approve-all` / `--decline-all` for scripts, and the
flags that choose between them."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text

from supervisor_graph.cli.output import PROG, short
from supervisor_graph.run.facade import GenerateResult, PendingItem

__all__ = ["Answerer", "add_answer_flags", "answerer_for", "answers_for"]


class Answerer:
    """Answers a paused run's pending items: asks at the terminal, or applies
    `--approve-all` / `--decline-all`; None means nobody can answer."""

    def __init__(
        self, console: Console, *, interactive: bool, approve_all: bool | None = None, json_lines: bool = False
    ) -> None:
        self.console = console
        self.interactive = interactive
        self.approve_all = approve_all
        self.json_lines = json_lines
        self.check: Callable[[PendingItem, Any], Any] | None = None
        """Checks an answer before it is sent (raises `ValueError` saying what is wrong):
        edited arguments are asked again until the tool's input schema takes them."""

    def can_answer(self, items: list[PendingItem]) -> bool:
        return self.interactive or all(i.kind == "approval" and self.approve_all is not None for i in items)

    def answer(self, item: PendingItem) -> Any:
        if item.kind == "approval" and self.approve_all is not None:
            word = "approved" if self.approve_all else "declined"
            if self.json_lines:  # stdout is for chunks
                print(f"{PROG}: {word} {item.tool_name} (interrupt {item.interrupt_id})", file=sys.stderr)
            else:
                self._decided(item, self.approve_all, f" (--{word[:-1]}-all)")
            return {"approved": self.approve_all}
        if item.kind == "approval":
            return self._ask_approval(item)
        return self._ask_resume_data(item)

    def _where(self, item: PendingItem, args: bool = False) -> Text:
        shown = f" {short(json.dumps(item.args, ensure_ascii=False), 60)}" if args and item.args else ""
        return Text.assemble(
            (str(item.tool_name), "bold magenta"), shown, " (called by ", (item.agent_path[-1], "cyan"), ")"
        )

    def _ask_approval(self, item: PendingItem) -> dict[str, Any]:
        allowed = item.allowed_decisions or ["approve", "edit", "reject"]
        options = [(k, label, meaning) for k, label, meaning, decision in _OPTIONS if decision in allowed or k == "a"]
        if item.description:
            self.console.print(Text.assemble("  ", (item.description, "italic")))
        question = Text.assemble("approve ", self._where(item, args=True), "? ", " / ".join(o[1] for o in options), ": ")
        while True:
            reply = self.console.input(question).strip().lower()
            if reply in ("y", "yes") and "approve" in allowed:
                self._decided(item, True)
                return {"approved": True}
            if reply in ("n", "no") and "reject" in allowed:
                reason = self.console.input(Text("  reason, for the agent (Enter for none): ")).strip()
                self._decided(item, False)
                return {"approved": False, **({"message": reason} if reason else {})}
            if reply in ("e", "edit") and "edit" in allowed:
                edited = self._ask_edit(item)
                if edited is not None:
                    self._decided(item, True, f" with {short(json.dumps(edited, ensure_ascii=False), 60)}")
                    return {"approved": True, "args": edited}
            elif reply in ("a", "args", "s", "show"):
                self._show_args(item.args)
            else:
                said = ", ".join(f"{k} ({meaning})" for k, _, meaning in options)
                self.console.print(f"  answer {said}", markup=False, highlight=False)

    def _ask_edit(self, item: PendingItem) -> dict[str, Any] | None:
        """Arguments typed as JSON, asked again until they parse and the tool takes them;
        None (an empty line) goes back to the question."""
        self.console.print(
            Text.assemble("  now: ", json.dumps(item.args, ensure_ascii=False, default=str)), markup=False, highlight=False
        )
        while True:
            reply = self.console.input(Text("  new arguments (JSON object, Enter to go back): ")).strip()
            if not reply:
                return None
            try:
                args = json.loads(reply)
            except json.JSONDecodeError as exc:
                self.console.print(f"  not JSON ({exc.msg}); try again", markup=False, highlight=False)
                continue
            try:
                if not isinstance(args, dict):
                    raise ValueError(f"the arguments must be a JSON object, not {type(args).__name__}")
                if self.check is not None:
                    self.check(item, {"approved": True, "args": args})
            except ValueError as exc:
                self.console.print(f"  {exc}; try again", markup=False, highlight=False)
                continue
            return args

    def _ask_resume_data(self, item: PendingItem) -> Any:
        self.console.print(Text.assemble(self._where(item), (" is suspended", "yellow"), " and asks:"))
        self._show(item.payload)
        while True:
            reply = self.console.input(Text("resume data (JSON): "))
            try:
                return json.loads(reply)
            except json.JSONDecodeError as exc:
                self.console.print(f"  not JSON ({exc.msg}); try again", markup=False, highlight=False)

    def _decided(self, item: PendingItem, approved: bool, how: str = "") -> None:
        word = ("approved", "green") if approved else ("declined", "red")
        self.console.print(Text.assemble("  ", (str(item.tool_name), "magenta"), " ", word, how))

    def _show_args(self, args: dict[str, Any]) -> None:
        """Each argument on its own; multi-line text as it reads, not as a JSON string."""
        for key, value in args.items():
            if isinstance(value, str) and "\n" in value:
                self.console.print(Text.assemble("  ", (key, "bold"), ":"))
                self.console.print(Text(value), style="dim", markup=False, highlight=False)
            else:
                shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
                self.console.print(Text.assemble("  ", (key, "bold"), ": ", shown))

    def _show(self, value: Any) -> None:
        self.console.print(json.dumps(value, indent=2, ensure_ascii=False, default=str), markup=False, highlight=False)


# (key, shown in the question, meaning, the decision it makes)
_OPTIONS = (
    ("y", "[y]es", "approve", "approve"),
    ("e", "[e]dit", "edit the arguments", "edit"),
    ("n", "[n]o", "reject, with a reason", "reject"),
    ("a", "[a]rgs", "show the arguments", ""),
)


def answers_for(result: GenerateResult, answerer: Answerer, known: dict[str, Any]) -> dict[str, Any] | None:
    """An answer per pending item (by interrupt id), or None when they cannot all be
    answered; items already in `known` are not asked again."""
    if not answerer.can_answer(result.suspended):
        return None
    answers = {}
    for item in result.suspended:
        key = item.interrupt_id or item.tool_call_id or ""
        answers[key] = known[key] if key in known else answerer.answer(item)
    return answers


def answerer_for(args: argparse.Namespace, console: Console) -> Answerer:
    approve_all = True if args.approve_all else False if args.decline_all else None
    interactive = not getattr(args, "json", False) and sys.stdin.isatty() and console.is_terminal
    return Answerer(
        console, interactive=interactive, approve_all=approve_all, json_lines=getattr(args, "json", False)
    )


def add_answer_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--approve-all", action="store_true", help="approve every tool call that needs approval")
    group.add_argument("--decline-all", action="store_true", help="decline every tool call that needs approval")
