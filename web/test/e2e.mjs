// End-to-end tests of the web console in Debian's chromium, driven by playwright-core.
// tests/test_web_e2e.py starts a hub and runs one scenario per process:
//
//   node web/test/e2e.mjs echo       login (wrong token, then right), a turn with the echo
//                                    agent, cancel, a cut WebSocket mid-answer, sessions,
//                                    agents, logout, the phone viewport
//   node web/test/e2e.mjs approval   approve a tool call of the fake provider from one
//                                    browser context while a second one watches (first
//                                    answer wins, the other view updates)
//   node web/test/e2e.mjs files      a session's files: browse, download, upload
//   node web/test/e2e.mjs terminal   a shell on the built-in node (terminals on): a command,
//                                    a reload that re-attaches (earlier output once), a
//                                    dropped connection, kill, the phone viewport
//   node web/test/e2e.mjs search     the title search asks the hub: a session far past the
//                                    first page is found by part of its title; paging a search
//   node web/test/e2e.mjs agents     the agents page is live (WatchAgents): a node connecting
//                                    after it opened shows, then goes offline; no ListAgents
//                                    polling; a dropped stream is watched again
//
// Environment: HUB_URL (http://127.0.0.1:PORT), HUB_TOKEN, SCREENSHOTS (a folder),
// CHROMIUM (default /usr/bin/chromium). Every page must log no console error.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

import { chromium } from "playwright-core";

const HUB = process.env.HUB_URL;
const TOKEN = process.env.HUB_TOKEN;
const SHOTS = process.env.SCREENSHOTS ?? "screenshots";
const TIMEOUT = 15_000;
// The console's pause after typing before it asks the hub (web/src/sessions.ts).
const SEARCH_DELAY = 250;
assert.ok(HUB && TOKEN, "set HUB_URL and HUB_TOKEN");
mkdirSync(SHOTS, { recursive: true });

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** axe-core's serious and critical violations on the page as it is now (none allowed). */
async function accessible(page, name) {
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ["violations"] });
    console.debug(`axe: ${result.violations.length} violations, ${result.passes.length} rules passed`);
    return result.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  });
  assert.deepEqual(found, [], `axe-core finds serious violations on ${name}`);
}

const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const DESKTOP = { viewport: { width: 1280, height: 800 } };

/** Console errors of a page; `expect` lets one known message through once (a refused login's 401). */
function watchConsole(page, errors) {
  page.on("console", (message) => {
    if (message.type() === "debug") console.log(message.text());
    if (message.type() === "error") errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(String(error)));
}

async function newPage(browser, options, errors) {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  watchConsole(page, errors);
  return { context, page };
}

/** A screenshot of the page, after checking it with axe-core. */
async function shot(page, name) {
  await accessible(page, name);
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: false });
}

/** The stored events of a session, through the Connect JSON protocol with the bearer token. */
async function storedEvents(sessionId) {
  const response = await fetch(`${HUB}/aophub.v1.SessionService/ListEvents`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ sessionId }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return ((await response.json()).events ?? []).map((d) => d.event);
}

async function storedAssistantTexts(sessionId) {
  return (await storedEvents(sessionId))
    .filter((e) => e.message?.role === "assistant")
    .map((e) => (e.message.content ?? []).map((c) => c.text?.text ?? "").join(""));
}

/** A new named token with scopes (TokenService.CreateToken); its secret. */
async function createToken(name, scopes, expiresAt) {
  const response = await fetch(`${HUB}/aophub.v1.TokenService/CreateToken`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ name, scopes, ...(expiresAt ? { expiresAt: expiresAt.toISOString() } : {}) }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()).secret;
}

async function login(page, token = TOKEN) {
  await page.goto(HUB);
  await page.fill("#token", token);
  await page.press("#token", "Enter");
}

