// The client against a fake hub that misbehaves on purpose: what a real hub
// cannot be made to do on demand (drop a request, stay silent, send a frame
// over the client's limit).

import assert from "node:assert/strict";
import { test } from "node:test";

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { anyPack, anyUnpack } from "@bufbuild/protobuf/wkt";

import { ClientClosedError, Code, connect, endpoints, errorCode, type Client } from "../src/index.js";
import { type Envelope, EnvelopeSchema } from "../src/gen/aop/envelope_pb.js";
import { ProtocolMessageSchema } from "../src/gen/aop/protocol_pb.js";
import { fakeHub } from "./support/fake_hub.js";

const STEP = { timeout: 30_000 };

/** An open_session_response accepting session "s1", in reply to request. */
function accept(request: Envelope, padding = ""): Uint8Array {
  const answer = create(ProtocolMessageSchema, {
    message: {
      case: "openSessionResponse",
      value: { outcome: { case: "accepted", value: { id: "s1", state: "open", title: padding } } },
    },
  });
  return toBinary(EnvelopeSchema, create(EnvelopeSchema, { replyTo: request.id, payload: anyPack(ProtocolMessageSchema, answer) }));
}

async function dial(url: string, options = {}): Promise<Client> {
  return connect(url, "key", { reconnectMinMs: 5, reconnectMaxMs: 20, ...options });
}

// A request whose connection drops before the answer is resent on the next
// connection with the same envelope id, and its answer arrives.
test("a request is resent with the same id after a drop", STEP, async () => {
  const hub = await fakeHub(async (socket, index, read) => {
    const request = await read();
    if (index === 0) socket.terminate();
    else socket.send(accept(request));
  });
  const client = await dial(hub.url);
  try {
    const session = await client.openSession({ nodeId: "n" });
    assert.equal(session.id, "s1");
    assert.equal(hub.received.length, 2);
    assert.equal(hub.received[1]!.id, hub.received[0]!.id, "the resent request keeps its envelope id");
    assert.ok(equalsPayload(hub.received[0]!, hub.received[1]!), "and its body");
  } finally {
    client.close();
    hub.close();
  }
});

function equalsPayload(a: Envelope, b: Envelope): boolean {
  return Buffer.from(a.payload!.value).equals(Buffer.from(b.payload!.value));
}

// A hub that never answers: the request ends with its timeout, and the error
// names the envelope id to retry with.
test("a request times out on a silent hub", STEP, async () => {
  const hub = await fakeHub(() => {});
  const client = await dial(hub.url);
  try {
    const err = await client.openSession({ nodeId: "n" }, { timeoutMs: 50 }).catch((e: unknown) => e);
    assert.ok(err instanceof DOMException && err.name === "TimeoutError", String(err));
    assert.match(err.message, new RegExp(hub.received[0]!.id));
    const aborted = new AbortController();
    const waiting = client.openSession({ nodeId: "n" }, { signal: aborted.signal });
    aborted.abort();
    await assert.rejects(waiting, { name: "AbortError" });
  } finally {
    client.close();
    hub.close();
  }
});

// A request over maxFrameBytes is refused before it is sent.
test("a request over the frame limit is not sent", STEP, async () => {
  const hub = await fakeHub(() => {});
  const client = await dial(hub.url, { maxFrameBytes: 1024 });
  try {
    const err = await client.openSession({ nodeId: "n", title: "x".repeat(2000) }).catch((e: unknown) => e);
    assert.equal(errorCode(err), Code.InvalidArgument, String(err));
    assert.equal(hub.received.length, 0);
  } finally {
    client.close();
    hub.close();
  }
});

// A frame from the hub over maxFrameBytes fails the requests in flight with
// RESOURCE_EXHAUSTED instead of resending them into the same frame.
test("a frame over the limit from the hub fails what is in flight", STEP, async () => {
  const hub = await fakeHub(async (socket, _index, read) => socket.send(accept(await read(), "x".repeat(4096))));
  const client = await dial(hub.url, { maxFrameBytes: 1024 });
  try {
    const watch = client.watch("s1");
    const err = await client.openSession({ nodeId: "n" }).catch((e: unknown) => e);
    assert.equal(errorCode(err), Code.ResourceExhausted, String(err));
    await assert.rejects(watch.next(), (e) => errorCode(e) === Code.ResourceExhausted);
  } finally {
    client.close();
    hub.close();
  }
});

