// The shared client conformance scenario (clients/conformance/README.md), run
// against a real hub started once for this file.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { create, equals, type MessageInitShape } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { Code as ConnectCode, ConnectError } from "@connectrpc/connect";
import { WebSocket as WS } from "ws";

import {
  approve,
  AophubError,
  Code,
  connect,
  createManagement,
  errorCode,
  interactionOf,
  isPending,
  isTurnEnded,
  messageOf,
  text,
  userText,
  type Client,
  type ClientOptions,
  type Delivery,
  type Interaction,
  type Watch,
  type WebSocketFactory,
  type WebSocketLike,
} from "../src/index.js";
import { SessionSchema } from "../src/gen/aop/chat_pb.js";
import { EventSchema } from "../src/gen/aop/event_pb.js";
import { ProtocolMessageSchema } from "../src/gen/aop/protocol_pb.js";
import { InteractionKind, InteractionState } from "../src/gen/aophub/v1/interaction_pb.js";
import { TurnOptionsSchema, TurnPolicy } from "../src/gen/aophub/v1/extensions_pb.js";
import { type ConformanceHub, Cutter, startHub } from "./support/hub.js";

const STEP = { timeout: 60_000 };

let hub: ConformanceHub;
let stopHub: () => Promise<void>;
const clients: Client[] = [];

before(async () => {
  ({ hub, stop: stopHub } = await startHub());
});

after(async () => {
  for (const client of clients) client.close();
  await stopHub();
});

async function dial(options?: ClientOptions): Promise<Client> {
  const client = await connect(hub.url, hub.token, options);
  clients.push(client);
  return client;
}

/** The next delivery of a watch; fails the test when the watch has ended. */
async function next(watch: Watch): Promise<Delivery> {
  const result = await watch.next();
  assert.ok(!result.done, "the watch ended");
  return result.value;
}

/** Reads deliveries until match accepts one, and returns it. */
async function until(watch: Watch, match: (d: Delivery) => boolean): Promise<Delivery> {
  for (;;) {
    const d = await next(watch);
    if (match(d)) return d;
  }
}

/** The stored events of a session (ListEvents, every page). */
async function listAll(client: Client, sessionId: string, after = ""): Promise<Delivery[]> {
  const stored: Delivery[] = [];
  for await (const d of client.events(sessionId, after)) stored.push(d);
  return stored;
}

/** Fails unless got is exactly want: the same cursors, equal events, the same order. */
function sameSequence(got: Delivery[], want: Delivery[]): void {
  assert.equal(got.length, want.length, `the watch yielded ${got.length} persisted events, the hub stores ${want.length}`);
  want.forEach((w, i) => {
    assert.equal(got[i]?.cursor, w.cursor, `event ${i}: cursor`);
    assert.ok(equals(EventSchema, got[i]!.event, w.event), `event ${i} (cursor ${w.cursor}) differs from the stored one`);
  });
}

async function rejects(promise: Promise<unknown>, code: string): Promise<AophubError> {
  const err = await promise.then(
    () => assert.fail(`want an error with code ${code}, got success`),
    (e: unknown) => e,
  );
  assert.equal(errorCode(err), code, `want an error with code ${code}, got ${String(err)}`);
  return err as AophubError;
}

function connectCode(err: unknown): ConnectCode | undefined {
  return err instanceof ConnectError ? err.code : undefined;
}

// Scenario 1: open a session, run two turns to their end, cancel a third.
test("turns: open, run two turns, cancel a third", STEP, async () => {
  const client = await dial();
  const session = await client.openSession({ nodeId: hub.node });
  const watch = client.watch(session.id);

  for (const input of ["hello", "again"]) {
    const turn = await client.runTurn({ sessionId: session.id, input: userText(input) });
    let answer = "";
    const ended = await until(watch, ({ event }) => {
      const message = messageOf(event);
      if (message?.role === "assistant" && event.turnId === turn.turnId) answer = text(message);
      return isTurnEnded(event, turn.turnId);
    });
    assert.equal(ended.event.payload.case === "turnEnded" && ended.event.payload.value.stopReason, "completed");
    assert.equal(answer.trim(), `echo: ${input}`);
  }

  const long = await client.runTurn({ sessionId: session.id, input: userText("long") });
  await until(watch, ({ event }) => messageOf(event)?.role === "assistant" && event.turnId === long.turnId);
  const canceled = await client.cancelTurn({ sessionId: session.id, turnId: long.turnId, reason: "conformance" });
  assert.equal(canceled.state, "canceled");
  const ended = await until(watch, ({ event }) => isTurnEnded(event, long.turnId));
  assert.equal(ended.event.payload.case === "turnEnded" && ended.event.payload.value.stopReason, "canceled");

  const starts = new Map<string, number>();
  const ends = new Map<string, number>();
  for (const { event } of await listAll(client, session.id)) {
    if (event.payload.case === "turnStarted") starts.set(event.turnId, (starts.get(event.turnId) ?? 0) + 1);
    if (event.payload.case === "turnEnded") ends.set(event.turnId, (ends.get(event.turnId) ?? 0) + 1);
  }
  assert.equal(starts.size, 3, "three turns started");
  assert.deepEqual([...starts.values(), ...ends.values()], [1, 1, 1, 1, 1, 1]);
  assert.deepEqual([...ends.keys()].sort(), [...starts.keys()].sort());

  const closed = await client.closeSession({ sessionId: session.id, reason: "done" });
  assert.equal(closed.state, "closed");
  watch.close();
});