async function newSession(page, title) {
  await page.goto(`${HUB}/#/sessions`);
  await page.waitForSelector("#new-agent option[value='local']", { state: "attached" });
  await page.fill("#new-title", title);
  await page.click("#new-session");
  await page.waitForURL(/#\/s\//);
  return decodeURIComponent(page.url().split("#/s/")[1]);
}

/** Types a title search and waits until the list shows the hub's answer to it. */
async function search(page, text) {
  await page.fill("#search", text);
  await page.waitForSelector(`#session-list[data-query="${text}"]`, { state: "attached" });
}

/** The Connect requests of a management method the page sends (its full path), collected from now on. */
function requestsOf(page, method) {
  const seen = [];
  page.on("request", (request) => {
    if (new URL(request.url()).pathname === `/aophub.v1.${method}`) seen.push(request);
  });
  return seen;
}

/** The text of the last assistant bubble once it holds the complete message. */
async function finalAnswer(page) {
  const bubble = page.locator(".message.assistant[data-final]").last();
  await bubble.waitFor();
  return (await bubble.locator(".body").textContent()) ?? "";
}

async function echo(browser) {
  const errors = [];
  const { context, page } = await newPage(browser, DESKTOP, errors);

  // A wrong token: a clear message, and still the login form.
  await login(page, "not-the-key");
  const refused = await page.locator("#login-error").textContent({ timeout: TIMEOUT });
  await page.waitForFunction(() => document.querySelector("#login-error")?.textContent !== "");
  assert.match(await page.locator("#login-error").textContent(), /refused this token/i, refused ?? "");
  await shot(page, "login-refused-desktop");
  // The browser itself logs the 401 of the refused login; nothing else may be logged.
  assert.ok(errors.every((e) => /401/.test(e)), errors.join("\n"));
  errors.length = 0;

  // Log in: the sessions page, the connection indicator online, the cookie HttpOnly and SameSite=Strict.
  await page.fill("#token", TOKEN);
  await page.press("#token", "Enter");
  await page.waitForSelector("#link-state[data-state='online']");
  const [cookie] = (await context.cookies()).filter((c) => c.name !== "");
  assert.ok(cookie.httpOnly, "the session cookie is HttpOnly");
  assert.equal(cookie.sameSite, "Strict");
  assert.equal(await page.evaluate(() => document.cookie), "", "the page's script cannot read the cookie");
  await shot(page, "sessions-desktop");

  // Paging: 21 sessions opened before the test ("paged 00".."paged 20"), 20 a page, "More" loads the rest.
  await page.locator("#session-list [data-session]").nth(19).waitFor();
  assert.equal(await page.locator("#session-list [data-session]").count(), 20);
  await page.click("#more");
  await page.locator("#session-list [data-session]").nth(20).waitFor();
  await page.locator("#more").waitFor({ state: "hidden" });
  await search(page, "paged 07");
  assert.equal(await page.locator("#session-list [data-session]").count(), 1);
  await search(page, "");

  // A turn with the echo agent, streamed then complete, equal to the stored message.
  const sessionId = await newSession(page, "web e2e echo");
  await page.fill("#prompt", "hello from the console");
  await page.keyboard.press("Enter");
  assert.equal(await finalAnswer(page), "echo: hello from the console");
  assert.deepEqual(await storedAssistantTexts(sessionId), ["echo: hello from the console"]);
  await page.locator("#cancel").waitFor({ state: "hidden" });
  await shot(page, "chat-desktop");

  // Attach a file: sent as a MediaContent part of the input, shown on the user's message.
  await page.setInputFiles("#attach", { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("alpha\n") });
  await page.locator("#attachments li", { hasText: "notes.txt" }).waitFor();
  await page.fill("#prompt", "see attached");
  await page.click("#send");
  await page.locator(".message.user[data-final] .file", { hasText: "notes.txt" }).waitFor();
  await page.locator(".message.assistant[data-final]", { hasText: "echo: see attached" }).waitFor();
  assert.equal(await page.locator("#attachments li").count(), 0, "sent files leave the composer");
  const userMessages = (await storedEvents(sessionId)).filter((e) => e.message?.role === "user");
  const media = userMessages.at(-1).message.content.find((c) => c.media)?.media;
  assert.equal(media?.resource?.filename, "notes.txt");
  assert.equal(Buffer.from(media.resource.data, "base64").toString(), "alpha\n");

  // Regenerate: a turn with TurnOptions.regenerate and no input answers again, as a new message
  // (the echo model has no history: it answers the empty input).
  await page.locator("#regenerate").waitFor();
  const answers = await page.locator(".message.assistant[data-final]").count();
  await page.click("#regenerate");
  await page.locator(".message.assistant[data-final]").nth(answers).waitFor();
  const regenerated = (await storedEvents(sessionId)).filter((e) => e.turnStarted !== undefined).length;
  assert.ok(regenerated >= 3, "the regenerate ran as a turn of its own");

  // The busy policy: with a turn running, "reject" refuses the next one, "interrupt" cancels the running one for it.
  const busy = Array.from({ length: 200 }, (_, i) => `b${i}`).join(" ");
  await page.fill("#prompt", busy);
  await page.click("#send");
  await page.locator(".message.assistant:not([data-final])").last().filter({ hasText: "b3" }).waitFor();
  await page.selectOption("#policy", { label: "reject" });
  await page.fill("#prompt", "refused");
  await page.click("#send");
  await page.locator(".toast[data-kind='error']", { hasText: "Not sent" }).waitFor();
  errors.splice(0, errors.length, ...errors.filter((e) => !/Not sent/.test(e)));
  await page.selectOption("#policy", { label: "interrupt" });
  await page.fill("#prompt", "after the interrupt");
  await page.click("#send");
  await page.locator(".notice[data-stop='canceled']").waitFor();
  await page.locator(".message.assistant[data-final]", { hasText: "echo: after the interrupt" }).waitFor();
  await page.selectOption("#policy", { label: "queue" });
  await shot(page, "chat-policy-desktop");

  // Cancel a turn: a long answer, Stop while it streams; the turn ends canceled.
  const long = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
  await page.fill("#prompt", long);
  await page.click("#send");
  await page.locator(".message.assistant:not([data-final])").last().filter({ hasText: "w3" }).waitFor();
  await page.click("#cancel");
  await page.locator(".notice[data-stop='canceled']").nth(1).waitFor();
  await page.locator("#cancel").waitFor({ state: "hidden" });
  await shot(page, "chat-canceled-desktop");

  // Cut the WebSocket mid-answer: the indicator shows it, the client resumes from its cursor,
  // and the final text equals the stored message exactly (no missing, no doubled word).
  const sockets = [];
  await page.routeWebSocket(/\/api\/aop\/application\/ws$/, (ws) => {
    ws.connectToServer();
    sockets.push(ws);
  });
  await page.reload();
  await page.waitForSelector("#link-state[data-state='online']");
  assert.equal(sockets.length, 1, "the reloaded page connects through the route");
  const cut = Array.from({ length: 80 }, (_, i) => `c${i}`).join(" ");
  await page.fill("#prompt", cut);
  await page.click("#send");
  await page.locator(".message.assistant:not([data-final])").last().filter({ hasText: "c5" }).waitFor();
  await sockets[0].close({ code: 4000, reason: "cut by the test" });
  await page.waitForSelector("#link-state:not([data-state='online'])");
  await shot(page, "chat-offline-desktop");
  await page.waitForSelector("#link-state[data-state='online']");
  assert.ok(sockets.length >= 2, "the client reconnected");
  await page.locator(".message.assistant[data-final]").filter({ hasText: "c79" }).waitFor();
  const texts = await storedAssistantTexts(sessionId);
  const stored = texts.at(-1);
  assert.equal(stored, `echo: ${cut}`);
  const shown = await page.locator(".message.assistant .body").allTextContents();
  assert.equal(shown.at(-1), stored, "the final text equals the stored message");
  assert.equal(page.locator(`.message.assistant`).filter({ hasText: "c79" }).count !== undefined, true);
  assert.equal(await page.locator(".message.assistant").filter({ hasText: "c79" }).count(), 1, "one bubble per message");

  // Sessions: rename, archive; agents: the built-in node online with its model.
  await page.goto(`${HUB}/#/sessions`);
  const row = page.locator(`[data-session="${sessionId}"]`);
  await row.locator("summary").click();
  await row.getByRole("button", { name: "Rename" }).click();
  await row.getByLabel("New title").fill("renamed in the console");
  await row.getByLabel("New title").press("Enter");
  await page.locator(`[data-session="${sessionId}"] .title`, { hasText: "renamed in the console" }).waitFor();
  await search(page, "renamed");
  assert.equal(await page.locator("#session-list [data-session]").count(), 1);
  await search(page, "");
  await page.goto(`${HUB}/#/agents`);
  await page.locator("[data-node='local'][data-state='idle']").waitFor();
  assert.match(await page.locator("[data-node='local']").textContent(), /echo/);
  await shot(page, "agents-desktop");

  // Keyboard: the login-free shell is reachable by Tab, with a skip link first (on a fresh load:
  // the agents page has links of its own, after which Tab would go on from the last focus).
  await page.reload();
  await page.locator("[data-node='local']").waitFor();
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Skip to content");

  // A scan: submitted, watched live to its end (a watch on the WebSocket, no re-reads of
  // GetScan), its report read.
  const scanReads = [];
  const countScanReads = (request) => request.url().endsWith("/aophub.v1.ScanService/GetScan") && scanReads.push(request.url());
  page.on("request", countScanReads);
  await page.goto(`${HUB}/#/scans`);
  await page.fill("#scan-target", "web/src");
  await page.click("#submit-scan");
  await page.waitForURL(/#\/scan\//);
  await page.locator("#scan-state[data-status='completed']").waitFor();
  await page.locator("#scan-report", { hasText: "echo: Review the code at web/src" }).waitFor();
  page.off("request", countScanReads);
  assert.deepEqual(scanReads, [], "the scan's progress comes from its watch");
  await shot(page, "scan-desktop");
  await page.goto(`${HUB}/#/scans`);
  await page.locator("#scan-list [data-scan]", { hasText: "web/src" }).waitFor();
  await shot(page, "scans-desktop");

  // Archive, then delete a session of its own.
  const spare = await newSession(page, "to archive and delete");
  await page.goto(`${HUB}/#/sessions`);
  const spareRow = page.locator(`[data-session="${spare}"]`);
  await spareRow.locator("summary").click();
  await spareRow.getByRole("button", { name: "Archive" }).click();
  await spareRow.waitFor({ state: "detached" });
  await page.check("#show-archived");
  await spareRow.locator(".badge", { hasText: "archived" }).waitFor();
  await spareRow.locator("summary").click();
  page.once("dialog", (dialog) => void dialog.accept());
  await spareRow.getByRole("button", { name: "Delete" }).click();
  await spareRow.waitFor({ state: "detached" });
  await page.uncheck("#show-archived");

  // Settings (admin): a profile with a write-only key, tested; a token created (secret once) and revoked.
  await page.goto(`${HUB}/#/settings`);
  await page.click("#add-profile");
  await page.fill("#profile-id", "nowhere");
  await page.fill("#profile-name", "Nowhere");
  await page.fill("#profile-base-url", "http://127.0.0.1:9/v1");
  await page.fill("#profile-model", "none");
  await page.fill("#profile-api-key", "sk-web-secret");
  await page.click("#save-profile");
  const profile = page.locator("[data-profile='nowhere']");
  await profile.locator(".key-state", { hasText: "set (write-only)" }).waitFor();
  assert.equal(await page.locator("#profile-api-key").count(), 0, "the form closed");
  assert.ok(!(await page.content()).includes("sk-web-secret"), "the key is never shown back");
  await profile.getByRole("button", { name: "Edit" }).click();
  assert.equal(await page.locator("#profile-api-key").inputValue(), "", "editing shows no key");
  await page.fill("#profile-model", "other");
  await page.click("#save-profile");
  await profile.locator("dd", { hasText: "other" }).waitFor();
  await profile.locator(".key-state", { hasText: "set (write-only)" }).waitFor();
  await profile.getByRole("button", { name: "Test" }).click();
  await profile.locator("[role='status']", { hasText: "Failed" }).waitFor();
  await page.fill("#token-name", "web-phone");
  await page.click("#create-token");
  await page.locator("#token-secret code").waitFor();
  await page.locator("[data-token='web-phone']").waitFor();
  await shot(page, "settings-desktop");
  page.once("dialog", (dialog) => void dialog.accept());
  await page.locator("[data-token='web-phone']").getByRole("button", { name: "Revoke" }).click();
  await page.locator("[data-token='web-phone']").waitFor({ state: "detached" });

  // Logout: back to the login form; the cookie is gone.
  await page.click("#logout");
  await page.waitForSelector("#token");
  assert.equal((await context.cookies()).length, 0);
  await context.close();

  // A read-only token: what it may not do is hidden (no new session, no composer, no actions).
  const reader = await newPage(browser, DESKTOP, errors);
  await login(reader.page, await createToken("web-reader", ["read"]));
  await reader.page.waitForSelector("#link-state[data-state='online']");
  await reader.page.locator("#session-list").waitFor();
  assert.equal(await reader.page.locator("#new-session, .actions, #nav-settings").count(), 0);
  await shot(reader.page, "sessions-read-only-desktop");
  await reader.context.close();

  // An expired token: the login says so.
  const expiry = new Date(Date.now() + 1500);
  const expiring = await createToken("web-expiring", ["app"], expiry);
  const late = await newPage(browser, DESKTOP, []);
  await late.page.waitForFunction((at) => Date.now() > at + 100, expiry.getTime(), { polling: 100 });
  await login(late.page, expiring);
  await late.page.waitForFunction(() => document.querySelector("#login-error")?.textContent !== "");
  assert.match(await late.page.locator("#login-error").textContent(), /expired/i);
  await late.context.close();

  // The phone viewport: log in, a turn, nothing wider than the screen.
  const phone = await newPage(browser, PHONE, errors);
  await login(phone.page);
  await phone.page.waitForSelector("#link-state[data-state='online']");
  await shot(phone.page, "sessions-phone");
  await newSession(phone.page, "phone");
  await phone.page.fill("#prompt", "from a phone");
  await phone.page.click("#send");
  assert.equal(await finalAnswer(phone.page), "echo: from a phone");
  const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow} px wider than the phone`);
  for (const control of ["#logout", "#send", "#link-state"]) {
    const box = await phone.page.locator(control).boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `${control} is on the phone's screen: ${JSON.stringify(box)}`);
  }
  await shot(phone.page, "chat-phone");
  await phone.page.goto(`${HUB}/#/scans`);
  await phone.page.locator("#scan-list [data-scan]").first().waitFor();
  await shot(phone.page, "scans-phone");
  const lastLink = await phone.page.locator("header nav a").last().boundingBox();
  const indicator = await phone.page.locator("#link-state").boundingBox();
  assert.ok(lastLink && indicator && lastLink.x + lastLink.width <= indicator.x, "the header's links do not run under the indicator");
  await phone.page.goto(`${HUB}/#/agents`);
  await phone.page.locator("[data-node='local']").waitFor();
  await shot(phone.page, "agents-phone");
  await phone.page.goto(`${HUB}/#/settings`);
  await phone.page.locator("[data-profile='nowhere']").waitFor();
  await shot(phone.page, "settings-phone");
  await phone.context.close();

  assert.deepEqual(errors, [], "no console errors");
}

