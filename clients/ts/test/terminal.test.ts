// Terminal streams (aop.pty) against a fake hub that plays the relay of
// AOP-workspace 8.4: messages come back with reply_to = the stream id, and
// the hub forgets a connection's streams when it drops.

import assert from "node:assert/strict";
import { test } from "node:test";

import { create, toBinary } from "@bufbuild/protobuf";
import { anyPack, anyUnpack } from "@bufbuild/protobuf/wkt";
import type { WebSocket } from "ws";

import { connect, type Client, type Terminal, type TerminalMessage } from "../src/index.js";
import { type Envelope, EnvelopeSchema } from "../src/gen/aop/envelope_pb.js";
import { ProtocolMessageSchema } from "../src/gen/aop/protocol_pb.js";
import { type ProtocolMessage as PtyMessage, ProtocolMessageSchema as PtySchema } from "../src/gen/aop/pty/protocol_pb.js";
import { fakeHub } from "./support/fake_hub.js";

const STEP = { timeout: 30_000 };

/** The pty message an envelope carries (fails the test on anything else). */
function pty(envelope: Envelope): PtyMessage["message"] {
  const message = envelope.payload && anyUnpack(envelope.payload, PtySchema);
  assert.ok(message, `expected an aop.pty payload, got ${envelope.payload?.typeUrl}`);
  return message.message;
}

/** A hub envelope carrying a pty message for the stream. */
function relay(streamId: string, message: PtyMessage["message"]): Uint8Array {
  return toBinary(
    EnvelopeSchema,
    create(EnvelopeSchema, { id: `hub-${Math.random()}`, replyTo: streamId, payload: anyPack(PtySchema, create(PtySchema, { message })) }),
  );
}

function session(id: string) {
  return { $typeName: "aop.pty.Session" as const, id, kind: "shell", state: "running" } as never;
}

/**
 * Collects a terminal's messages; next() waits for the next one. script wraps
 * the fake hub's side: a failed assertion there fails next() (and done()).
 */
