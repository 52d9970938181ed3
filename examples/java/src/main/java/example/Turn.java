package example;

import dev.aophub.aop.Event;
import dev.aophub.aop.OpenSessionRequest;
import dev.aophub.aop.RunTurnRequest;
import dev.aophub.aop.TurnReceipt;
import dev.aophub.client.Aop;
import dev.aophub.client.Delivery;
import dev.aophub.client.HubClient;
import dev.aophub.client.Watch;
import java.util.HashMap;
import java.util.Map;

/**
 * Runs one turn on an aophub hub and streams the answer.
 *
 * <pre>
 *   AOPHUB_TOKEN=KEY java -cp ... example.Turn --server http://127.0.0.1:8080 -p "hello"
 * </pre>
 *
 * <p>It opens a session on the node (the built-in "local" by default), runs the prompt as a turn,
 * prints the answer as it streams, and ends with the session id and the cursor of the last event
 * it read. Pass both back ({@code --session ID --cursor CURSOR}) to run the next turn in the same
 * session, picking up exactly after that event. Connection drops while it runs are the client's
 * business: it dials again and the watch resumes by itself.
 */
public final class Turn {
  public static void main(String[] args) {
    Map<String, String> flags = new HashMap<>(Map.of(
        "--server", "http://127.0.0.1:8080", "--node", "local", "-p", "hello", "--session", "", "--cursor", ""));
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!flags.containsKey(args[i])) {
        System.err.println("usage: Turn [--server URL] [--node ID] [-p PROMPT] [--session ID --cursor CURSOR]");
        System.exit(2);
      }
      flags.put(args[i], args[i + 1]);
    }
    String token = System.getenv("AOPHUB_TOKEN");
    if (token == null || token.isEmpty()) {
      System.err.println("example: set AOPHUB_TOKEN to the hub's access key");
      System.exit(1);
    }
    run(flags.get("--server"), token, flags.get("--node"), flags.get("-p"), flags.get("--session"), flags.get("--cursor"));
  }

  static void run(String server, String token, String node, String prompt, String sessionId, String cursor) {
    try (HubClient hub = HubClient.connect(server, token)) {
      if (sessionId.isEmpty()) {
        sessionId = hub.openSession(OpenSessionRequest.newBuilder().setNodeId(node).build()).getId();
      }
      // Watch first, then run: the turn's first deltas may come before runTurn returns.
      try (Watch watch = hub.watch(sessionId, cursor)) {
        TurnReceipt turn = hub.runTurn(
            RunTurnRequest.newBuilder().setSessionId(sessionId).setInput(Aop.userText(prompt)).build());
        Map<String, String> shown = new HashMap<>(); // message id -> the text printed from its deltas
        while (true) {
          Delivery delivery = watch.next();
          Event event = delivery.event();
          if (!event.getTurnId().equals(turn.getTurnId())) {
            continue; // earlier turns of the session, replayed
          }
          if (event.hasMessageDelta()) {
            String text = event.getMessageDelta().getText();
            shown.merge(event.getMessageDelta().getMessageId(), text, String::concat);
            System.out.print(text);
          } else if (event.hasMessage() && event.getMessage().getRole().equals("assistant")) {
            // The complete message is authoritative: print what deltas lost to a reconnect
            // did not show.
            String full = Aop.text(event.getMessage());
            String seen = shown.getOrDefault(event.getMessage().getId(), "");
            System.out.print(full.startsWith(seen) ? full.substring(seen.length()) : "\n" + full);
          } else if (event.hasTurnEnded()) {
            System.out.printf("%n[turn %s]%nsession %s cursor %s%n",
                event.getTurnEnded().getStopReason(), sessionId, watch.cursor());
            return;
          }
        }
      }
    }
  }
}
