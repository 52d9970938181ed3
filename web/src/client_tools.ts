// The console's client tools: declared (aophub.v1.ClientTools) on the sessions it
// opens, so the agent can ask the user; each call becomes a pending interaction
// that the chat shows as controls: confirm (yes/no), choose (one of the
// options), ask_user (free text) and fill_form (a form built from a JSON Schema).
// The answer is the tool's text output (a form answers its values as JSON).

import { ClientToolsSchema } from "@aophub/client/gen/aophub/v1/extensions_pb.js";

import { h } from "./dom.js";
import { anyPack, create } from "./protobuf.js";

interface Schema {
  type?: string;
  title?: string;
  description?: string;
  enum?: unknown[];
  properties?: Record<string, Schema>;
  required?: string[];
}

const encoder = new TextEncoder();

function tool(name: string, description: string, schema: Schema) {
  return {
    type: "function",
    name,
    description,
    inputSchema: { data: encoder.encode(JSON.stringify(schema)), mediaType: "application/json" },
  };
}

/** The ClientTools extension of an OpenSessionRequest from the console. */
export function consoleClientTools() {
  const question = { type: "string", description: "The question to show the user." };
  return anyPack(
    ClientToolsSchema,
    create(ClientToolsSchema, {
      tools: [
        tool("confirm", "Ask the user a yes/no question; the answer is yes or no.", {
          type: "object",
          properties: { question },
          required: ["question"],
        }),
        tool("choose", "Ask the user to pick one of a few options; the answer is the option.", {
          type: "object",
          properties: { question, options: { type: "array", items: { type: "string" } } as Schema },
          required: ["question", "options"],
        }),
        tool("ask_user", "Ask the user for free text; the answer is their text.", {
          type: "object",
          properties: { question },
          required: ["question"],
        }),
        tool("fill_form", "Ask the user to fill a form described by a JSON Schema object; the answer is the values as JSON.", {
          type: "object",
          properties: { title: { type: "string" }, schema: { type: "object" } },
          required: ["schema"],
        }),
      ],
    }),
  );
}

/**
 * The controls that answer a client tool call: answer(text) sends the output.
 * Unknown tools (declared by another application) get a free-text answer, or a
 * form when their arguments carry a JSON Schema under "schema".
 */
export function clientToolControls(name: string, argumentsJson: string, answer: (text: string, buttons: HTMLButtonElement[]) => void): HTMLElement {
  let args: Record<string, unknown> = {};
  try {
    args = JSON.parse(argumentsJson || "{}") as Record<string, unknown>;
  } catch {
    // shown as text
  }
  const question = typeof args.question === "string" ? h("p", { class: "question" }, args.question) : null;
  if (name === "confirm") {
    const yes = h("button", { class: "primary", "data-answer": "yes" }, "Yes");
    const no = h("button", { "data-answer": "no" }, "No");
    yes.addEventListener("click", () => answer("yes", [yes, no]));
    no.addEventListener("click", () => answer("no", [yes, no]));
    return h("div", {}, question, h("div", { class: "row" }, yes, no));
  }
  if (name === "choose" && Array.isArray(args.options)) {
    const buttons = args.options.map((option) => h("button", { "data-answer": String(option) }, String(option)));
    for (const b of buttons) b.addEventListener("click", () => answer(b.dataset.answer ?? "", buttons));
    return h("div", {}, question, h("div", { class: "row", role: "group", "aria-label": "Options" }, buttons));
  }
  const schema = args.schema as Schema | undefined;
  if (schema && typeof schema === "object" && schema.properties) return schemaForm(schema, String(args.title ?? ""), answer);
  const field = h("textarea", { rows: 2, "aria-label": "Your answer", class: "grow" });
  const submit = h("button", { type: "submit", class: "primary" }, "Answer");
  return h(
    "form",
    {
      onsubmit: (event: Event) => {
        event.preventDefault();
        answer(field.value, [submit]);
      },
    },
    question,
    h("div", { class: "row" }, field, submit),
  );
}

/** A form for a JSON Schema object of strings, numbers, integers, booleans and enums. */
function schemaForm(schema: Schema, title: string, answer: (text: string, buttons: HTMLButtonElement[]) => void): HTMLElement {
  const required = new Set(schema.required ?? []);
  const read: (() => [string, unknown] | null)[] = [];
  const rows = Object.entries(schema.properties ?? {}).map(([key, property]) => {
    const label = property.title || key;
    const id = `form-${key}-${Math.random().toString(36).slice(2, 8)}`;
    let control: HTMLInputElement | HTMLSelectElement;
    if (property.enum) {
      control = h("select", { id, name: key, required: required.has(key) }, property.enum.map((v) => h("option", { value: String(v) }, String(v))));
      read.push(() => [key, control.value]);
    } else if (property.type === "boolean") {
      control = h("input", { id, name: key, type: "checkbox" });
      read.push(() => [key, (control as HTMLInputElement).checked]);
      return h("label", { class: "check", for: id }, control, label);
    } else if (property.type === "number" || property.type === "integer") {
      control = h("input", { id, name: key, type: "number", step: property.type === "integer" ? "1" : "any", required: required.has(key) });
      read.push(() => (control.value === "" ? null : [key, Number(control.value)]));
    } else {
      control = h("input", { id, name: key, required: required.has(key) });
      read.push(() => (control.value === "" && !required.has(key) ? null : [key, control.value]));
    }
    return h("label", { class: "field", for: id }, label + (required.has(key) ? " *" : ""), control, property.description ? h("span", { class: "hint" }, property.description) : null);
  });
  const submit = h("button", { type: "submit", class: "primary" }, "Send");
  return h(
    "form",
    {
      class: "schema-form",
      onsubmit: (event: Event) => {
        event.preventDefault();
        const values = Object.fromEntries(read.map((f) => f()).filter((entry): entry is [string, unknown] => entry !== null));
        answer(JSON.stringify(values), [submit]);
      },
    },
    title || schema.title ? h("p", { class: "question" }, title || schema.title || "") : null,
    rows,
    h("div", { class: "row" }, submit),
  );
}