// Requests and watches after close fail with ClientClosedError; one in flight too.
test("a closed client", STEP, async () => {
  const hub = await fakeHub(() => {});
  const client = await dial(hub.url);
  const waiting = client.openSession({ nodeId: "n" });
  const watch = client.watch("s1");
  client.close();
  await assert.rejects(waiting, ClientClosedError);
  await assert.rejects(watch.next(), ClientClosedError);
  await assert.rejects(client.openSession({ nodeId: "n" }), ClientClosedError);
  await assert.rejects(client.watch("s1").next(), ClientClosedError);
  hub.close();
});

// A watch that is not being read does not hold up the answer to a request on
// the same connection, and a replayed event is not yielded twice.
test("an unread watch does not block requests; a repeated cursor is dropped", STEP, async () => {
  const hub = await fakeHub(async (socket, _index, read) => {
    const watch = await read();
    const event = (cursor: string, id = `e${cursor}`) =>
      toBinary(
        EnvelopeSchema,
        create(EnvelopeSchema, {
          replyTo: watch.id,
          deliveryCursor: cursor,
          payload: anyPack(ProtocolMessageSchema, create(ProtocolMessageSchema, { message: { case: "event", value: { id } } })),
        }),
      );
    for (let i = 1; i <= 300; i++) socket.send(event(String(i)));
    socket.send(event("300")); // as if replayed after a reconnect
    socket.send(event("", "live")); // a delta: no cursor
    socket.send(accept(await read()));
  });
  const client = await dial(hub.url);
  try {
    const watch = client.watch("s1");
    assert.equal((await client.openSession({ nodeId: "n" })).id, "s1");
    const ids: string[] = [];
    for (let i = 0; i < 300; i++) ids.push((await watch.next()).value!.event.id);
    assert.equal(ids.at(-1), "e300");
    assert.equal((await watch.next()).value!.event.id, "live", "the repeated cursor 300 is not yielded twice");
    assert.equal(watch.cursor, "300");
    const request = anyUnpack(hub.received[0]!.payload!, ProtocolMessageSchema);
    assert.equal(request?.message.case, "watchEventsRequest", "the watch is sent before the request made after it");
  } finally {
    client.close();
    hub.close();
  }
});

// URLs: a base URL or the endpoint itself, http(s) or ws(s); others are refused.
test("hub URLs", () => {
  assert.deepEqual(endpoints("http://h:1"), { wsUrl: "ws://h:1/api/aop/application/ws", baseUrl: "http://h:1" });
  assert.deepEqual(endpoints("wss://h/x/api/aop/application/ws"), {
    wsUrl: "wss://h/x/api/aop/application/ws",
    baseUrl: "https://h/x",
  });
  assert.deepEqual(endpoints("https://h/x/"), { wsUrl: "wss://h/x/api/aop/application/ws", baseUrl: "https://h/x" });
  assert.throws(() => endpoints("ftp://h"), TypeError);
  assert.throws(() => endpoints("not a url"), TypeError);
});

// A watch ends with its signal, and the hub is told to stop it (cancel_operation
// for the watch's envelope id).
test("a watch ends with its signal, on the hub too", STEP, async () => {
  let told!: (ids: { watchId: string; targetId: string }) => void;
  const canceled = new Promise<{ watchId: string; targetId: string }>((resolve) => (told = resolve));
  const hub = await fakeHub(async (_socket, _index, read) => {
    const watch = await read();
    const cancel = anyUnpack((await read()).payload!, ProtocolMessageSchema);
    told({ watchId: watch.id, targetId: cancel?.message.case === "cancelOperation" ? cancel.message.value.targetId : "" });
  });
  const client = await dial(hub.url);
  try {
    const stop = new AbortController();
    const watch = client.watch("s1", "", { signal: stop.signal });
    const reading = watch.next();
    stop.abort();
    await assert.rejects(reading, { name: "AbortError" });
    const { watchId, targetId } = await canceled;
    assert.equal(targetId, watchId);
  } finally {
    client.close();
    hub.close();
  }
});

// A hub that stops answering pings (a dead peer behind a silent network) is
// dropped after one ping interval, and the client dials again by itself.
test("an unanswered ping drops the connection", STEP, async () => {
  let redialled!: () => void;
  const second = new Promise<void>((resolve) => (redialled = resolve));
  const hub = await fakeHub((_socket, index) => index === 1 && redialled(), { autoPong: false });
  const client = await dial(hub.url, { pingIntervalMs: 20 });
  try {
    await second;
    assert.equal(client.dials, 2);
  } finally {
    client.close();
    hub.close();
  }
});
