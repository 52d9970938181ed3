package dev.aophub.client;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * A TCP forwarder on 127.0.0.1 in front of the hub whose connections the test can cut, as a
 * network failure would: {@link #cut()} closes both sockets of every open connection. It counts
 * the connections made through it (the client's dials).
 */
final class CuttableProxy implements AutoCloseable {
  private final ServerSocket server;
  private final InetSocketAddress target;
  private final List<Socket> open = new ArrayList<>();
  private int dials;

  CuttableProxy(String hubUrl) throws IOException {
    URI uri = URI.create(hubUrl);
    target = new InetSocketAddress(uri.getHost(), uri.getPort());
    server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::accept, "proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  String url() {
    return "http://127.0.0.1:" + server.getLocalPort();
  }

  synchronized int dials() {
    return dials;
  }

  /** Cuts every open connection; returns how many were open. */
  synchronized int cut() {
    int count = open.size() / 2;
    for (Socket socket : open) {
      try {
        socket.close();
      } catch (IOException ignored) {
        // already closed
      }
    }
    open.clear();
    return count;
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        Socket upstream = new Socket(target.getAddress(), target.getPort());
        synchronized (this) {
          dials++;
          open.add(client);
          open.add(upstream);
        }
        pump(client, upstream);
        pump(upstream, client);
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private static void pump(Socket from, Socket to) throws IOException {
    InputStream in = from.getInputStream();
    OutputStream out = to.getOutputStream();
    Thread thread = new Thread(() -> {
      byte[] buffer = new byte[64 * 1024];
      try {
        for (int n; (n = in.read(buffer)) != -1; ) {
          out.write(buffer, 0, n);
        }
      } catch (IOException ignored) {
        // cut
      }
      try {
        from.close();
        to.close();
      } catch (IOException ignored) {
        // already closed
      }
    }, "proxy-pump");
    thread.setDaemon(true);
    thread.start();
  }

  @Override
  public void close() throws IOException {
    server.close();
    cut();
  }
}
