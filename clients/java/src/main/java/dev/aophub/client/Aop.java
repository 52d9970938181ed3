package dev.aophub.client;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.aophub.aop.Content;
import dev.aophub.aop.Event;
import dev.aophub.aop.Message;
import dev.aophub.aop.TextContent;
import dev.aophub.api.v1.AnswerInteractionRequest;
import dev.aophub.api.v1.Approval;
import dev.aophub.api.v1.Interaction;
import dev.aophub.api.v1.InteractionAnswer;

/** Small helpers for the AOP messages a client builds and reads most. */
public final class Aop {
  private static final String INTERACTION_TYPE_URL =
      "type.googleapis.com/" + Interaction.getDescriptor().getFullName();

  private Aop() {}

  /** A user message with one text part: the input of a turn. */
  public static Message userText(String text) {
    return Message.newBuilder()
        .setRole("user")
        .addContent(Content.newBuilder().setText(TextContent.newBuilder().setText(text)))
        .build();
  }

  /** The text parts of a message, joined. */
  public static String text(Message message) {
    StringBuilder text = new StringBuilder();
    for (Content part : message.getContentList()) {
      text.append(part.getText().getText());
    }
    return text.toString();
  }

  /** Whether the event is the turn_ended of this turn. */
  public static boolean turnEnded(Event event, String turnId) {
    return event.hasTurnEnded() && event.getTurnId().equals(turnId);
  }

  /**
   * The interaction an event announces (its extension is an aophub.v1.Interaction), or null. A
   * pending one waits for {@link HubClient#answerInteraction}; later events of the same id tell
   * how it ended.
   */
  public static Interaction interactionOf(Event event) {
    if (!event.hasExtension() || !event.getExtension().getTypeUrl().equals(INTERACTION_TYPE_URL)) {
      return null;
    }
    try {
      return event.getExtension().unpack(Interaction.class);
    } catch (InvalidProtocolBufferException e) {
      return null;
    }
  }

  /** The answer to an approval: approved or not, with an optional reason shown to the agent. */
  public static AnswerInteractionRequest approve(String interactionId, boolean approved, String reason) {
    return AnswerInteractionRequest.newBuilder()
        .setInteractionId(interactionId)
        .setAnswer(InteractionAnswer.newBuilder()
            .setApproval(Approval.newBuilder().setApproved(approved).setReason(reason)))
        .build();
  }
}
