import "@copilotkit/react-core/v2/styles.css";
import "./page.css";

import { createRoot } from "react-dom/client";

import { App } from "./App";

const root = document.getElementById("root");
if (!root) throw new Error("index.html has no #root");
createRoot(root).render(<App />);
