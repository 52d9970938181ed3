// @aophub/client: the TypeScript client of an aophub hub (or any AOP hub),
// for browsers and Node 20+.
//
// A turn, with resume:
//
//   const hub = await connect("http://127.0.0.1:8080", token);
//   const session = await hub.openSession({ nodeId: "local" });
//   const watch = hub.watch(session.id, savedCursor); // before runTurn: see every delta
//   const turn = await hub.runTurn({ sessionId: session.id, input: userText("hello") });
//   for await (const { cursor, event } of watch) {
//     if (cursor) savedCursor = cursor; // resume from here after a restart
//     const message = messageOf(event);
//     if (message?.role === "assistant") console.log(text(message));
//     if (isTurnEnded(event, turn.turnId)) break;
//   }
//   hub.close();
//
// The wire messages are the generated ones of @aophub/client/gen/... (for
// example "@aophub/client/gen/aop/chat_pb.js").

export {
  Client,
  connect,
  endpoints,
  newId,
  type CallOptions,
  type ClientOptions,
  type Subscription,
  DEFAULT_MAX_FRAME_BYTES,
  DEFAULT_PING_INTERVAL_MS,
  DEFAULT_RECONNECT_MAX_MS,
  DEFAULT_RECONNECT_MIN_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
} from "./client.js";
export { AophubError, ClientClosedError, Code, errorCode } from "./errors.js";
export { createManagement, type Management } from "./management.js";
export { approve, interactionOf, isPending, isTurnEnded, messageOf, text, userText } from "./messages.js";
export { registry } from "./registry.js";
export {
  browserWebSocket,
  nodeWebSocket,
  type SocketInit,
  type WebSocketFactory,
  type WebSocketLike,
} from "./socket.js";
export { type OpenInit, Terminal, type TerminalMessage, type TerminalOptions } from "./terminal.js";
export { type Delivery, Watch } from "./watch.js";

export type { Event } from "./gen/aop/event_pb.js";
export type { Message } from "./gen/aop/content_pb.js";
export type { Session, TurnReceipt } from "./gen/aop/chat_pb.js";
export type { Interaction } from "./gen/aophub/v1/interaction_pb.js";
export { InteractionKind, InteractionState } from "./gen/aophub/v1/interaction_pb.js";