async function searching(browser) {
  // tests/test_web_e2e.py opened 45 sessions "paged 00".."paged 44", oldest first, then one
  // called "The Needle (oldest)" before them all: far past the first page of 20.
  const errors = [];
  const { context, page } = await newPage(browser, PHONE, errors);
  const lists = requestsOf(page, "SessionService/ListSessions");
  await login(page);
  await page.locator("#session-list [data-session]").nth(19).waitFor();
  assert.equal(await page.locator("#session-list .title", { hasText: "Needle" }).count(), 0, "not on the first page");
  const before = lists.length;
  const typed = Date.now();
  await page.fill("#search", "nEEDLE (old");
  const found = page.locator("#session-list .title", { hasText: "The Needle (oldest)" });
  await found.waitFor();
  console.log(`e2e search: found after ${Date.now() - typed} ms (${SEARCH_DELAY} ms of it the typing pause)`);
  assert.equal(await page.locator("#session-list [data-session]").count(), 1);
  const asked = lists.slice(before);
  assert.ok(asked.length >= 1, "the search went to the hub");
  assert.ok(asked.at(-1).postDataBuffer().includes("nEEDLE (old"), "the hub was asked for the typed text");
  assert.ok(await page.locator("#more").isHidden(), "one match: no more pages");
  // Wildcards are plain text: "%" finds nothing here (no title has one).
  await search(page, "%");
  await page.locator("#session-list li.empty", { hasText: "No title matches." }).waitFor();
  await shot(page, "sessions-search-phone");
  // The search pages like the list: 45 "paged" titles, 20 a page, More continues the same search.
  await search(page, "PAGED");
  await page.locator("#session-list [data-session]").nth(19).waitFor();
  await page.click("#more");
  await page.locator("#session-list [data-session]").nth(39).waitFor();
  await page.click("#more");
  await page.locator("#session-list [data-session]").nth(44).waitFor();
  await page.locator("#more").waitFor({ state: "hidden" });
  assert.equal(await page.locator("#session-list [data-session]").count(), 45);
  assert.equal(await page.locator("#session-list .title", { hasText: "Needle" }).count(), 0);
  await context.close();
  assert.deepEqual(errors, [], "no console errors");
}

