// The errors a client gives: refusals and protocol errors from the hub, and
// the client's own failures that mean the same thing.

import type { Rejection } from "./gen/aop/chat_pb.js";
import type { ProtocolError } from "./gen/aop/event_pb.js";

/**
 * Codes of the errors the hub gives, as they go on the wire (docs/protocol.md).
 * A request the hub understood and refused carries a rejection code; an
 * envelope it could not decode, route or execute carries a protocol error code.
 */
export const Code = {
  // Rejections (aop.Rejection.code).
  InvalidArgument: "INVALID_ARGUMENT",
  NotFound: "NOT_FOUND",
  AlreadyExists: "ALREADY_EXISTS",
  FailedPrecondition: "FAILED_PRECONDITION",
  Unavailable: "UNAVAILABLE",
  ResourceExhausted: "RESOURCE_EXHAUSTED",
  // Protocol errors (aop.ProtocolError.code).
  InvalidPayload: "INVALID_PAYLOAD",
  UnsupportedNamespace: "UNSUPPORTED_NAMESPACE",
  UnsupportedMessage: "UNSUPPORTED_MESSAGE",
  WrongEndpoint: "WRONG_ENDPOINT",
  Internal: "INTERNAL",
  // The WebSocket upgrade (or the browser login) was refused: HTTP 401 / 403.
  Unauthenticated: "UNAUTHENTICATED",
  PermissionDenied: "PERMISSION_DENIED",
} as const;

/**
 * A refusal or protocol error from the hub, or a failure of the client with
 * the same meaning (a frame over the limit, a refused upgrade). Compare
 * `code` with the values of {@link Code}; a newer hub may add codes.
 */
export class AophubError extends Error {
  override readonly name = "AophubError";

  constructor(
    /** One of the values of {@link Code}. */
    readonly code: string,
    /** The hub's explanation, meant for people. */
    readonly detail: string,
    /** Whether the same request may succeed later. */
    readonly retryable = false,
    options?: { cause?: unknown },
  ) {
    super(`aophub: ${code}: ${detail}`, options);
  }
}

/** The code of err if it is an {@link AophubError}, else "". */
export function errorCode(err: unknown): string {
  return err instanceof AophubError ? err.code : "";
}

/** The error a client that was closed gives to everything in flight and after. */
export class ClientClosedError extends Error {
  override readonly name = "ClientClosedError";

  constructor() {
    super("aophub: client closed");
  }
}

export function rejectionError(rejection: Rejection): AophubError {
  return new AophubError(rejection.code, rejection.message, rejection.retryable);
}

export function protocolError(failure: ProtocolError): AophubError {
  return new AophubError(failure.code, failure.message, failure.retryable);
}
