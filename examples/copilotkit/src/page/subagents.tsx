// supervisor-graph served with `--subagents attributed` announces each delegation with
// SUBAGENT_STARTED (its subagentRunId, the subagent's name, parentToolCallId: the
// `agent-<key>` call that launched it), tags the subagent's own messages with that
// subagentRunId, and ends it with SUBAGENT_FINISHED or SUBAGENT_ERROR. This keeps those
// events by the launching tool call, so a delegation's card can show who works on it,
// how it ended and what it is writing, while the chat itself shows the supervisor only.
import { createContext, useContext, useEffect, useState, type ReactNode } from "react";

import { CopilotChatAssistantMessage, useAgent, type CopilotChatAssistantMessageProps } from "@copilotkit/react-core/v2";

export interface Subagent {
  runId: string;
  name: string;
  state: "working" | "done" | "waiting" | "failed";
  error?: string;
}

const Subagents = createContext<Record<string, Subagent>>({});

export function SubagentsProvider({ agentId, children }: { agentId: string; children: ReactNode }) {
  const { agent, isReady } = useAgent({ agentId, updates: [] });
  const [byToolCall, setByToolCall] = useState<Record<string, Subagent>>({});
  useEffect(() => {
    if (!isReady) return; // a stand-in until the runtime has answered: its events never come
    const update = (runId: string, change: Partial<Subagent>) =>
      setByToolCall((now) => {
        const entry = Object.entries(now).find(([, s]) => s.runId === runId);
        return entry ? { ...now, [entry[0]]: { ...entry[1], ...change } } : now;
      });
    const { unsubscribe } = agent.subscribe({
      onSubagentStartedEvent: ({ event }) => {
        const { subagentRunId, name, parentToolCallId } = event;
        if (parentToolCallId) {
          setByToolCall((now) => ({ ...now, [parentToolCallId]: { runId: subagentRunId, name, state: "working" } }));
        }
      },
      onSubagentFinishedEvent: ({ event }) =>
        update(event.subagentRunId, { state: event.outcome?.type === "suspended" ? "waiting" : "done" }),
      onSubagentErrorEvent: ({ event }) => update(event.subagentRunId, { state: "failed", error: event.message }),
    });
    return unsubscribe;
  }, [agent, isReady]);
  return <Subagents.Provider value={byToolCall}>{children}</Subagents.Provider>;
}

/** The subagent a delegation (`agent-<key>` tool call) started, once announced. */
export function useSubagent(toolCallId: string): Subagent | undefined {
  return useContext(Subagents)[toolCallId];
}

/** The text a subagent has written so far (its messages carry its subagentRunId). */
export function useSubagentText(agentId: string, runId: string | undefined): string {
  const { agent } = useAgent({ agentId });
  if (!runId) return "";
  return agent.messages
    .filter((m) => m.subagentRunId === runId && m.role === "assistant" && typeof m.content === "string")
    .map((m) => m.content as string)
    .join("\n\n");
}

/** The chat's assistant messages, without the subagents' own: their delegation card shows them. */
function SupervisorMessageView(props: CopilotChatAssistantMessageProps) {
  if (props.message.subagentRunId) return null;
  return <CopilotChatAssistantMessage {...props} />;
}

// The slot's type asks for the default component's sub-components (Toolbar, ...) as
// statics; the default rendering below uses them, so they are borrowed as they are.
export const SupervisorMessage = Object.assign(SupervisorMessageView, CopilotChatAssistantMessage);