// Scenario 2: the connection is cut 20 times during a long turn; the watch
// still yields exactly the stored sequence, and a new watch from a saved
// cursor yields exactly the rest.
test("resume: 20 cuts during a long turn", STEP, async (t) => {
  const cuts = 20;
  const network = new Cutter();
  const client = await dial({ webSocket: await network.factory(), reconnectMinMs: 5, reconnectMaxMs: 50 });
  const session = await client.openSession({ nodeId: hub.node });
  const watch = client.watch(session.id);
  const long = await client.runTurn({ sessionId: session.id, input: userText("long") });

  const yielded: Delivery[] = [];
  let done = 0;
  for (;;) {
    const d = await next(watch);
    if (d.cursor === "") continue;
    yielded.push(d);
    if (isTurnEnded(d.event, long.turnId)) break;
    if (d.event.turnId !== long.turnId || d.event.payload.case !== "message") continue;
    // Cut each connection once, after a persisted event of the turn: the next
    // cut waits until the client has dialled again.
    if (done < cuts && network.dials === done + 1 && network.cut() > 0) {
      done++;
    } else if (done === cuts) {
      await client.cancelTurn({ sessionId: session.id, turnId: long.turnId });
      done++;
    }
  }
  watch.close();
  assert.ok(done >= cuts, `the long turn ended after ${done} cuts, before ${cuts}`);
  assert.equal(network.dials, cuts + 1, `${network.dials} dials for ${cuts} cuts`);
  const stored = await listAll(client, session.id);
  sameSequence(yielded, stored);

  // A program restarted with a saved cursor resumes exactly after it.
  const saved = Math.floor(stored.length / 2);
  const restarted = await dial();
  const rest = restarted.watch(session.id, stored[saved]!.cursor);
  const resumed: Delivery[] = [];
  while (resumed.length < stored.length - saved - 1) {
    const d = await next(rest);
    if (d.cursor !== "") resumed.push(d);
  }
  rest.close();
  sameSequence(resumed, stored.slice(saved + 1));
  t.diagnostic(`${yielded.length} persisted events through ${cuts} cuts and ${network.dials} dials, identical to ListEvents`);
});

// Scenario 3: a turn waits for an approval, which the client answers.
test("approval", STEP, async () => {
  const client = await dial();
  const session = await client.openSession({ nodeId: hub.node });
  const watch = client.watch(session.id);
  const turn = await client.runTurn({ sessionId: session.id, input: userText("approve") });

  let pending: Interaction | undefined;
  await until(watch, ({ event }) => isPending((pending = interactionOf(event))));
  assert.ok(pending);
  assert.equal(pending.kind, InteractionKind.APPROVAL);
  assert.equal(pending.turnId, turn.turnId);
  const answered = await client.answerInteraction(approve(pending.id, true, "conformance"));
  assert.equal(answered.state, InteractionState.ANSWERED);

  let result = "";
  await until(watch, ({ event }) => {
    if (event.payload.case === "toolResult" && event.payload.value.callId === pending?.call?.id) {
      const first = event.payload.value.output[0]?.value;
      result = first?.case === "text" ? first.value.text : "";
    }
    return isTurnEnded(event, turn.turnId);
  });
  assert.equal(result, "approved");
  await rejects(client.answerInteraction(approve(pending.id, false, "too late")), Code.FailedPrecondition);
  watch.close();
});