async function agents(browser) {
  // The agents page is live from WatchAgents: tests/test_web_e2e.py connects the node
  // "late-node" once this prints "agents page open", and ends it once the page showed it.
  const errors = [];
  const { context, page } = await newPage(browser, DESKTOP, errors);
  await login(page);
  await page.waitForSelector("#link-state[data-state='online']");
  const polls = requestsOf(page, "AgentService/ListAgents");
  const watches = requestsOf(page, "AgentService/WatchAgents");
  // The first watch drops at once (an end of stream with an error): the page watches again.
  const end = Buffer.from(JSON.stringify({ error: { code: "unavailable", message: "dropped by the test" } }));
  const frame = Buffer.concat([Buffer.from([2]), Buffer.from([0, 0, 0, end.length]), end]);
  await page.route(/\/aophub\.v1\.AgentService\/WatchAgents$/, (route) =>
    route.fulfill({ status: 200, contentType: "application/connect+proto", body: frame }), { times: 1 });
  await page.goto(`${HUB}/#/agents`);
  await page.locator("[data-node='local'][data-state='idle']").waitFor();
  await page.locator("#agent-list[data-feed='live']").waitFor();
  assert.ok(watches.length >= 2, "the page watched again after the dropped stream");
  // A focused Terminal link keeps its focus while another node's row comes and changes.
  await page.locator("[data-node='local'] .terminal-link").focus();
  console.log("e2e agents: agents page open");
  await page.locator("[data-node='late-node']").waitFor();
  console.log(`e2e agents: late-node shown at ${Date.now()}`);
  await page.locator("[data-node='late-node'][data-state='offline']").waitFor();
  const focused = await page.evaluate(() => document.activeElement?.closest("[data-node]")?.getAttribute("data-node"));
  assert.equal(focused, "local", "the focused link kept its focus");
  await shot(page, "agents-live-desktop");
  assert.deepEqual(polls.map((r) => r.url()), [], "the agents page does not poll ListAgents");
  await context.close();
  assert.deepEqual(errors, [], "no console errors");
}

