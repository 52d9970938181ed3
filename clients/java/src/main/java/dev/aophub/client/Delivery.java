package dev.aophub.client;

import dev.aophub.aop.Event;

/**
 * One event a watch yields. {@code cursor} is set for persisted events (save the last one to
 * resume after your program restarts) and empty for deltas, which are live only and never
 * replayed.
 */
public record Delivery(String cursor, Event event) {
  /** Whether the event is stored (it has a cursor); deltas are not. */
  public boolean persisted() {
    return !cursor.isEmpty();
  }
}
