"""The agent card (`/.well-known/agent-card.json`): the supervisor's name and description,
one skill per subagent from its description, streaming on, and the JSON-RPC interface at
the URL the request reached (so the card is right behind any host name or port)."""

from __future__ import annotations

from typing import Any

from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, HTTPAuthSecurityScheme, SecurityScheme
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0, TransportProtocol

__all__ = ["agent_card"]


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


def agent_card(agent: Any, url: str, *, token: bool = False, version: str = "1.0.0") -> AgentCard:
    """The card of `agent` (an `Agent` or `RemoteAgent`) whose JSON-RPC endpoint is `url`.

    `token=True` declares the bearer token the server's guard asks for.
    """
    card = AgentCard(
        name=agent.id,
        description=getattr(agent, "description", None) or f"The {agent.id} supervisor agent.",
        version=version,
        # 1.0 first; 0.3 too (the endpoint speaks both), which also gives the card its 0.3 `url`
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=TransportProtocol.JSONRPC.value, protocol_version=version_)
            for version_ in (PROTOCOL_VERSION_1_0, PROTOCOL_VERSION_0_3)
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=_skills(agent),
    )
    if token:
        card.security_schemes["bearer"].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        )
        card.security_requirements.add().schemes["bearer"].SetInParent()
    return card