async function approval(browser) {
  const errors = [];
  const first = await newPage(browser, PHONE, errors);
  const second = await newPage(browser, DESKTOP, errors);
  await login(first.page);
  await first.page.waitForSelector("#link-state[data-state='online']");
  const sessionId = await newSession(first.page, "approval");
  await login(second.page);
  await second.page.waitForSelector("#link-state[data-state='online']");
  await second.page.goto(`${HUB}/#/s/${encodeURIComponent(sessionId)}`);
  await second.page.locator("#prompt").waitFor();

  await first.page.fill("#prompt", "read my notes");
  await first.page.click("#send");
  for (const { page } of [first, second]) {
    await page.locator(".interaction[data-state='pending'] [data-answer='approve']").waitFor();
  }
  await shot(first.page, "approval-pending-phone");
  // The sessions list counts the approval waiting.
  const list = await newPage(browser, DESKTOP, errors);
  await login(list.page);
  await list.page.locator(`[data-session="${sessionId}"] .badge.pending`, { hasText: "1 pending" }).waitFor();
  await shot(list.page, "sessions-pending-desktop");
  await list.context.close();
  await shot(second.page, "approval-pending-desktop");
  await first.page.click(".interaction [data-answer='approve']");
  // The other view updates: the answered card, its buttons gone.
  for (const { page } of [first, second]) {
    await page.locator(".interaction[data-state='answered']", { hasText: "Approved" }).waitFor();
    assert.equal(await page.locator(".interaction [data-answer]").count(), 0);
    await page.locator(".tool[data-state='done'] .tool-name", { hasText: "read_file" }).waitFor();
  }
  // The turn goes on with the tool's result to the final answer, shown in both.
  for (const { page } of [first, second]) assert.equal(await finalAnswer(page), "the notes say alpha");
  await shot(first.page, "approval-done-phone");
  await shot(second.page, "approval-done-desktop");

  // The console's client tools: a choice answered in the second view, then a JSON-schema form in the first.
  await first.page.fill("#prompt", "ask me things");
  await first.page.click("#send");
  await second.page.locator(".interaction[data-state='pending'] [data-answer='blue']").click();
  await first.page.locator(".interaction[data-state='answered']", { hasText: "Answered: blue" }).waitFor();
  const form = first.page.locator(".interaction[data-state='pending'] form.schema-form");
  await form.getByLabel("name *").fill("Ada");
  await form.getByLabel("age").fill("36");
  await form.getByLabel("subscribe").check();
  await shot(first.page, "client-tool-form-phone");
  await form.getByRole("button", { name: "Send" }).click();
  for (const { page } of [first, second]) {
    await page.locator(".message.assistant[data-final]", { hasText: "thanks, Ada" }).waitFor();
    assert.equal(await page.locator(".interaction[data-state='pending']").count(), 0);
  }
  assert.deepEqual(errors, [], "no console errors");
}

