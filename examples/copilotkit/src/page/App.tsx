import { CopilotChat, CopilotKitProvider, useAgent, useInterrupt, useRenderTool } from "@copilotkit/react-core/v2";

import { AGENT_ID, RUNTIME_PATH } from "../agent";
import { ApprovalCard } from "./ApprovalCard";
import { SubagentsProvider, SupervisorMessage } from "./subagents";
import { ToolCallCard } from "./ToolCallCard";

export function App() {
  return (
    // The inspector is a development aid that loads its own bundle; this page stays lean.
    <CopilotKitProvider runtimeUrl={RUNTIME_PATH} enableInspector={false}>
      <SubagentsProvider agentId={AGENT_ID}>
        <Chat />
      </SubagentsProvider>
    </CopilotKitProvider>
  );
}

function Chat() {
  // Until the runtime's /info answers, useAgent hands out a stand-in agent; say so.
  const { isReady } = useAgent({ agentId: AGENT_ID, updates: [] });
  // Every tool call the agent makes, delegations (`agent-<key>`) included: CopilotKit
  // shows nothing for a tool call without a renderer.
  useRenderTool({ name: "*", render: ToolCallCard }, []);
  // supervisor-graph pauses on a tool that needs approval with an AG-UI interrupt
  // (RUN_FINISHED outcome "interrupt"); the card answers it with a resume entry.
  useInterrupt({
    agentId: AGENT_ID,
    render: ({ interrupt, resolve, cancel }) => (
      <ApprovalCard key={interrupt?.id} interrupt={interrupt} resolve={resolve} cancel={cancel} />
    ),
  });
  return (
    <main className="sg-page" data-agent-ready={isReady}>
      <header>
        <h1>supervisor-graph × CopilotKit</h1>
        <p>
          <span data-testid="connection">{isReady ? `connected to ${AGENT_ID}` : "connecting to the runtime…"}</span> · Ask:{" "}
          <q>Research bees, write a short article and publish it.</q>
        </p>
      </header>
      {/* Without agentId the chat asks the runtime for "default" and gets "Agent 'default' not found". */}
      <CopilotChat agentId={AGENT_ID} className="sg-chat" messageView={{ assistantMessage: SupervisorMessage }} />
    </main>
  );
}
