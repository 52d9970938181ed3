// The terminal's screen: xterm.js, in its own chunk that the console loads
// only when a terminal is opened (the first load stays small). Nothing else
// of the console is imported here, so the chunk holds xterm.js and this file.

import { Terminal as Xterm } from "@xterm/xterm";

/** A mounted screen: write the session's bytes, read the user's keys and size. */
export interface Screen {
  write(data: Uint8Array): void;
  /** Columns and rows that fit the container now (it resizes the screen). */
  fit(): { cols: number; rows: number };
  focus(): void;
  dispose(): void;
}

/**
 * xterm.js styles its screen with `<style>` elements it fills at run time,
 * which the console's Content-Security-Policy (`style-src 'self'`, no inline
 * styles) refuses. This routes them into constructed style sheets
 * (document.adoptedStyleSheets), which a CSP does not govern and page markup
 * cannot create: only this code does, with xterm's own rules. Installed once,
 * it changes document.createElement("style") only: the console creates no
 * other style element (the CSP would refuse it anyway).
 */
function bridgeStyleElements(doc: Document): void {
  const marker = doc as Document & { aophubStyleBridge?: true };
  if (marker.aophubStyleBridge) return;
  marker.aophubStyleBridge = true;
  const create = doc.createElement.bind(doc) as (tag: string, options?: ElementCreationOptions) => HTMLElement;
  doc.createElement = ((tag: string, options?: ElementCreationOptions) => {
    if (tag.toLowerCase() !== "style") return create(tag, options);
    const holder = create("template"); // inert: stands where xterm puts its style element
    const sheet = new CSSStyleSheet();
    let css = "";
    doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, sheet];
    Object.defineProperty(holder, "textContent", {
      get: () => css,
      set: (value: string | null) => {
        css = value ?? "";
        sheet.replaceSync(css);
      },
    });
    holder.remove = () => {
      doc.adoptedStyleSheets = doc.adoptedStyleSheets.filter((s) => s !== sheet);
      Element.prototype.remove.call(holder);
    };
    return holder;
  }) as typeof doc.createElement;
}

const FONT_SIZE = 14;
const CHAR_WIDTH = 0.6; // a monospace cell is about 0.6 em wide
const LINE_HEIGHT = 1.2;

/** Mounts xterm.js in container; keys go to onInput. */
export function mountScreen(container: HTMLElement, onInput: (data: string) => void): Screen {
  bridgeStyleElements(container.ownerDocument);
  const xterm = new Xterm({
    fontSize: FONT_SIZE,
    fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
    scrollback: 5000,
    cursorBlink: true,
    convertEol: false,
  });
  xterm.open(container);
  const input = xterm.onData(onInput);
  return {
    write: (data) => xterm.write(data),
    fit: () => {
      const cols = Math.max(20, Math.floor((container.clientWidth - 16) / (FONT_SIZE * CHAR_WIDTH)));
      const rows = Math.max(8, Math.floor((container.clientHeight - 8) / (FONT_SIZE * LINE_HEIGHT)));
      if (cols !== xterm.cols || rows !== xterm.rows) xterm.resize(cols, rows);
      return { cols, rows };
    },
    focus: () => xterm.focus(),
    dispose: () => {
      input.dispose();
      xterm.dispose();
    },
  };
}
