// An Agent CLI Remote client as the protocol document describes one for Node: the `ws` package, one
// WebSocket to ws://127.0.0.1:<port> with no credential, JSON RemoteRequest text frames, responses
// matched by request_id. It chats, interrupts a streamed answer, drops its connection in the middle
// of another and resends the same request on a new connection. One JSON line per flow on stdout.
//
// usage: NODE_PATH=clients/ts/node_modules node agent_cli_client.cjs PORT LONG_TEXT
const WebSocket = require("ws");

const [port, longText] = process.argv.slice(2);
const uri = `ws://127.0.0.1:${port}`;

function open() {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(uri);
    const frames = [];
    const waiters = [];
    ws.on("message", (data) => {
      const frame = JSON.parse(data.toString());
      const waiter = waiters.shift();
      if (waiter) waiter(frame);
      else frames.push(frame);
    });
    ws.on("open", () => resolve({
      ws,
      send: (request) => ws.send(JSON.stringify(request)),
      next: () => new Promise((done) => {
        if (frames.length) done(frames.shift());
        else waiters.push(done);
      }),
    }));
    ws.on("error", reject);
  });
}

async function streamed(client, requestId, stopAfterChunks = Infinity) {
  let text = "";
  let chunks = 0;
  for (;;) {
    const frame = await client.next();
    if (frame.request_id !== requestId) continue;
    if ("Stream" in frame.response) {
      text += frame.response.Stream;
      chunks += 1;
      if (chunks >= stopAfterChunks) return { text, complete: null };
    } else if ("Complete" in frame.response) {
      return { text, complete: frame.response.Complete };
    } else {
      throw new Error(`unexpected frame ${JSON.stringify(frame)}`);
    }
  }
}

async function main() {
  const chat = await open();
  chat.send({ request_id: "test_001", input: { Text: "Hello" }, "": false, use_tools: true });
  const answer = await chat.next();
  console.log(JSON.stringify({ flow: "chat", frame: answer }));

  chat.send({ request_id: "node_stream_1", input: { Text: longText }, "": true, use_tools: true });
  await streamed(chat, "node_stream_1", 1);
  chat.send({ request_id: "node_interrupt_1", input: "Interrupt" });
  const interrupted = await streamed(chat, "node_stream_1");
  console.log(JSON.stringify({ flow: "interrupt", complete: interrupted.complete }));
  chat.ws.close();

  const first = await open();
  const request = { request_id: "node_resume_1", input: { Text: longText }, "": true, use_tools: true };
  first.send(request);
  const before = await streamed(first, "node_resume_1", 1);
  first.ws.terminate(); // the connection drops mid-answer
  const second = await open();
  second.send(request); // the client retries the same request on a new connection
  const after = await streamed(second, "node_resume_1");
  console.log(JSON.stringify({ flow: "resume", before: before.text, text: after.text, complete: after.complete }));
  second.ws.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
