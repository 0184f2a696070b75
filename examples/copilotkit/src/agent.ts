// The one name the runtime registers the Python agent under and the page asks for.
// CopilotKit's chat falls back to an agent called "default" when it is given no id,
// and the runtime then answers "Agent 'default' not found".
export const AGENT_ID = "research_write";

// Where the runtime is mounted, relative to the page (same origin: no CORS needed).
export const RUNTIME_PATH = "/api/copilotkit";
