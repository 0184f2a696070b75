// The approval card for supervisor-graph's tool-approval interrupt. The interrupt's
// metadata (under "supervisor_graph") names the tool, its arguments, the agent that
// called it and the decisions the tool allows; the answer goes back as the resume
// entry's payload: {approved: true}, {approved: true, args} or {approved: false, message}.
import { useState } from "react";

import type { Interrupt } from "@copilotkit/react-core/v2";

type Decision = "approve" | "edit" | "reject";

interface ApprovalMetadata {
  tool_name?: string;
  args?: Record<string, unknown>;
  agent_path?: string[];
  allowed_decisions?: Decision[];
}

interface Props {
  interrupt: Interrupt | null;
  resolve: (payload?: unknown, interruptId?: string) => Promise<unknown>;
  cancel: (interruptId?: string) => Promise<unknown>;
}

const APPROVAL = "supervisor_graph:tool_approval";

export function ApprovalCard({ interrupt, resolve, cancel }: Props) {
  const meta = ((interrupt?.metadata as Record<string, unknown> | undefined)?.supervisor_graph ?? {}) as ApprovalMetadata;
  const args = meta.args ?? {};
  const allowed = meta.allowed_decisions ?? ["approve", "edit", "reject"];
  // Strings are edited as they are (a text area keeps line breaks byte for byte); any
  // other value as JSON.
  const [draft, setDraft] = useState<Record<string, string>>(() =>
    Object.fromEntries(Object.entries(args).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v, null, 2)])),
  );
  const [editing, setEditing] = useState(false);
  const [rejecting, setRejecting] = useState(false);
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [sent, setSent] = useState<string | null>(null);

  if (!interrupt || interrupt.reason !== APPROVAL) {
    return <div className="sg-card" data-testid="interrupt">{interrupt?.message ?? "The agent is waiting for an answer."}</div>;
  }
  const id = interrupt.id;
  const agent = meta.agent_path?.at(-1);

  // A rejection without a reason is the resume entry's "cancelled" status; every other
  // answer is a "resolved" entry with the payload.
  const send = async (what: string, payload?: unknown) => {
    setSent(what);
    setError(null);
    try {
      await (payload === undefined ? cancel(id) : resolve(payload, id));
    } catch (exc) {
      setSent(null);
      setError(String(exc));
    }
  };

  const edited = (): Record<string, unknown> | null => {
    const out: Record<string, unknown> = {};
    for (const [key, text] of Object.entries(draft)) {
      if (typeof args[key] === "string") {
        out[key] = text;
        continue;
      }
      try {
        out[key] = JSON.parse(text);
      } catch {
        setError(`${key} is not valid JSON`);
        return null;
      }
    }
    return out;
  };

  const runEdited = () => {
    const edits = edited();
    if (edits) void send("running with your arguments", { approved: true, args: edits });
  };

  return (
    <div className="sg-card sg-approval" data-testid="approval-card" data-tool={meta.tool_name} data-interrupt-id={id}>
      <div className="sg-card-head">
        <span className="sg-badge sg-badge-wait">approval</span> <strong>{meta.tool_name}</strong>
        {agent && <span className="sg-status"> called by {agent}</span>}
      </div>
      {interrupt.message && <p>{interrupt.message}</p>}
      <dl className="sg-args">
        {Object.keys(draft).map((key) => (
          <div key={key}>
            <dt>{key}</dt>
            <dd>
              {editing ? (
                <textarea
                  data-testid={`arg-${key}`}
                  value={draft[key]}
                  rows={Math.min(12, draft[key].split("\n").length + 1)}
                  onChange={(e) => setDraft({ ...draft, [key]: e.target.value })}
                />
              ) : (
                <pre data-testid={`arg-${key}`}>{draft[key]}</pre>
              )}
            </dd>
          </div>
        ))}
      </dl>
      {rejecting && (
        <input data-testid="reject-reason" placeholder="Why? (the agent sees this)" value={reason} onChange={(e) => setReason(e.target.value)} />
      )}
      {error && <p className="sg-error" data-testid="approval-error">{error}</p>}
      {sent ? (
        <p className="sg-status" data-testid="approval-sent">{sent}…</p>
      ) : (
        <div className="sg-actions">
          {editing ? (
            <>
              <button data-testid="run-edited" onClick={runEdited}>
                Run with these arguments
              </button>
              <button onClick={() => setEditing(false)}>Back</button>
            </>
          ) : rejecting ? (
            <>
              <button data-testid="confirm-reject" onClick={() => void send("rejected", reason ? { approved: false, message: reason } : undefined)}>
                Reject
              </button>
              <button onClick={() => setRejecting(false)}>Back</button>
            </>
          ) : (
            <>
              {allowed.includes("approve") && <button data-testid="approve" onClick={() => void send("approved", { approved: true })}>Approve</button>}
              {allowed.includes("edit") && <button data-testid="edit" onClick={() => setEditing(true)}>Edit</button>}
              {allowed.includes("reject") && <button data-testid="reject" onClick={() => setRejecting(true)}>Reject</button>}
            </>
          )}
        </div>
      )}
    </div>
  );
}
