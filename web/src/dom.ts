// A tiny DOM builder: the console never assembles HTML from strings, so no
// text from the hub or an agent can become markup (and the CSP forbids inline code anyway).

type Child = Node | string | null | undefined | false;
type Attr = string | number | boolean | null | undefined | ((event: Event) => void);

/** An element with attributes (`on...` keys add listeners, booleans toggle) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, Attr> = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === "function") element.addEventListener(key.slice(2), value);
    else if (value === true) element.setAttribute(key, "");
    else element.setAttribute(key, String(value));
  }
  append(element, ...children);
  return element;
}

/** Appends children, skipping empty ones. */
export function append(parent: Node, ...children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

/** Replaces every child of parent. */
export function replace(parent: Node, ...children: (Child | Child[])[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, ...children);
}

/** A human message for any error (a ConnectError, an AophubError, a DOMException...). */
export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message.replace(/^\[\w+\]\s*/, "");
  return String(err);
}

/** "3 s", "1.2 s", "250 ms". */
export function duration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}
