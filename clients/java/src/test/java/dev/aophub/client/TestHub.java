package dev.aophub.client;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The real hub of the tests: one conformance launcher (python -m tests.support.conformance_hub,
 * clients/conformance/README.md) per test JVM, started on first use with --http2 (the
 * management calls go over gRPC). It stops when its stdin closes: at the JVM's exit, or when the
 * JVM dies.
 */
final class TestHub {
  final String url;
  final String token;
  final String node;
  final int maxWatches;
  final int maxFrameBytes;

  private static TestHub instance;

  private TestHub(String url, String token, String node, int maxWatches, int maxFrameBytes) {
    this.url = url;
    this.token = token;
    this.node = node;
    this.maxWatches = maxWatches;
    this.maxFrameBytes = maxFrameBytes;
  }

  static synchronized TestHub get() throws IOException {
    if (instance == null) {
      instance = start();
    }
    return instance;
  }

  private static TestHub start() throws IOException {
    Path root = Path.of(System.getProperty("aophub.root", "../..")).toAbsolutePath().normalize();
    String python = System.getenv("AOPHUB_PYTHON");
    if (python == null || python.isEmpty()) {
      python = root.resolve(".venv/bin/python").toString();
    }
    if (!Files.isExecutable(Path.of(python))) {
      throw new IOException(python + " not found: run `make install` first (or set AOPHUB_PYTHON)");
    }
    Process process = new ProcessBuilder(python, "-m", "tests.support.conformance_hub", "--http2")
        .directory(root.toFile())
        .redirectError(ProcessBuilder.Redirect.INHERIT)
        .start();
    OutputStream stdin = process.getOutputStream();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        stdin.close(); // the launcher stops the node and the hub when its stdin ends
        process.waitFor(10, TimeUnit.SECONDS);
      } catch (IOException | InterruptedException e) {
        process.destroy();
      }
    }));
    BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    String ready = out.readLine(); // the launcher gives up by itself if the hub does not start
    if (ready == null) {
      throw new IOException("the conformance hub exited before it was ready (its log is above)");
    }
    return new TestHub(
        field(ready, "url"), field(ready, "token"), field(ready, "node"),
        Integer.parseInt(field(ready, "max_watches")), Integer.parseInt(field(ready, "max_frame_bytes")));
  }

  /** One field of the launcher's flat JSON line (strings without escapes, and numbers). */
  private static String field(String json, String name) throws IOException {
    Matcher match = Pattern.compile("\"" + name + "\":\\s*(\"([^\"]*)\"|(\\d+))").matcher(json);
    if (!match.find()) {
      throw new IOException("no " + name + " in the ready line " + json);
    }
    return match.group(2) != null ? match.group(2) : match.group(3);
  }
}
