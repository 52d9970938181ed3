// A session's chat: the stored events, then live ones, from one resuming watch
// of the client (after a dropped connection it watches again after its last
// cursor: no persisted event is missed or shown twice). Deltas stream into a
// bubble; the complete message that follows replaces the bubble's text, so text
// lost while offline is filled in and nothing is doubled.

import { type Event as HubEvent, interactionOf, InteractionKind, InteractionState, type Interaction, type Message, text, type Watch } from "@aophub/client";
import { DeltaOperation } from "@aophub/client/gen/aop/event_pb.js";
import type { Content, ToolCall, ToolResult } from "@aophub/client/gen/aop/content_pb.js";
import { TurnOptionsSchema, TurnPolicy } from "@aophub/client/gen/aophub/v1/extensions_pb.js";

import { duration, errorText, h, replace } from "./dom.js";
import type { Context } from "./main.js";
import { clientToolControls } from "./client_tools.js";
import { markdown } from "./markdown.js";
import { anyPack, create } from "./protobuf.js";

interface Bubble {
  element: HTMLElement;
  body: HTMLElement;
  reasoning: HTMLDetailsElement;
  reasoningText: HTMLElement;
  text: string;
  thinking: string;
  final: boolean;
  paintedAt: number;
}

const decoder = new TextDecoder();

function pretty(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}

function outputText(result: ToolResult): string {
  return result.output.map((part) => (part.value.case === "text" ? part.value.value.text : part.value.case ?? "")).join("\n");
}

