// The management services through the client: the title search of ListSessions
// and the live node list of WatchAgents, against a real hub started once.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Code as ConnectCode, ConnectError } from "@connectrpc/connect";

import { connect, type Client } from "../src/index.js";
import { type ConformanceHub, startHub } from "./support/hub.js";

const STEP = { timeout: 60_000 };

let hub: ConformanceHub;
let stopHub: () => Promise<void>;
let client: Client;

before(async () => {
  ({ hub, stop: stopHub } = await startHub());
  client = await connect(hub.url, hub.token);
});

after(async () => {
  client.close();
  await stopHub();
});

test("ListSessions finds titles containing a text, in either case, wildcards literal", STEP, async () => {
  const wanted = await client.openSession({ nodeId: hub.node, title: "TS search: 100% Sure_thing" });
  await client.openSession({ nodeId: hub.node, title: "TS search: 100 sure thing" });
  const found = await client.management.sessions.listSessions({ titleContains: "100% sure_" });
  assert.deepEqual(
    found.sessions.map((s) => s.id),
    [wanted.id],
  );
  const paged = await client.management.sessions.listSessions({ titleContains: "ts SEARCH", pageSize: 1 });
  assert.equal(paged.sessions.length, 1);
  assert.notEqual(paged.nextPageToken, "");
  await assert.rejects(
    client.management.sessions.listSessions({ pageToken: paged.nextPageToken, titleContains: "other" }),
    (err: unknown) => err instanceof ConnectError && err.code === ConnectCode.InvalidArgument,
  );
  const rest = await client.management.sessions.listSessions({ titleContains: "ts SEARCH", pageToken: paged.nextPageToken });
  assert.equal(rest.sessions.length, 1);
  assert.equal(rest.nextPageToken, "");
});

test("WatchAgents starts with the node list and ends with its signal", STEP, async () => {
  const stop = new AbortController();
  const stream = client.management.agents.watchAgents({}, { signal: stop.signal });
  for await (const message of stream) {
    assert.equal(message.message.case, "snapshot");
    assert.ok(message.message.value.agents.some((agent) => agent.nodeId === hub.node));
    break; // leaving the loop ends the stream
  }
  const listed = await client.management.agents.listAgents({});
  assert.ok(listed.agents.some((agent) => agent.nodeId === hub.node));
  stop.abort();
});
