// Settings (admin tokens only): the LLM profiles (add, edit, test, activate;
// the API key is write-only: typed in, never shown back) and the tokens
// (create, with the secret shown once; revoke).

import type { ConfigView, LlmProfileView } from "@aophub/client/gen/aophub/v1/config_pb.js";
import { ProviderKind } from "@aophub/client/gen/aophub/v1/config_pb.js";
import type { Token } from "@aophub/client/gen/aophub/v1/token_pb.js";

import { errorText, h, replace } from "./dom.js";
import type { Context } from "./main.js";

const SCOPES = ["app", "read", "admin", "node"];
const ADD_ONS = ["workspace", "terminal"];

function date(seconds: bigint | undefined): string {
  return seconds ? new Date(Number(seconds) * 1000).toLocaleString() : "";
}

export function settingsView(context: Context): () => void {
  document.title = "aophub: settings";
  const profiles = h("ul", { class: "agents", id: "profile-list", "aria-label": "LLM profiles" });
  const tokens = h("ul", { class: "agents", id: "token-list", "aria-label": "Tokens" });
  const profileForm = h("div", { id: "profile-form-slot" });
  const tokenForm = newTokenForm(context, () => void loadTokens());
  replace(
    context.main,
    h(
      "section",
      { class: "page" },
      h("h1", {}, "Settings"),
      h("h2", {}, "LLM profiles"),
      profiles,
      h("div", { class: "row" }, h("button", { id: "add-profile", onclick: () => edit(undefined) }, "Add a profile")),
      profileForm,
      h("h2", {}, "Tokens"),
      tokenForm,
      tokens,
    ),
  );
  const { config: configs, tokens: tokenService } = context.link.client.management;
  let current: ConfigView | undefined;

  async function loadProfiles(): Promise<void> {
    try {
      const { config } = await configs.getConfig({});
      current = config;
      const list = config?.profiles ?? [];
      replace(profiles, list.length ? list.map(profileRow) : h("li", { class: "empty" }, "No profile: the agent uses the environment (OPENAI_API_KEY) or echo."));
    } catch (err) {
      context.status(`Cannot read the configuration: ${errorText(err)}`, "error");
    }
  }

  function profileRow(profile: LlmProfileView): HTMLElement {
    const active = current?.activeProfileId === profile.id;
    const result = h("p", { class: "hint", role: "status" });
    return h(
      "li",
      { "data-profile": profile.id },
      h("div", { class: "title" }, profile.name || profile.id, active ? h("span", { class: "badge idle" }, "active") : null),
      h(
        "dl",
        {},
        h("dt", {}, "model"),
        h("dd", {}, profile.model || "—"),
        h("dt", {}, "endpoint"),
        h("dd", {}, profile.baseUrl || "—"),
        h("dt", {}, "API key"),
        h("dd", { class: "key-state" }, profile.apiKeyConfigured ? "set (write-only)" : "not set"),
      ),
      h(
        "div",
        { class: "row" },
        active
          ? null
          : h(
              "button",
              {
                class: "primary",
                onclick: () =>
                  void configs
                    .activateProfile({ requestId: crypto.randomUUID(), profileId: profile.id })
                    .then(() => loadProfiles())
                    .catch((err: unknown) => context.status(errorText(err), "error")),
              },
              "Activate",
            ),
        h(
          "button",
          {
            onclick: () => {
              result.textContent = "Testing…";
              configs
                .testLLM({ profileId: profile.id, prompt: "Say OK." })
                .then((r) => (result.textContent = r.ok ? `OK in ${r.latencyMs} ms (${r.model}): ${r.reply}` : `Failed: ${r.error}`))
                .catch((err: unknown) => (result.textContent = `Failed: ${errorText(err)}`));
            },
          },
          "Test",
        ),
        h("button", { class: "ghost", onclick: () => edit(profile) }, "Edit"),
      ),
      result,
    );
  }

  function edit(profile: LlmProfileView | undefined): void {
    const field = (label: string, name: string, value: string, extra: Record<string, string | boolean> = {}) => {
      const input = h("input", { id: `profile-${name}`, name, value, ...extra });
      return { input, row: h("label", { class: "field" }, label, input) };
    };
    const id = field("Id", "id", profile?.id ?? "", profile ? { readonly: true } : { required: true, pattern: "[a-z0-9][a-z0-9_\\-]*" });
    const name = field("Name", "name", profile?.name ?? "");
    const baseUrl = field("Base URL", "base-url", profile?.baseUrl ?? "https://api.openai.com/v1", { type: "url", required: true });
    const model = field("Model", "model", profile?.model ?? "", { required: true });
    const key = field("API key", "api-key", "", {
      type: "password",
      autocomplete: "off",
      placeholder: profile?.apiKeyConfigured ? "unchanged (set)" : "none",
    });
    const form = h(
      "form",
      {
        class: "login wide",
        "aria-label": profile ? `Edit ${profile.id}` : "Add a profile",
        onsubmit: (event: Event) => {
          event.preventDefault();
          void save({
            id: id.input.value.trim(),
            name: name.input.value.trim(),
            baseUrl: baseUrl.input.value.trim(),
            model: model.input.value.trim(),
            apiKey: key.input.value,
          }).then((ok) => ok && replace(profileForm));
        },
      },
      h("h3", {}, profile ? `Edit ${profile.id}` : "Add a profile"),
      id.row,
      name.row,
      baseUrl.row,
      model.row,
      key.row,
      h("div", { class: "row" }, h("button", { type: "submit", class: "primary", id: "save-profile" }, "Save"), h("button", { type: "button", class: "ghost", onclick: () => replace(profileForm) }, "Cancel")),
    );
    replace(profileForm, form);
    (profile ? name.input : id.input).focus();
  }

  async function save(changed: { id: string; name: string; baseUrl: string; model: string; apiKey: string }): Promise<boolean> {
    if (!current) return false;
    const keep = (p: LlmProfileView) => ({
      id: p.id,
      name: p.name,
      provider: p.provider,
      baseUrl: p.baseUrl,
      model: p.model,
      maxTokens: p.maxTokens,
      contextWindow: p.contextWindow,
      timeoutSeconds: p.timeoutSeconds,
      images: p.images,
    });
    const existing = current.profiles.find((p) => p.id === changed.id);
    const edited = {
      ...(existing ? keep(existing) : { provider: ProviderKind.OPENAI_COMPATIBLE }),
      id: changed.id,
      name: changed.name,
      baseUrl: changed.baseUrl,
      model: changed.model,
      // Write-only: an empty field keeps the stored key (the hub never sends it back).
      ...(changed.apiKey ? { apiKey: changed.apiKey } : {}),
    };
    const profilesOut = existing
      ? current.profiles.map((p) => (p.id === changed.id ? edited : keep(p)))
      : [...current.profiles.map(keep), edited];
    try {
      await configs.updateConfig({
        requestId: crypto.randomUUID(),
        expectedRevision: current.revision,
        config: {
          profiles: profilesOut,
          activeProfileId: current.activeProfileId,
          agent: current.agent,
          scans: current.scans,
          sandbox: current.sandbox,
          interactions: current.interactions,
          llmPush: current.llmPush,
        },
      });
      context.status("Saved.");
      await loadProfiles();
      return true;
    } catch (err) {
      context.status(`Not saved: ${errorText(err)}`, "error");
      return false;
    }
  }

  async function loadTokens(): Promise<void> {
    try {
      const { tokens: list } = await tokenService.listTokens({});
      replace(tokens, list.length ? list.map(tokenRow) : h("li", { class: "empty" }, "No named token (only the access key)."));
    } catch (err) {
      context.status(`Cannot list tokens: ${errorText(err)}`, "error");
    }
  }

  function tokenRow(token: Token): HTMLElement {
    return h(
      "li",
      { "data-token": token.name },
      h("div", { class: "title" }, token.name, token.expired ? h("span", { class: "badge offline" }, "expired") : null),
      h(
        "dl",
        {},
        h("dt", {}, "scopes"),
        h("dd", {}, token.scopes.join(", ")),
        token.nodeId ? h("dt", {}, "node") : null,
        token.nodeId ? h("dd", {}, token.nodeId) : null,
        h("dt", {}, "created"),
        h("dd", {}, date(token.createdAt?.seconds)),
        token.expiresAt ? h("dt", {}, "expires") : null,
        token.expiresAt ? h("dd", {}, date(token.expiresAt.seconds)) : null,
      ),
      h(
        "div",
        { class: "row" },
        h(
          "button",
          {
            class: "danger",
            onclick: () => {
              if (!confirm(`Revoke the token “${token.name}”? Its connections close at once.`)) return;
              tokenService
                .revokeToken({ name: token.name })
                .then(() => loadTokens())
                .catch((err: unknown) => context.status(errorText(err), "error"));
            },
          },
          "Revoke",
        ),
      ),
    );
  }

  void loadProfiles();
  void loadTokens();
  return () => {};
}