// Scenario 4: a 2 MB event arrives whole, live and from the store.
test("a 2 MB event", STEP, async () => {
  const size = 2_000_000;
  const client = await dial();
  const session = await client.openSession({ nodeId: hub.node });
  const watch = client.watch(session.id);
  const turn = await client.runTurn({ sessionId: session.id, input: userText(`big ${size}`) });
  const big = await until(watch, ({ event }) => messageOf(event)?.id === `big_${turn.turnId}`);
  assert.equal(text(messageOf(big.event)).length, size);
  assert.notEqual(big.cursor, "", "the big message is persisted");
  await until(watch, ({ event }) => isTurnEnded(event, turn.turnId));
  watch.close();
  const stored = (await listAll(client, session.id)).find(({ event }) => messageOf(event)?.id === `big_${turn.turnId}`);
  assert.equal(text(stored && messageOf(stored.event)).length, size, "ListEvents returns the 2 MB message whole");
});

// Scenario 5: a request refused with each error code the hub can give.
test("every error code the hub can give", STEP, async (t) => {
  const client = await dial();
  const session = await client.openSession({ nodeId: hub.node });
  const call = (message: MessageInitShape<typeof ProtocolMessageSchema>["message"]) =>
    client.call(anyPack(ProtocolMessageSchema, create(ProtocolMessageSchema, { message })));

  await t.test(Code.Unauthenticated, async () => {
    await rejects(connect(hub.url, "not-the-key"), Code.Unauthenticated);
    const err = await createManagement(hub.url, "not-the-key").system.getStatus({}).catch((e: unknown) => e);
    assert.equal(connectCode(err), ConnectCode.Unauthenticated, `management call with a wrong key: ${String(err)}`);
  });
  await t.test(Code.InvalidArgument, async () => {
    await rejects(client.openSession({}), Code.InvalidArgument);
  });
  await t.test(Code.NotFound, async () => {
    await rejects(client.runTurn({ sessionId: "no-such-session", input: userText("hi") }), Code.NotFound);
    await rejects(client.watch("no-such-session").next(), Code.NotFound);
    const err = await client.management.sessions.getSession({ sessionId: "no-such-session" }).catch((e: unknown) => e);
    assert.equal(connectCode(err), ConnectCode.NotFound, `GetSession of an unknown session: ${String(err)}`);
  });
  await t.test(Code.AlreadyExists, async () => {
    const id = `conformance-open-${session.id}`;
    const first = await client.openSession({ nodeId: hub.node, title: "one" }, { id });
    const again = await client.openSession({ nodeId: hub.node, title: "one" }, { id });
    assert.equal(again.id, first.id, "the same id and body return the stored answer");
    await rejects(client.openSession({ nodeId: hub.node, title: "two" }, { id }), Code.AlreadyExists);
  });
  await t.test(Code.FailedPrecondition, async () => {
    const long = await client.runTurn({ sessionId: session.id, input: userText("long") });
    const reject = anyPack(TurnOptionsSchema, create(TurnOptionsSchema, { policy: TurnPolicy.REJECT }));
    await rejects(
      client.runTurn({ sessionId: session.id, input: userText("hello"), extensions: [reject] }),
      Code.FailedPrecondition,
    );
    await client.cancelTurn({ sessionId: session.id, turnId: long.turnId });
  });
  await t.test(Code.Unavailable, async () => {
    const err = await rejects(client.openSession({ nodeId: "offline-node" }), Code.Unavailable);
    assert.ok(err.retryable, "an offline node's refusal is retryable");
  });
  await t.test(Code.ResourceExhausted, async () => {
    const watchers = await dial();
    const watches: Watch[] = [];
    for (let i = 0; i < hub.max_watches; i++) {
      const watch = watchers.watch(session.id);
      watches.push(watch);
      await next(watch); // delivered: the watch runs on the hub
    }
    await rejects(watchers.watch(session.id).next(), Code.ResourceExhausted);
    for (const watch of watches) watch.close();
  });
  await t.test(Code.InvalidPayload, async () => {
    const garbage = { $typeName: "google.protobuf.Any", typeUrl: "type.googleapis.com/aop.ProtocolMessage", value: new Uint8Array([0xff, 0xff]) } as const;
    await rejects(client.call(garbage), Code.InvalidPayload);
  });
  await t.test(Code.UnsupportedNamespace, async () => {
    await rejects(client.call(anyPack(SessionSchema, create(SessionSchema, { id: session.id }))), Code.UnsupportedNamespace);
  });
  await t.test(Code.UnsupportedMessage, async () => {
    await rejects(call({ case: "agentStatus", value: {} }), Code.UnsupportedMessage);
  });
  await t.test(Code.WrongEndpoint, async () => {
    const fresh = await dial({ reconnectMinMs: 5 });
    const hello = anyPack(
      ProtocolMessageSchema,
      create(ProtocolMessageSchema, { message: { case: "agentHello", value: { nodeId: "not-here" } } }),
    );
    await rejects(fresh.call(hello), Code.WrongEndpoint);
    // The hub closed that connection; the client reconnects for what comes next.
    await fresh.openSession({ nodeId: hub.node });
  });
});