function inbox() {
  const got: TerminalMessage[] = [];
  let wake: (() => void) | null = null;
  let failure: unknown = undefined;
  const scripts: Promise<void>[] = [];
  return {
    got,
    listener: (m: TerminalMessage) => {
      got.push(m);
      wake?.();
    },
    script<A extends unknown[]>(serve: (...args: A) => Promise<void>): (...args: A) => void {
      return (...args) => {
        const run = serve(...args).catch((err: unknown) => {
          failure ??= err;
          wake?.();
        });
        scripts.push(run);
      };
    },
    async next(): Promise<TerminalMessage> {
      for (;;) {
        if (failure !== undefined) throw failure;
        if (got.length > 0) return got.shift()!;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
    /** Waits for the hub's scripts to finish; throws what failed in them. */
    async done(): Promise<void> {
      await Promise.all(scripts);
      if (failure !== undefined) throw failure;
    },
  };
}

async function dial(url: string): Promise<Client> {
  return connect(url, "key", { reconnectMinMs: 5, reconnectMaxMs: 20 });
}

// An attach on a new stream is bound first with list{node_id} whose envelope
// id is the stream id (only open and list can bind, 8.4.3); what the hub sends
// with reply_to = the stream id reaches the listener in order, and the
// hub's refusal of a later message (reply_to = its envelope id) arrives as an
// error of the same stream.
test("a terminal binds with list, routes by stream id, and reports refusals", STEP, async () => {
  let streamId = "";
  const box = inbox();
  const hub = await fakeHub(
    box.script(async (socket: WebSocket, _index: number, read: () => Promise<Envelope>) => {
    const list = await read();
    const m = pty(list);
    assert.equal(m.case, "list");
    streamId = m.value.streamId;
    assert.equal(list.id, streamId, "the binding message's envelope id is the stream id");
    assert.equal(m.value.nodeId, "n1");
    const attach = await read();
    const a = pty(attach);
    assert.equal(a.case, "attach");
    assert.deepEqual([a.value.streamId, a.value.sessionId, a.value.cols, a.value.rows], [streamId, "p1", 80, 24]);
    socket.send(relay(streamId, { case: "sessions", value: { $typeName: "aop.pty.Sessions", streamId, sessions: [session("p1")] } }));
    socket.send(relay(streamId, { case: "attached", value: { $typeName: "aop.pty.Attached", streamId, session: session("p1") } }));
    const out = { $typeName: "aop.pty.Output" as const, streamId, data: new TextEncoder().encode("hi\n"), offset: 7n };
    socket.send(relay(streamId, { case: "output", value: out }));
    socket.send(relay("someone-else", { case: "output", value: { ...out, streamId: "someone-else" } }));
    const input = await read();
    const i = pty(input);
    assert.equal(i.case, "input");
    assert.equal(new TextDecoder().decode(i.value.data), "ls\r");
    assert.ok(input.id.startsWith(`${streamId}/`), "later envelope ids name the stream");
    const refusal = create(ProtocolMessageSchema, {
      message: { case: "protocolError", value: { code: "PTY_FORWARD_FAILED", message: "node n1 is not connected" } },
    });
    socket.send(toBinary(EnvelopeSchema, create(EnvelopeSchema, { replyTo: input.id, payload: anyPack(ProtocolMessageSchema, refusal) })));
    }),
  );
  const client = await dial(hub.url);
  try {
    const terminal = client.terminal({ nodeId: "n1", onMessage: box.listener });
    terminal.attach("p1", 80, 24);
    assert.equal((await box.next()).case, "sessions");
    assert.equal((await box.next()).case, "attached");
    assert.equal(terminal.sessionId, "p1");
    const output = await box.next();
    assert.equal(output.case, "output");
    assert.equal(output.value.offset, 7n);
    assert.equal(new TextDecoder().decode(output.value.data), "hi\n");
    terminal.input("ls\r");
    const error = await box.next();
    assert.equal(error.case, "error");
    assert.equal(error.value.message, "PTY_FORWARD_FAILED: node n1 is not connected");
    assert.equal(box.got.length, 0, "another stream's output is not delivered");
    assert.equal(terminal.streamId, streamId);
  } finally {
    client.close();
    hub.close();
  }
});

// After the connection drops the hub has forgotten the stream (8.4.9): the
// terminal binds a new stream id and attaches again to the session it had
// opened; what arrives for the old stream id is ignored.
test("a terminal re-attaches on a new stream after a reconnect", STEP, async () => {
  const streams: string[] = [];
  let first: WebSocket | null = null;
  const box = inbox();
  const hub = await fakeHub(
    box.script(async (socket: WebSocket, index: number, read: () => Promise<Envelope>) => {
    if (index === 0) {
      first = socket;
      const open = pty(await read());
      assert.equal(open.case, "open");
      assert.equal(open.value.nodeId, "n1");
      assert.equal(open.value.kind, "shell");
      const streamId = open.value.streamId;
      streams.push(streamId);
      socket.send(relay(streamId, { case: "opened", value: { $typeName: "aop.pty.Opened", streamId, session: session("p9") } }));
      return;
    }
    const list = pty(await read());
    assert.equal(list.case, "list");
    const streamId = list.value.streamId;
    streams.push(streamId);
    const attach = pty(await read());
    assert.equal(attach.case, "attach");
    assert.deepEqual([attach.value.sessionId, attach.value.cols, attach.value.rows], ["p9", 100, 30]);
    socket.send(relay(streams[0]!, { case: "detached", value: { $typeName: "aop.pty.Detached", streamId: streams[0]! } }));
    socket.send(relay(streamId, { case: "attached", value: { $typeName: "aop.pty.Attached", streamId, session: session("p9") } }));
    }),
  );
  const client = await dial(hub.url);
  try {
    const terminal = client.terminal({ nodeId: "n1", onMessage: box.listener });
    terminal.open({ kind: "shell", cols: 100, rows: 30 });
    assert.equal((await box.next()).case, "opened");
    assert.equal(terminal.sessionId, "p9");
    (first as WebSocket | null)?.terminate();
    const attached = await box.next();
    assert.equal(attached.case, "attached", "the old stream's detached is not delivered");
    assert.equal(streams.length, 2);
    assert.notEqual(streams[1], streams[0], "a new stream id on the new connection");
    assert.equal(terminal.streamId, streams[1]);
  } finally {
    client.close();
    hub.close();
  }
});

// The node left and came back (8.4.10, 8.4.11): the hub sends detached, then
// the node's sessions; the terminal attaches again to its session by itself.
// end() detaches and cancels the stream on the hub (8.4.8).
test("a terminal re-attaches after its node comes back, and end releases the stream", STEP, async () => {
  const box = inbox();
  const hub = await fakeHub(
    box.script(async (socket: WebSocket, _index: number, read: () => Promise<Envelope>) => {
    const list = pty(await read());
    assert.equal(list.case, "list");
    const streamId = list.value.streamId;
    assert.equal(pty(await read()).case, "attach");
    socket.send(relay(streamId, { case: "attached", value: { $typeName: "aop.pty.Attached", streamId, session: session("p2") } }));
    socket.send(relay(streamId, { case: "detached", value: { $typeName: "aop.pty.Detached", streamId } }));
    socket.send(relay(streamId, { case: "sessions", value: { $typeName: "aop.pty.Sessions", streamId, sessions: [session("p2")] } }));
    const again = pty(await read());
    assert.equal(again.case, "attach");
    assert.equal(again.value.sessionId, "p2");
    socket.send(relay(streamId, { case: "attached", value: { $typeName: "aop.pty.Attached", streamId, session: session("p2") } }));
    const detach = pty(await read());
    assert.equal(detach.case, "detach");
    const cancel = await read();
    const c = cancel.payload && anyUnpack(cancel.payload, ProtocolMessageSchema);
    assert.equal(c?.message.case, "cancelOperation");
    assert.equal(c.message.value.targetId, streamId);
    }),
  );
  const client = await dial(hub.url);
  let terminal: Terminal | undefined;
  try {
    terminal = client.terminal({ nodeId: "n1", onMessage: box.listener });
    terminal.attach("p2");
    assert.deepEqual([(await box.next()).case, (await box.next()).case, (await box.next()).case], ["attached", "detached", "sessions"]);
    assert.equal((await box.next()).case, "attached");
    terminal.end();
    assert.equal(terminal.ended, false, "the session keeps running");
    assert.throws(() => terminal!.input("x"), /ended/);
    await box.done(); // the hub got detach, then cancel_operation{stream id}
  } finally {
    client.close();
    hub.close();
  }
});

// The client came back before the node did (a hub restart): the binding list
// gets detached and PTY_FORWARD_FAILED, and the hub drops the binding (8.4.4),
// so no sessions will follow by themselves. The terminal binds again after a
// backoff until the node answers, then attaches to its session.
test("a terminal whose node is away as it binds tries again with backoff, then attaches", STEP, async () => {
  const box = inbox();
  const tries: number[] = [];
  const hub = await fakeHub(
    box.script(async (socket: WebSocket, _index: number, read: () => Promise<Envelope>) => {
    const refuse = (envelopeId: string) => {
      const refusal = create(ProtocolMessageSchema, {
        message: { case: "protocolError", value: { code: "PTY_FORWARD_FAILED", message: "node n1 is not connected" } },
      });
      socket.send(toBinary(EnvelopeSchema, create(EnvelopeSchema, { replyTo: envelopeId, payload: anyPack(ProtocolMessageSchema, refusal) })));
    };
    let streamId = "";
    for (let attempt = 0; attempt < 3; attempt++) {
      const list = await read();
      const m = pty(list);
      assert.equal(m.case, "list", `try ${attempt} binds with list`);
      streamId = m.value.streamId;
      tries.push(Date.now());
      socket.send(relay(streamId, { case: "detached", value: { $typeName: "aop.pty.Detached", streamId } }));
      refuse(list.id);
      if (attempt === 0) assert.equal(pty(await read()).case, "attach"); // sent behind the first list; unbound, dropped
    }
    const list = pty(await read());
    assert.equal(list.case, "list");
    socket.send(relay(streamId, { case: "sessions", value: { $typeName: "aop.pty.Sessions", streamId, sessions: [session("p4")] } }));
    const attach = pty(await read());
    assert.equal(attach.case, "attach");
    assert.equal(attach.value.sessionId, "p4");
    socket.send(relay(streamId, { case: "attached", value: { $typeName: "aop.pty.Attached", streamId, session: session("p4") } }));
    }),
  );
  const client = await connect(hub.url, "key", { reconnectMinMs: 40, reconnectMaxMs: 400 });
  try {
    const terminal = client.terminal({ nodeId: "n1", onMessage: box.listener });
    terminal.attach("p4");
    for (;;) {
      const message = await box.next();
      if (message.case === "attached") break;
      assert.ok(["detached", "error", "sessions"].includes(message.case), message.case);
    }
    await box.done();
    const waits = tries.slice(1).map((at, index) => at - tries[index]!);
    assert.ok(waits[0]! >= 20, `the first retry waited ${waits[0]} ms (at least half of 40)`);
    assert.ok(waits[1]! >= 40, `the second retry waited ${waits[1]} ms (at least half of 80)`);
  } finally {
    client.close();
    hub.close();
  }
});