function newTokenForm(context: Context, created: () => void): HTMLElement {
  const name = h("input", { id: "token-name", required: true, placeholder: "Name (e.g. phone)", "aria-label": "Token name", class: "grow" });
  const scope = h("select", { id: "token-scope", "aria-label": "Scope" }, SCOPES.map((s) => h("option", { value: s }, s)));
  const addOns = ADD_ONS.map((s) => h("input", { type: "checkbox", value: s, id: `token-${s}` }));
  const days = h("input", { id: "token-days", type: "number", min: "0", value: "30", "aria-label": "Days until it expires (0: never)", class: "narrow" });
  const secret = h("output", { id: "token-secret", class: "secret", "aria-live": "polite" });
  return h(
    "form",
    {
      class: "create",
      onsubmit: (event: Event) => {
        event.preventDefault();
        const expires = Number(days.value) > 0 ? new Date(Date.now() + Number(days.value) * 86_400_000) : undefined;
        context.link.client.management.tokens
          .createToken({
            name: name.value.trim(),
            scopes: [scope.value, ...addOns.filter((a) => a.checked).map((a) => a.value)],
            expiresAt: expires ? { seconds: BigInt(Math.floor(expires.getTime() / 1000)), nanos: 0 } : undefined,
          })
          .then(({ secret: value }) => {
            replace(secret, "Secret (shown once, copy it now): ", h("code", {}, value));
            name.value = "";
            created();
          })
          .catch((err: unknown) => context.status(`Not created: ${errorText(err)}`, "error"));
      },
    },
    name,
    scope,
    ...addOns.map((a) => h("label", { class: "check" }, a, a.value)),
    h("label", { class: "check" }, days, "days"),
    h("button", { type: "submit", class: "primary", id: "create-token" }, "Create token"),
    secret,
  );
}
