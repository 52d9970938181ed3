// Scans: submit one (target, mode, agent), watch its progress live (an
// aophub.v1.ScanProtocolMessage watch on the application WebSocket: a snapshot,
// then an update at each change of status or progress), and read its markdown report.

import { type Scan, ScanProtocolMessageSchema, ScanStatus } from "@aophub/client/gen/aophub/v1/scan_pb.js";
import { ProtocolMessageSchema } from "@aophub/client/gen/aop/protocol_pb.js";

import { errorText, h, replace } from "./dom.js";
import type { Context } from "./main.js";
import { markdown } from "./markdown.js";
import { anyPack, anyUnpack, create } from "./protobuf.js";

const DEFAULT_MODES = ["review", "summary"];

function statusName(status: ScanStatus): string {
  return (ScanStatus[status] ?? "unknown").toLowerCase();
}

function running(scan: Scan): boolean {
  return scan.status === ScanStatus.QUEUED || scan.status === ScanStatus.RUNNING;
}

function progress(scan: Scan): string {
  const p = scan.progress;
  if (scan.status === ScanStatus.QUEUED) return scan.queuePosition ? `queued, position ${scan.queuePosition}` : "queued";
  if (!p) return "";
  return `${p.steps} steps, ${p.toolCalls} tool calls, ${p.events} events${p.lastActivity ? ` · ${p.lastActivity}` : ""}`;
}

function rejection(outcome: { case: string | undefined; value?: unknown }): string {
  const value = outcome.value as { message?: string; code?: string } | undefined;
  return value?.message || value?.code || "refused";
}

