// Markdown to DOM, for text that is still arriving: it is re-rendered whole on
// every frame, so an unclosed fence or emphasis simply renders as far as it goes.
// Supported: headings, paragraphs, fenced code (highlighted), inline code,
// bold, italic, links (http, https and mailto only), lists, quotes, rules.

import { append, h } from "./dom.js";

const KEYWORDS = new Set(
  (
    "as async await break case catch class const continue def default del elif else enum except export extends false " +
    "finally fn for from func function go if impl import in interface let match mod mut new nil none null package " +
    "pass pub raise return self static struct super switch this throw trait true try type typeof undefined use var " +
    "void while with yield True False None"
  ).split(" "),
);
const TOKEN =
  /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/)|("(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|`(?:[^`\\]|\\.)*`?)|(\b\d[\d_.xXa-fA-F]*\b)|([A-Za-z_$][\w$]*)/g;

/** Code as spans with the classes tok-comment, tok-string, tok-number, tok-keyword. */
export function highlight(code: string, language: string): Node[] {
  const hashComments = /^(py|python|sh|bash|shell|zsh|yaml|yml|toml|rb|ruby|r|perl|make|makefile|dockerfile)$/i.test(language);
  const nodes: Node[] = [];
  let last = 0;
  for (const match of code.matchAll(TOKEN)) {
    const [token, comment, string, number, word] = match;
    const start = match.index;
    let kind = "";
    if (comment !== undefined && (comment.startsWith("#") ? hashComments : true)) kind = "comment";
    else if (string !== undefined) kind = "string";
    else if (number !== undefined) kind = "number";
    else if (word !== undefined && KEYWORDS.has(word)) kind = "keyword";
    if (kind === "") continue;
    if (start > last) nodes.push(document.createTextNode(code.slice(last, start)));
    nodes.push(h("span", { class: `tok-${kind}` }, token));
    last = start + token.length;
  }
  if (last < code.length) nodes.push(document.createTextNode(code.slice(last)));
  return nodes;
}

const INLINE = /(`+)([\s\S]*?)\1|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|_([^_\s][^_]*)_|\[([^\]]+)\]\(([^)\s]+)\)/g;

/** Inline markdown of one block's text. */
export function inline(text: string): Node[] {
  const nodes: Node[] = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    const [whole, , code, bold1, bold2, em1, em2, label, url] = match;
    if (match.index > last) nodes.push(document.createTextNode(text.slice(last, match.index)));
    if (code !== undefined) nodes.push(h("code", {}, code));
    else if (bold1 !== undefined || bold2 !== undefined) nodes.push(h("strong", {}, ...inline(bold1 ?? bold2 ?? "")));
    else if (em1 !== undefined || em2 !== undefined) nodes.push(h("em", {}, ...inline(em1 ?? em2 ?? "")));
    else if (label !== undefined && url !== undefined && /^(https?:|mailto:)/i.test(url)) {
      nodes.push(h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, ...inline(label)));
    } else nodes.push(document.createTextNode(whole));
    last = match.index + whole.length;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

/** Renders markdown source into a fragment. */
export function markdown(source: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  let paragraph: string[] = [];
  const flush = () => {
    if (paragraph.length > 0) fragment.appendChild(h("p", {}, ...inline(paragraph.join("\n"))));
    paragraph = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*(```+|~~~+)\s*([\w+#.-]*)/.exec(line);
    if (fence) {
      flush();
      const code: string[] = [];
      for (i++; i < lines.length && !lines[i].trimStart().startsWith(fence[1]); i++) code.push(lines[i]);
      const language = fence[2] ?? "";
      fragment.appendChild(
        h("pre", { class: "code", "data-lang": language || null }, h("code", {}, ...highlight(code.join("\n"), language))),
      );
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      const level = Math.min(heading[1].length + 2, 6); // h3..h6: the page has its own h1 and h2
      fragment.appendChild(h(`h${level}` as "h3", {}, ...inline(heading[2])));
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      fragment.appendChild(h("hr"));
      continue;
    }
    const item = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (item) {
      flush();
      const ordered = /\d/.test(item[1]);
      const list = h(ordered ? "ol" : "ul");
      for (; i < lines.length; i++) {
        const next = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(lines[i]);
        if (!next || /\d/.test(next[1]) !== ordered) break;
        list.appendChild(h("li", {}, ...inline(next[2])));
      }
      i--;
      fragment.appendChild(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      const quoted: string[] = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i++) quoted.push(lines[i].replace(/^\s*>\s?/, ""));
      i--;
      const quote = h("blockquote");
      append(quote, markdown(quoted.join("\n")));
      fragment.appendChild(quote);
      continue;
    }
    if (line.trim() === "") flush();
    else paragraph.push(line);
  }
  flush();
  return fragment;
}
