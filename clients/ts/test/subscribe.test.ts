// Subscriptions of an extension namespace (Client.subscribe) against a fake
// hub: every answer with reply_to = the request's id reaches the listener
// with its cursor; after a reconnect the request is rebuilt (to resume after
// the last cursor) and sent under a new id; end() cancels it on the hub.

import assert from "node:assert/strict";
import { test } from "node:test";

import { create, toBinary } from "@bufbuild/protobuf";
import { anyPack, anyUnpack, type Any } from "@bufbuild/protobuf/wkt";

import { connect } from "../src/index.js";
import { EnvelopeSchema } from "../src/gen/aop/envelope_pb.js";
import { ProtocolMessageSchema } from "../src/gen/aop/protocol_pb.js";
import { ScanProtocolMessageSchema } from "../src/gen/aophub/v1/scan_pb.js";
import { fakeHub } from "./support/fake_hub.js";

const STEP = { timeout: 30_000 };

function watchScan(afterCursor: string): Any {
  return anyPack(
    ScanProtocolMessageSchema,
    create(ScanProtocolMessageSchema, { message: { case: "watchScanRequest", value: { scanId: "scan-1", afterCursor } } }),
  );
}

function update(replyTo: string, status: string, deliveryCursor = ""): Uint8Array {
  const message = create(ScanProtocolMessageSchema, {
    message: { case: "update", value: { scan: { id: "scan-1", target: status } } },
  });
  return toBinary(EnvelopeSchema, create(EnvelopeSchema, { replyTo, deliveryCursor, payload: anyPack(ScanProtocolMessageSchema, message) }));
}

test("a subscription gets its answers, resumes after a reconnect, and ends on the hub", STEP, async () => {
  const requests: { id: string; afterCursor: string }[] = [];
  let failure: unknown;
  const sockets: { terminate(): void }[] = [];
  const hub = await fakeHub((socket, index, read) => {
    sockets.push(socket);
    void (async () => {
      const request = await read();
      const m = anyUnpack(request.payload!, ScanProtocolMessageSchema)?.message;
      assert.equal(m?.case, "watchScanRequest");
      requests.push({ id: request.id, afterCursor: m.value.afterCursor });
      if (index === 0) {
        socket.send(update(request.id, "first", "7"));
        socket.send(update("another-request", "not ours", "8"));
        socket.send(update(request.id, "second"));
        return;
      }
      socket.send(update(request.id, "after the reconnect", "9"));
      const cancel = await read();
      const c = anyUnpack(cancel.payload!, ProtocolMessageSchema)?.message;
      assert.equal(c?.case, "cancelOperation");
      assert.equal(c.value.targetId, request.id);
      const barrier = await read(); // a second subscription: its answer comes after the next frame
      socket.send(update(request.id, "after the end"));
      socket.send(update(barrier.id, "barrier"));
    })().catch((err: unknown) => (failure = err));
  });
  const client = await connect(hub.url, "key", { reconnectMinMs: 5, reconnectMaxMs: 20 });
  try {
    let cursor = "";
    const seen: string[] = [];
    let wake: (() => void) | null = null;
    const subscription = client.subscribe(
      () => watchScan(cursor),
      (payload, delivered) => {
        if (delivered) cursor = delivered;
        const m = anyUnpack(payload, ScanProtocolMessageSchema)?.message;
        if (m?.case === "update") seen.push(`${m.value.scan?.target}@${delivered}`);
        wake?.();
      },
    );
    const until = async (n: number) => {
      while (seen.length < n && failure === undefined) await new Promise<void>((resolve) => (wake = resolve));
      if (failure !== undefined) throw failure;
    };
    await until(2);
    assert.deepEqual(seen, ["first@7", "second@"]);
    sockets[0]!.terminate();
    await until(3);
    assert.deepEqual(seen[2], "after the reconnect@9");
    assert.equal(requests.length, 2);
    assert.equal(requests[1]!.afterCursor, "7", "the rebuilt request resumes after the last cursor");
    assert.notEqual(requests[1]!.id, requests[0]!.id, "under a new envelope id");
    subscription.end();
    const barrier = client.subscribe(
      () => watchScan(""),
      () => {
        seen.push("barrier");
        wake?.();
      },
    );
    await until(4);
    assert.deepEqual(seen.slice(3), ["barrier"], "nothing reaches an ended subscription");
    barrier.end();
  } finally {
    client.close();
    hub.close();
  }
});
