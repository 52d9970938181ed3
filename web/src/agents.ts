// The agents: online and recently seen nodes with their status, model and stats,
// refreshed every two seconds while the page is shown (the hub has no live agent
// feed), and a Terminal link for each online node when the token may open one.

import type { Agent } from "@aophub/client/gen/aophub/v1/agent_pb.js";

import { errorText, h, replace } from "./dom.js";
import type { Context } from "./main.js";

function row(agent: Agent, terminals: boolean): HTMLElement {
  const stats = agent.stats;
  const state = !agent.online ? "offline" : agent.busy ? "busy" : "idle";
  return h(
    "li",
    { class: "agent", "data-node": agent.nodeId, "data-state": state },
    h("div", { class: "title" }, agent.hello?.name || agent.nodeId, h("span", { class: `badge ${state}` }, state)),
    h(
      "dl",
      {},
      h("dt", {}, "node"),
      h("dd", {}, agent.nodeId + (agent.builtIn ? " (built in)" : "")),
      h("dt", {}, "model"),
      h("dd", {}, agent.status?.model || "—"),
      h("dt", {}, "sessions"),
      h("dd", {}, `${agent.openSessions} open, ${agent.runningTurns} running`),
      stats ? h("dt", {}, "turns") : null,
      stats ? h("dd", {}, `${stats.turns} turns, ${stats.toolCalls} tool calls, ${stats.totalTokens} tokens`) : null,
      agent.status?.configError ? h("dt", {}, "error") : null,
      agent.status?.configError ? h("dd", { class: "error" }, agent.status.configError) : null,
    ),
    terminals && agent.online
      ? h("a", { href: `#/terminal/${encodeURIComponent(agent.nodeId)}`, class: "terminal-link" }, "Terminal")
      : null,
  );
}

export function agentsView(context: Context): () => void {
  document.title = "aophub: agents";
  const list = h("ul", { class: "agents", id: "agent-list", "aria-label": "Agents" });
  replace(context.main, h("section", { class: "page" }, h("h1", {}, "Agents"), list));
  let stopped = false;
  let last = "";
  const load = () =>
    context.link.client.management.agents
      .listAgents({ includeOffline: true })
      .then(({ agents }) => {
        if (stopped) return;
        const rows = agents.length ? agents.map((agent) => row(agent, context.can.terminal)) : [h("li", { class: "empty" }, "No agent has connected.")];
        // Unchanged rows stay as they are, so a focused Terminal link keeps its focus.
        const shown = rows.map((r) => r.outerHTML).join("");
        if (shown !== last) replace(list, rows);
        last = shown;
      })
      .catch((err: unknown) => context.status(`Cannot list agents: ${errorText(err)}`, "error"));
  void load();
  const timer = setInterval(() => void load(), 2000);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
