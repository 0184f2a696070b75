"""The agent card (`/.well-known/agent-card.json`): the supervisor's name and description,
one skill per subagent from its description, streaming on, and the JSON-RPC interface at
the URL the request reached (so the card is right behind any host name or port).

By default the card is A2A 1.0 only: its JSON is the 1.0 schema's (protobuf JSON names,
no other field), which strict 1.0 validators require. `compat="0.3"` also lists the
0.3 interface and adds the 0.3 fields (`url`, `preferredTransport`, `protocolVersion`,
`security`, the 0.3 shape of each security scheme) for clients older than 1.0.
"""

from __future__ import annotations

from typing import Any, Literal

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, HTTPAuthSecurityScheme, SecurityScheme
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0, TransportProtocol
from google.protobuf.json_format import MessageToDict

__all__ = ["COMPAT_VERSIONS", "agent_card", "card_json"]

# the older protocol versions a card (and its endpoint) can also speak, on request
COMPAT_VERSIONS = ("0.3",)


def _skills(agent: Any) -> list[AgentSkill]:
    skills = []
    for key, sub in (getattr(agent, "agents", None) or {}).items():
        description = getattr(sub, "description", None) or f"The {key} subagent."
        skills.append(
            AgentSkill(id=str(key), name=str(getattr(sub, "id", key)), description=description, tags=["subagent"])
        )
    if not skills:
        skills.append(
            AgentSkill(id=agent.id, name=agent.id, description=agent.description or "Answers a prompt.", tags=["agent"])
        )
    return skills


def agent_card(
    agent: Any, url: str, *, token: bool = False, version: str = "1.0.0", compat: Literal["0.3"] | None = None
) -> AgentCard:
    """The card of `agent` (an `Agent` or `RemoteAgent`) whose JSON-RPC endpoint is `url`.

    `token=True` declares the bearer token the server's guard asks for (an HTTP `Bearer`
    scheme, required by the card's security requirements). `compat="0.3"` lists the 0.3
    interface after the 1.0 one.
    """
    if compat is not None and compat not in COMPAT_VERSIONS:
        raise ValueError(f"compat must be one of {', '.join(COMPAT_VERSIONS)} or None, not {compat!r}")
    protocols = (PROTOCOL_VERSION_1_0, PROTOCOL_VERSION_0_3) if compat == "0.3" else (PROTOCOL_VERSION_1_0,)
    card = AgentCard(
        name=agent.id,
        description=getattr(agent, "description", None) or f"The {agent.id} supervisor agent.",
        version=version,
        # 1.0 first (the preferred one); with compat, 0.3 too, which gives the 0.3 card its `url`
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=TransportProtocol.JSONRPC.value, protocol_version=protocol)
            for protocol in protocols
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=_skills(agent),
    )
    if token:
        card.security_schemes["bearer"].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer", description="The server's token: Authorization: Bearer <token>."
                )
            )
        )
        card.security_requirements.add().schemes["bearer"].SetInParent()
    return card


def card_json(card: AgentCard, compat: Literal["0.3"] | None = None) -> dict[str, Any]:
    """The card as served: its 1.0 JSON; with `compat="0.3"`, the 0.3 fields merged in."""
    return agent_card_to_dict(card) if compat == "0.3" else MessageToDict(card)