export function chatView(context: Context, sessionId: string): () => void {
  const { client } = context.link;
  document.title = "aophub: chat";
  const bubbles = new Map<string, Bubble>();
  const tools = new Map<string, HTMLElement>();
  const interactions = new Map<string, HTMLElement>();
  const dirty = new Set<Bubble>();
  let runningTurn = "";
  let lastAnswer = false;
  let frame = 0;

  const heading = h("h1", { class: "grow" }, sessionId);
  const transcript = h("ol", { class: "transcript", id: "transcript", "aria-live": "polite", "aria-label": "Conversation" });
  const scroller = h("div", { class: "scroller" }, transcript);
  const input = h("textarea", {
    id: "prompt",
    rows: 2,
    placeholder: "Message",
    "aria-label": "Message",
    onkeydown: (event: Event) => {
      const key = event as KeyboardEvent;
      if (key.key === "Enter" && !key.shiftKey && !key.isComposing) {
        key.preventDefault();
        composer.requestSubmit();
      }
    },
  });
  const send = h("button", { type: "submit", class: "primary", id: "send" }, "Send");
  const cancel = h(
    "button",
    {
      type: "button",
      id: "cancel",
      class: "danger",
      hidden: true,
      onclick: () => {
        if (!runningTurn) return;
        cancel.disabled = true;
        client
          .cancelTurn({ sessionId, turnId: runningTurn, reason: "canceled from the web console" })
          .catch((err: unknown) => context.status(errorText(err), "error"))
          .finally(() => (cancel.disabled = false));
      },
    },
    "Stop",
  );
  // Files attached to the next turn, sent inline as MediaContent parts of its input.
  let attached: File[] = [];
  const chips = h("ul", { class: "chips", id: "attachments", "aria-label": "Attached files" });
  const files = h("input", {
    type: "file",
    id: "attach",
    multiple: true,
    class: "visually-hidden",
    onchange: () => {
      attached = [...attached, ...Array.from(files.files ?? [])];
      files.value = "";
      showChips();
    },
  });
  function showChips(): void {
    replace(
      chips,
      attached.map((file, i) =>
        h(
          "li",
          {},
          file.name,
          h("button", { type: "button", class: "ghost", "aria-label": `Remove ${file.name}`, onclick: () => (attached.splice(i, 1), showChips()) }, "×"),
        ),
      ),
    );
  }
  const policy = h(
    "select",
    { id: "policy", "aria-label": "When a turn is running", title: "When a turn is already running" },
    h("option", { value: String(TurnPolicy.ENQUEUE) }, "queue"),
    h("option", { value: String(TurnPolicy.REJECT) }, "reject"),
    h("option", { value: String(TurnPolicy.INTERRUPT) }, "interrupt"),
  );
  const options = (regenerate = false) => [
    anyPack(TurnOptionsSchema, create(TurnOptionsSchema, { policy: Number(policy.value) as TurnPolicy, regenerate })),
  ];
  const regenerate = h(
    "button",
    {
      type: "button",
      id: "regenerate",
      class: "ghost",
      hidden: true,
      onclick: () => {
        regenerate.disabled = true;
        client
          .runTurn({ sessionId, extensions: options(true) })
          .catch((err: unknown) => context.status(`Not regenerated: ${errorText(err)}`, "error"))
          .finally(() => (regenerate.disabled = false));
      },
    },
    "Regenerate",
  );
  async function media(file: File): Promise<Content> {
    const data = new Uint8Array(await file.arrayBuffer());
    const kind = file.type.startsWith("image/") ? "image" : file.type.startsWith("audio/") ? "audio" : "file";
    const resource = { source: { case: "data" as const, value: data }, mediaType: file.type || "application/octet-stream", filename: file.name };
    return { $typeName: "aop.Content", value: { case: "media", value: { $typeName: "aop.MediaContent", kind, resource: { $typeName: "aop.Resource", ...resource }, transcript: "" } } };
  }
  const composer = h(
    "form",
    {
      class: "composer",
      onsubmit: (event: Event) => {
        event.preventDefault();
        const prompt = input.value.trim();
        if (!prompt && attached.length === 0) return;
        send.disabled = true;
        const sending = attached;
        Promise.all(sending.map(media))
          .then((parts) => {
            const content: Content[] = prompt ? [{ $typeName: "aop.Content", value: { case: "text", value: { $typeName: "aop.TextContent", text: prompt, annotations: [] } } }] : [];
            return client.runTurn({ sessionId, input: { role: "user", content: [...content, ...parts] }, extensions: options() });
          })
          .then(() => {
            input.value = "";
            attached = attached.filter((file) => !sending.includes(file));
            showChips();
          })
          .catch((err: unknown) => context.status(`Not sent: ${errorText(err)}`, "error"))
          .finally(() => (send.disabled = false));
      },
    },
    chips,
    h(
      "div",
      { class: "composer-row" },
      h("label", { for: "attach", class: "attach", title: "Attach files" }, files, h("span", { "aria-hidden": "true", class: "plus" }, "+"), h("span", { class: "visually-hidden" }, "Attach files")),
      input,
      cancel,
      send,
    ),
    h("div", { class: "composer-row small" }, h("label", { class: "check", for: "policy" }, "while busy"), policy, regenerate),
  );

  replace(
    context.main,
    h(
      "section",
      { class: "chat" },
      h(
        "div",
        { class: "chat-head" },
        h("a", { href: "#/sessions", class: "back", "aria-label": "Back to sessions" }, "←"),
        heading,
        context.can.workspace ? h("a", { href: `#/files/${encodeURIComponent(sessionId)}`, id: "files-link" }, "Files") : null,
      ),
      scroller,
      context.can.write ? composer : h("p", { class: "hint" }, "This token can read but not send."),
    ),
  );
  client.management.sessions
    .getSession({ sessionId })
    .then(({ session }) => {
      heading.textContent = session?.title || session?.nodeId || sessionId;
      document.title = `aophub: ${heading.textContent}`;
    })
    .catch(() => {});

  function nearBottom(): boolean {
    return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
  }

  function add(item: HTMLElement): void {
    const stick = nearBottom();
    transcript.appendChild(item);
    if (stick) scroller.scrollTop = scroller.scrollHeight;
  }

  function bubble(id: string, role: string): Bubble {
    let b = bubbles.get(id);
    if (b) return b;
    const reasoningText = h("div", { class: "reasoning-text" });
    const reasoning = h("details", { class: "reasoning", hidden: true }, h("summary", {}, "Reasoning"), reasoningText);
    const body = h("div", { class: "body" });
    const element = h("li", { class: `message ${role}`, "data-role": role, "data-message-id": id, "data-empty": true }, reasoning, body);
    b = { element, body, reasoning, reasoningText, text: "", thinking: "", final: false, paintedAt: -Infinity };
    bubbles.set(id, b);
    add(element);
    return b;
  }

  function paint(): void {
    cancelAnimationFrame(frame);
    frame = 0;
    const stick = nearBottom();
    const now = performance.now();
    for (const b of dirty) {
      b.paintedAt = now;
      replace(b.body, markdown(b.text));
      b.reasoning.hidden = b.thinking === "";
      b.reasoningText.textContent = b.thinking;
      b.element.toggleAttribute("data-final", b.final);
      b.element.toggleAttribute("data-empty", b.text === "" && b.thinking === "");
    }
    dirty.clear();
    if (stick) scroller.scrollTop = scroller.scrollHeight;
  }

  // A bubble's change paints at once unless that bubble painted within the last frame; then at
  // the next frame (so a new message's first token shows without waiting for a frame, and a
  // burst of deltas paints once per frame).
  function changed(b: Bubble): void {
    dirty.add(b);
    if (frame) return;
    if (performance.now() - b.paintedAt >= 16) paint();
    else frame = requestAnimationFrame(paint);
  }

  function onMessage(message: Message, eventId: string): void {
    if (message.role === "tool") return; // tool results are shown on their call
    const b = bubble(message.id || eventId, message.role || "assistant");
    b.text = text(message);
    b.thinking = message.content.map((part) => (part.value.case === "reasoning" ? part.value.value.text : "")).join("");
    b.final = true;
    const attachments = message.content.flatMap((part) => (part.value.case === "media" ? [part.value.value] : []));
    if (attachments.length && !b.element.querySelector(".files")) {
      b.element.appendChild(
        h(
          "ul",
          { class: "files" },
          attachments.map((m) => {
            const resource = m.resource;
            const name = resource?.filename || m.kind;
            if (m.kind === "image" && resource?.source.case === "data") {
              const url = URL.createObjectURL(new Blob([new Uint8Array(resource.source.value)], { type: resource.mediaType }));
              return h("li", {}, h("img", { src: url, alt: name, class: "thumb" }));
            }
            return h("li", { class: "file" }, name);
          }),
        ),
      );
    }
    if (message.role === "assistant") lastAnswer = true;
    changed(b);
  }

  function onDelta(event: HubEvent): void {
    if (event.payload.case !== "messageDelta") return;
    const delta = event.payload.value;
    const b = bubble(delta.messageId, "assistant");
    if (b.final) return; // the complete message is here already
    const value = delta.value;
    const set = delta.operation === DeltaOperation.REPLACE;
    if (value.case === "text") b.text = set ? value.value : b.text + value.value;
    else if (value.case === "reasoning") b.thinking = set ? value.value : b.thinking + value.value;
    else return;
    changed(b);
  }

  function onToolCall(call: ToolCall): void {
    if (tools.has(call.id)) return;
    const args = pretty(decoder.decode(call.arguments?.data ?? new Uint8Array()));
    const card = h(
      "li",
      { class: "tool", "data-call": call.id, "data-state": "running" },
      h(
        "details",
        {},
        h("summary", {}, h("span", { class: "tool-name" }, call.name), h("span", { class: "tool-state" }, "running…")),
        h("pre", { class: "args", "aria-label": "Arguments" }, args),
        h("pre", { class: "result", hidden: true, "aria-label": "Result" }),
      ),
    );
    tools.set(call.id, card);
    add(card);
  }

  function onToolResult(result: ToolResult): void {
    const card = tools.get(result.callId);
    if (!card) return;
    card.dataset.state = result.isError ? "error" : "done";
    const state = card.querySelector(".tool-state") as HTMLElement;
    state.textContent = `${result.isError ? "failed" : "done"}${result.durationMs ? ` in ${duration(Number(result.durationMs))}` : ""}`;
    const pre = card.querySelector(".result") as HTMLElement;
    pre.hidden = false;
    pre.textContent = outputText(result);
  }

  function onInteraction(interaction: Interaction): void {
    let card = interactions.get(interaction.id);
    if (!card) {
      card = h("li", { class: "interaction", "data-interaction": interaction.id });
      interactions.set(interaction.id, card);
      add(card);
    }
    card.dataset.state = InteractionState[interaction.state].toLowerCase();
    const args = interaction.argumentsJson ? pretty(interaction.argumentsJson) : "";
    const name = interaction.toolName || interaction.call?.name || "tool";
    const approval = interaction.kind !== InteractionKind.CLIENT_TOOL;
    const title = approval ? `Approve ${name}?` : `${name} asks for your input`;
    const body: (Node | null)[] = [h("p", { class: "ask" }, title), args && approval ? h("pre", { class: "args" }, args) : null];
    if (interaction.state === InteractionState.PENDING) {
      if (context.can.write) body.push(approval ? approvalControls(interaction) : inputControls(interaction));
    } else {
      const answer = interaction.answer?.answer;
      const outcome =
        interaction.state === InteractionState.ANSWERED
          ? answer?.case === "approval"
            ? answer.value.approved
              ? "Approved"
              : `Denied${answer.value.reason ? `: ${answer.value.reason}` : ""}`
            : `Answered${answer?.case === "output" ? `: ${answer.value.output.map((part) => (part.value.case === "text" ? part.value.value.text : "")).join("")}` : ""}`
          : interaction.state === InteractionState.EXPIRED
            ? "Expired"
            : "Canceled";
      body.push(h("p", { class: "outcome" }, outcome));
    }
    replace(card, ...body);
  }

  function answered(interaction: Interaction, promise: Promise<Interaction>, buttons: HTMLButtonElement[]): void {
    for (const b of buttons) b.disabled = true;
    promise
      .then((answer) => onInteraction(answer))
      .catch((err: unknown) => {
        context.status(errorText(err), "error");
        for (const b of buttons) b.disabled = false;
        void interaction;
      });
  }

  function approvalControls(interaction: Interaction): HTMLElement {
    const yes = h("button", { class: "primary", "data-answer": "approve" }, "Approve");
    const no = h("button", { class: "danger", "data-answer": "deny" }, "Deny");
    const decide = (approved: boolean) =>
      answered(
        interaction,
        client.answerInteraction({ interactionId: interaction.id, answer: { answer: { case: "approval", value: { approved } } } }),
        [yes, no],
      );
    yes.addEventListener("click", () => decide(true));
    no.addEventListener("click", () => decide(false));
    return h("div", { class: "row" }, yes, no);
  }

  function inputControls(interaction: Interaction): HTMLElement {
    const name = interaction.toolName || interaction.call?.name || "";
    return clientToolControls(name, interaction.argumentsJson, (output, buttons) =>
      answered(
        interaction,
        client.answerInteraction({
          interactionId: interaction.id,
          answer: { answer: { case: "output", value: { output: [{ value: { case: "text", value: { text: output } } }] } } },
        }),
        buttons,
      ),
    );
  }

  function setRunning(turnId: string): void {
    runningTurn = turnId;
    cancel.hidden = turnId === "";
    regenerate.hidden = turnId !== "" || !lastAnswer;
    transcript.toggleAttribute("data-busy", turnId !== "");
  }

  function onEvent(event: HubEvent): void {
    const p = event.payload;
    switch (p.case) {
      case "message":
        onMessage(p.value, event.id);
        break;
      case "messageDelta":
        onDelta(event);
        break;
      case "toolCall":
        onToolCall(p.value);
        break;
      case "toolResult":
        onToolResult(p.value);
        break;
      case "turnStarted":
        setRunning(event.turnId);
        break;
      case "turnEnded": {
        if (event.turnId === runningTurn) setRunning("");
        const reason = p.value.stopReason;
        if (p.value.error?.message || (reason && !/^(end_turn|completed|stop)$/.test(reason))) {
          add(
            h(
              "li",
              { class: "notice", "data-stop": reason },
              `Turn ended: ${reason}${p.value.error?.message ? ` (${p.value.error.message})` : ""}`,
            ),
          );
        }
        break;
      }
      case "error":
        add(h("li", { class: "notice error" }, p.value.message));
        break;
      case "extension": {
        const interaction = interactionOf(event);
        if (interaction) onInteraction(interaction);
        break;
      }
      default:
        break;
    }
  }

  const watch: Watch = client.watch(sessionId, "");
  void (async () => {
    try {
      for await (const { event } of watch) onEvent(event);
    } catch (err) {
      context.status(`The session's events stopped: ${errorText(err)}`, "error");
    }
  })();
  if (context.can.write) input.focus();
  return () => {
    watch.close();
    cancelAnimationFrame(frame);
  };
}