async function files(browser) {
  const errors = [];
  for (const [options, suffix] of [[DESKTOP, "desktop"], [PHONE, "phone"]]) {
    const { context, page } = await newPage(browser, { ...options, acceptDownloads: true }, errors);
    await login(page);
    await page.waitForSelector("#link-state[data-state='online']");
    await page.waitForSelector("#new-agent option[value='files-node']", { state: "attached" });
    await page.selectOption("#new-agent", "files-node");
    await page.fill("#new-title", `files ${suffix}`);
    await page.click("#new-session");
    await page.waitForURL(/#\/s\//);
    await page.click("#files-link");
    await page.locator("#file-list [data-entry='notes.txt']").waitFor();
    await shot(page, `files-${suffix}`);
    if (suffix === "phone") {
      await context.close();
      continue;
    }
    const [download] = await Promise.all([page.waitForEvent("download"), page.locator("[data-entry='notes.txt'] button").click()]);
    assert.equal(download.suggestedFilename(), "notes.txt");
    const chunks = [];
    for await (const chunk of await download.createReadStream()) chunks.push(chunk);
    assert.equal(Buffer.concat(chunks).toString(), "alpha\nbeta\n");
    await page.locator("[data-entry='src'] button").click();
    await page.locator("#file-list [data-entry='main.py']").waitFor();
    assert.equal(await page.locator("#files-path").textContent(), "/src");
    await page.setInputFiles("#upload", { name: "uploaded.txt", mimeType: "text/plain", buffer: Buffer.from("from the browser\n") });
    await page.locator("#file-list [data-entry='uploaded.txt']").waitFor();
    await context.close();
  }
  assert.deepEqual(errors, [], "no console errors");
}

/** The terminal's screen as text: xterm.js's rows, one line each (its DOM renderer). */
async function screenText(page) {
  const rows = await page.locator("#terminal .xterm-rows > div").allTextContents();
  return rows.map((row) => row.replaceAll("\u00a0", " ").trimEnd()).join("\n");
}

/** Waits until the screen shows text (a string) and returns the screen. */
async function waitForScreen(page, text) {
  await page.waitForFunction(
    (wanted) =>
      Array.from(document.querySelectorAll("#terminal .xterm-rows > div"), (row) => row.textContent.replaceAll("\u00a0", " "))
        .join("\n")
        .includes(wanted),
    text,
  );
  return screenText(page);
}

function count(haystack, needle) {
  return haystack.split(needle).length - 1;
}

// A shell on the built-in node: xterm.js loads only now, a command's output shows; after a reload
// the page attaches to the same shell and shows its earlier output once, then new output.
async function terminal(browser) {
  const errors = [];
  const { context, page } = await newPage(browser, DESKTOP, errors);
  const scripts = [];
  page.on("request", (request) => request.resourceType() === "script" && scripts.push(new URL(request.url()).pathname));
  await login(page);
  await page.waitForSelector("#link-state[data-state='online']");
  assert.ok(!scripts.some((path) => path.includes("terminal_screen")), `xterm.js is not in the first load: ${scripts}`);
  await page.click("#nav-agents");
  await page.locator("#agent-list[data-feed='live']").waitFor();
  await page.locator("[data-node='local'] .terminal-link").focus();
  await page.keyboard.press("Enter");
  await page.waitForURL(/#\/terminal\/local$/);
  await page.waitForSelector("#terminal[data-session]:not([data-session=''])");
  assert.ok(scripts.some((path) => path.includes("terminal_screen")), "xterm.js loads when the terminal opens");
  const sessionId = await page.getAttribute("#terminal", "data-session");
  await page.click("#terminal");
  await page.keyboard.type("echo one-$((40+2))\n");
  assert.equal(count(await waitForScreen(page, "one-42"), "one-42"), 1);
  await shot(page, "terminal-desktop");

  const sockets = [];
  await page.routeWebSocket(/\/api\/aop\/application\/ws$/, (ws) => {
    ws.connectToServer();
    sockets.push(ws);
  });
  await page.reload();
  await page.waitForSelector(`#terminal[data-session='${sessionId}']`);
  let text = await waitForScreen(page, "one-42");
  assert.equal(count(text, "one-42"), 1, `the earlier output once after the reload:\n${text}`);
  assert.equal(count(text, "echo one-$((40+2))"), 1, `the earlier command once:\n${text}`);
  await page.click("#terminal");
  await page.keyboard.type("echo two-$((50+5))\n");
  text = await waitForScreen(page, "two-55");
  assert.equal(count(text, "one-42"), 1, `still once:\n${text}`);
  assert.equal(count(text, "two-55"), 1, text);

  // The connection drops and comes back: the page re-attaches and adds only what is new.
  await sockets.at(-1).close({ code: 4000, reason: "cut by the test" });
  await page.waitForSelector("#link-state:not([data-state='online'])");
  await page.waitForSelector("#link-state[data-state='online']");
  assert.ok(sockets.length >= 2, "the client reconnected");
  await page.click("#terminal");
  await page.keyboard.type("echo three-$((60+6))\n");
  text = await waitForScreen(page, "three-66");
  assert.deepEqual([count(text, "one-42"), count(text, "two-55"), count(text, "three-66")], [1, 1, 1], text);

  await page.click("#terminal-kill");
  await page.locator("#terminal-state", { hasText: "The shell ended" }).waitFor();
  await context.close();

  const phone = await newPage(browser, PHONE, errors);
  await login(phone.page);
  await phone.page.waitForSelector("#link-state[data-state='online']");
  await phone.page.goto(`${HUB}/#/terminal/local`);
  await phone.page.waitForSelector("#terminal[data-session]:not([data-session=''])");
  await shot(phone.page, "terminal-phone");
  await phone.context.close();
  assert.deepEqual(errors, [], "no console errors");
}

const scenarios = { echo, approval, files, terminal, search: searching, agents };
const name = process.argv[2];
assert.ok(name in scenarios, `usage: node e2e.mjs ${Object.keys(scenarios).join("|")}`);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-dev-shm-usage"],
});
try {
  await scenarios[name](browser);
  console.log(`e2e ${name}: passed`);
} finally {
  await browser.close();
}
