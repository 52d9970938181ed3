// A fake hub for the client's unit tests: what a real hub cannot be made to do
// on demand (drop a request, stay silent, send a frame over the client's limit,
// answer a terminal stream with exactly these messages).

import type { AddressInfo } from "node:net";

import { fromBinary } from "@bufbuild/protobuf";
import { WebSocketServer, type WebSocket } from "ws";

import { type Envelope, EnvelopeSchema } from "../../src/gen/aop/envelope_pb.js";

/** A fake hub: hands each application connection to serve with its index, and records what it receives. */
export async function fakeHub(
  serve: (socket: WebSocket, index: number, read: () => Promise<Envelope>) => void,
  options: { autoPong?: boolean } = {},
) {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0, ...options });
  await new Promise((resolve) => server.once("listening", resolve));
  const received: Envelope[] = [];
  let connections = 0;
  server.on("connection", (socket) => {
    const inbox: Envelope[] = [];
    let wake: (() => void) | null = null;
    socket.on("message", (data: Buffer) => {
      const envelope = fromBinary(EnvelopeSchema, new Uint8Array(data));
      received.push(envelope);
      inbox.push(envelope);
      wake?.();
    });
    const read = async (): Promise<Envelope> => {
      while (inbox.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      return inbox.shift()!;
    };
    serve(socket, connections++, read);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () => {
    for (const socket of server.clients) socket.terminate();
    server.close();
  };
  return { url, received, close };
}

