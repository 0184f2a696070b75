// One card per tool call. A call to `agent-<key>` is a delegation to the subagent
// registered under <key>: its card shows as soon as the supervisor makes the call
// (TOOL_CALL_START), then the subagent working (SUBAGENT_STARTED, its streamed text),
// then its answer (TOOL_CALL_RESULT).
import { AGENT_ID } from "../agent";
import { useSubagent, useSubagentText } from "./subagents";

type Status = "inProgress" | "executing" | "complete";

interface ToolCallProps {
  name: string;
  toolCallId: string;
  parameters: unknown;
  status: Status;
  result: string | undefined;
}

const DELEGATION = "agent-";

export function ToolCallCard(props: ToolCallProps) {
  return props.name.startsWith(DELEGATION) ? <DelegationCard {...props} /> : <PlainToolCard {...props} />;
}

function DelegationCard({ name, toolCallId, parameters, status, result }: ToolCallProps) {
  const key = name.slice(DELEGATION.length);
  const subagent = useSubagent(toolCallId);
  const text = useSubagentText(AGENT_ID, subagent?.runId);
  const prompt = (parameters as { prompt?: unknown } | null)?.prompt;
  // The tool result is what the supervisor got back; the subagent's events say more
  // (waiting on an approval, failed) when the server attributes subagents.
  const state = status === "complete" ? (subagent?.state === "failed" ? "failed" : "done") : (subagent?.state ?? "working");
  return (
    <div className="sg-card sg-delegation" data-testid="delegation" data-agent={key} data-subagent={subagent?.name} data-status={state} data-tool-call-id={toolCallId}>
      <div className="sg-card-head">
        <span className="sg-badge">delegation</span> <strong>{subagent?.name ?? key}</strong>
        <span className="sg-status" data-testid="delegation-status">{state === "working" ? "working…" : state}</span>
      </div>
      {typeof prompt === "string" && <p className="sg-prompt">{prompt}</p>}
      {subagent?.error && <p className="sg-error">{subagent.error}</p>}
      {status === "complete" && result !== undefined ? (
        <details>
          <summary>answer</summary>
          <pre data-testid="delegation-result">{result}</pre>
        </details>
      ) : (
        text && <pre className="sg-stream" data-testid="delegation-stream">{text}</pre>
      )}
    </div>
  );
}

function PlainToolCard({ name, status, result }: ToolCallProps) {
  const done = status === "complete";
  return (
    <div className="sg-card sg-tool" data-testid="tool-call" data-tool={name} data-status={done ? "done" : "running"}>
      <div className="sg-card-head">
        <span className="sg-badge">tool</span> <strong>{name}</strong> <span className="sg-status">{done ? "done" : "running…"}</span>
      </div>
      {done && result !== undefined && <pre data-testid="tool-result">{result}</pre>}
    </div>
  );
}
