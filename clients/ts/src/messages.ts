// Small helpers for the messages a program builds and reads most.

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { anyIs, anyUnpack } from "@bufbuild/protobuf/wkt";

import { type Message, MessageSchema } from "./gen/aop/content_pb.js";
import type { Event } from "./gen/aop/event_pb.js";
import {
  type AnswerInteractionRequestSchema,
  type Interaction,
  InteractionSchema,
  InteractionState,
} from "./gen/aophub/v1/interaction_pb.js";

/** A user message with one text part: the input of a turn. */
export function userText(text: string): Message {
  return create(MessageSchema, { role: "user", content: [{ value: { case: "text", value: { text } } }] });
}

/** The text parts of a message, joined ("" for undefined). */
export function text(message: Message | undefined): string {
  let joined = "";
  for (const part of message?.content ?? []) {
    if (part.value.case === "text") joined += part.value.value.text;
  }
  return joined;
}

/** The complete message an event carries, if it is a `message` event. */
export function messageOf(event: Event): Message | undefined {
  return event.payload.case === "message" ? event.payload.value : undefined;
}

/** Whether event is the `turn_ended` of turnId (of any turn when turnId is omitted). */
export function isTurnEnded(event: Event, turnId?: string): boolean {
  return event.payload.case === "turnEnded" && (turnId === undefined || event.turnId === turnId);
}

/**
 * The interaction an event announces (its extension payload is an
 * aophub.v1.Interaction), or undefined. A pending one waits for
 * Client.answerInteraction; later events of the same id tell how it ended.
 */
export function interactionOf(event: Event): Interaction | undefined {
  if (event.payload.case !== "extension" || !anyIs(event.payload.value, InteractionSchema)) return undefined;
  return anyUnpack(event.payload.value, InteractionSchema);
}

/** Whether an event announces an interaction still waiting for its answer. */
export function isPending(interaction: Interaction | undefined): interaction is Interaction {
  return interaction?.state === InteractionState.PENDING;
}

/** The answer to an approval: approved or not, with an optional reason shown to the agent. */
export function approve(
  interactionId: string,
  approved: boolean,
  reason = "",
): MessageInitShape<typeof AnswerInteractionRequestSchema> {
  return { interactionId, answer: { answer: { case: "approval", value: { approved, reason } } } };
}