export function scansView(context: Context): () => void {
  const { scans } = context.link.client.management;
  document.title = "aophub: scans";
  const list = h("ul", { class: "sessions", id: "scan-list", "aria-label": "Scans" });
  let stopped = false;
  const load = () =>
    scans
      .listScans({ pageSize: 50 })
      .then(({ scans: all }) => {
        if (stopped) return;
        replace(
          list,
          all.length
            ? all.map((scan) =>
                h(
                  "li",
                  { "data-scan": scan.id },
                  h(
                    "a",
                    { href: `#/scan/${encodeURIComponent(scan.id)}`, class: "session" },
                    h("span", { class: "title" }, scan.target),
                    h(
                      "span",
                      { class: "meta" },
                      `${scan.mode} on ${scan.nodeId || "local"}`,
                      h("span", { class: `badge scan-${statusName(scan.status)}` }, statusName(scan.status)),
                      " ",
                      progress(scan),
                    ),
                  ),
                ),
              )
            : h("li", { class: "empty" }, "No scans yet."),
        );
      })
      .catch((err: unknown) => context.status(`Cannot list scans: ${errorText(err)}`, "error"));
  replace(context.main, h("section", { class: "page" }, h("h1", {}, "Scans"), context.can.write ? submitForm(context) : null, list));
  void load();
  const timer = setInterval(() => void load(), 2000);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

function submitForm(context: Context): HTMLElement {
  const { client } = context.link;
  const target = h("input", { id: "scan-target", required: true, placeholder: "Target (a path or repository)", "aria-label": "Target", class: "grow" });
  const mode = h("select", { id: "scan-mode", "aria-label": "Mode" }, DEFAULT_MODES.map((m) => h("option", { value: m }, m)));
  const agent = h("select", { id: "scan-agent", "aria-label": "Agent" }, h("option", { value: "" }, "local"));
  const button = h("button", { type: "submit", class: "primary", id: "submit-scan" }, "Start scan");
  if (context.can.admin) {
    client.management.config
      .getConfig({})
      .then(({ config }) => {
        const modes = config?.scans?.modes ?? [];
        if (modes.length) replace(mode, modes.map((m) => h("option", { value: m.name, title: m.description }, m.name)));
      })
      .catch(() => {});
  }
  client.management.agents
    .listAgents({})
    .then(({ agents }) => replace(agent, agents.map((a) => h("option", { value: a.builtIn ? "" : a.nodeId }, a.nodeId))))
    .catch(() => {});
  return h(
    "form",
    {
      class: "create",
      onsubmit: (event: Event) => {
        event.preventDefault();
        button.disabled = true;
        client.management.scans
          .submitScan({ requestId: crypto.randomUUID(), target: target.value.trim(), mode: mode.value, nodeId: agent.value })
          .then(({ outcome }) => {
            if (outcome.case === "accepted") context.go(`#/scan/${encodeURIComponent(outcome.value.id)}`);
            else context.status(`Scan refused: ${rejection(outcome)}`, "error");
          })
          .catch((err: unknown) => context.status(`Scan refused: ${errorText(err)}`, "error"))
          .finally(() => (button.disabled = false));
      },
    },
    target,
    mode,
    agent,
    button,
  );
}

export function scanView(context: Context, scanId: string): () => void {
  const { scans } = context.link.client.management;
  document.title = "aophub: scan";
  const heading = h("h1", { class: "grow" }, "Scan");
  const state = h("p", { id: "scan-state", class: "meta", role: "status" });
  const report = h("article", { id: "scan-report", class: "message report", "aria-label": "Report" });
  report.hidden = true;
  const cancel = h(
    "button",
    {
      class: "danger",
      id: "cancel-scan",
      hidden: true,
      onclick: () =>
        void scans
          .cancelScan({ requestId: crypto.randomUUID(), scanId, reason: "canceled from the web console" })
          .catch((err: unknown) => context.status(errorText(err), "error")),
    },
    "Cancel scan",
  );
  const session = h("a", { hidden: true, id: "scan-session" }, "Open its session");
  replace(
    context.main,
    h(
      "section",
      { class: "page" },
      h("div", { class: "chat-head" }, h("a", { href: "#/scans", class: "back", "aria-label": "Back to scans" }, "←"), heading),
      state,
      h("div", { class: "row" }, session, context.can.write ? cancel : null),
      report,
    ),
  );
  let stopped = false;
  let reportShown = false;
  const show = (scan: Scan) => {
    heading.textContent = `${scan.mode}: ${scan.target}`;
    state.dataset.status = statusName(scan.status);
    state.textContent = `${statusName(scan.status)}${progress(scan) ? ` · ${progress(scan)}` : ""}${scan.error?.message ? ` · ${scan.error.message}` : ""}`;
    cancel.hidden = !running(scan);
    if (scan.sessionId) {
      session.hidden = false;
      session.setAttribute("href", `#/s/${encodeURIComponent(scan.sessionId)}`);
    }
    if (scan.reportReady && !reportShown) {
      reportShown = true;
      scans
        .getScanReport({ scanId })
        .then(({ markdown: text }) => {
          if (stopped) return;
          replace(report, markdown(text));
          report.hidden = false;
        })
        .catch((err: unknown) => {
          reportShown = false;
          context.status(`Cannot read the report: ${errorText(err)}`, "error");
        });
    }
  };
  // The watch outlives reconnects: it resumes after the last event cursor seen, and its snapshot
  // brings the scan's state up to date.
  let cursor = "";
  const watch = context.link.client.subscribe(
    () =>
      anyPack(
        ScanProtocolMessageSchema,
        create(ScanProtocolMessageSchema, { message: { case: "watchScanRequest", value: { scanId, afterCursor: cursor } } }),
      ),
    (payload, delivered) => {
      if (stopped) return;
      if (delivered) cursor = delivered;
      const m = anyUnpack(payload, ScanProtocolMessageSchema)?.message;
      if (m?.case === "snapshot" || m?.case === "update") {
        if (m.value.scan) show(m.value.scan);
      } else if (m?.case === "rejected") {
        context.status(`Cannot watch the scan: ${m.value.message || m.value.code}`, "error");
      } else if (m === undefined) {
        const failure = anyUnpack(payload, ProtocolMessageSchema)?.message;
        if (failure?.case === "protocolError") context.status(`Cannot watch the scan: ${failure.value.message}`, "error");
      }
    },
  );
  return () => {
    stopped = true;
    watch.end();
  };
}