// Every request is bounded: an expired signal fails it with a TimeoutError, unsent.
test("request timeout", STEP, async () => {
  const client = await dial();
  const expired = AbortSignal.timeout(0);
  await new Promise((resolve) => expired.addEventListener("abort", resolve, { once: true }));
  await assert.rejects(client.openSession({ nodeId: hub.node }, { signal: expired }), { name: "TimeoutError" });
});

// The standard WebSocket of browsers (here undici's, Node's global WebSocket,
// which like a browser's has no ping and delivers ArrayBuffers): a turn runs
// and the watch survives a reconnect. Browsers cannot send headers (they log in
// for a cookie instead); undici's WebSocket takes them as an extension.
test("a standard (browser) WebSocket", STEP, async () => {
  type Standard = new (url: string, init: { headers: Record<string, string> }) => WebSocketLike;
  const Standard = (globalThis as unknown as { WebSocket?: Standard }).WebSocket;
  assert.ok(Standard, "no global WebSocket: run node with --experimental-websocket (Node 20)");
  const sockets: WebSocketLike[] = [];
  const client = await dial({
    reconnectMinMs: 5,
    webSocket: (url, init) => {
      const socket = new Standard(url, { headers: init.headers });
      sockets.push(socket);
      return socket;
    },
  });
  assert.equal(sockets[0]?.ping, undefined, "a standard WebSocket, not ws");
  const session = await client.openSession({ nodeId: hub.node });
  const watch = client.watch(session.id);
  const first = await client.runTurn({ sessionId: session.id, input: userText("hello") });
  await until(watch, ({ event }) => isTurnEnded(event, first.turnId));
  sockets[0]!.close(4000, "cut by the test");
  const second = await client.runTurn({ sessionId: session.id, input: userText("again") });
  let answer = "";
  await until(watch, ({ event }) => {
    if (event.turnId === second.turnId && messageOf(event)?.role === "assistant") answer = text(messageOf(event));
    return isTurnEnded(event, second.turnId);
  });
  assert.equal(answer.trim(), "echo: again");
  assert.equal(sockets.length, 2, "one reconnect");
  watch.close();
});

// Browsers authenticate the WebSocket with the hub's session cookie: connect
// logs in with the token first and sends no Authorization header. Here a fetch
// with a cookie jar and a WebSocket that sends the jar's cookie (with the
// page's Origin) stand in for the browser's.
test("cookie login, as browsers do", STEP, async () => {
  let cookie = "";
  const jarFetch: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    if (cookie !== "") headers.set("Cookie", cookie);
    const response = await fetch(input, { ...init, headers });
    const set = response.headers.getSetCookie()[0];
    if (set !== undefined) cookie = set.split(";")[0]!;
    return response;
  };
  const upgrades: Record<string, string>[] = [];
  const browserLike: WebSocketFactory = (url, init) => {
    upgrades.push(init.headers);
    return new WS(url, { headers: { ...init.headers, Cookie: cookie }, origin: hub.url }) as unknown as WebSocketLike;
  };
  const options = { cookieLogin: true, fetch: jarFetch, webSocket: browserLike };
  await rejects(connect(hub.url, "not-the-key", options), Code.Unauthenticated);
  assert.equal(upgrades.length, 0, "a refused login dials nothing");

  const client = await dial(options);
  assert.match(cookie, /^aophub_session=/);
  assert.deepEqual(upgrades, [{}], "no Authorization header on the upgrade");
  const session = await client.openSession({ nodeId: hub.node });
  const watch = client.watch(session.id);
  const turn = await client.runTurn({ sessionId: session.id, input: userText("hello") });
  await until(watch, ({ event }) => isTurnEnded(event, turn.turnId));
  watch.close();
});
