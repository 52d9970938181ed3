// A session's workspace files on its node: browse, download, upload. Each
// operation is one aophub.v1.WorkspaceProtocolMessage call (an aop.file request
// the hub relays to the session's node) on the application WebSocket; it needs
// the token's `workspace` scope and a node that serves aop.file.

import { type Result, type ProtocolMessage as FileMessage, ProtocolMessageSchema as FileSchema } from "@aophub/client/gen/aop/file/protocol_pb.js";
import { WorkspaceProtocolMessageSchema } from "@aophub/client/gen/aophub/v1/workspace_pb.js";

import { errorText, h, replace } from "./dom.js";
import type { Context } from "./main.js";
import { anyPack, anyUnpack, create } from "./protobuf.js";

type FileRequest = Exclude<FileMessage["message"], { case: "result" } | { case: undefined }>;

function join(dir: string, name: string): string {
  return dir ? `${dir}/${name}` : name;
}

function size(bytes: bigint): string {
  const n = Number(bytes);
  return n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / (1 << 20)).toFixed(1)} MiB`;
}

export function filesView(context: Context, sessionId: string): () => void {
  const { client } = context.link;
  document.title = "aophub: files";
  let dir = "";

  async function call(request: FileRequest): Promise<Result> {
    const message = create(WorkspaceProtocolMessageSchema, {
      message: { case: "call", value: { sessionId, request: { case: "file", value: create(FileSchema, { message: request }) } } },
    });
    const answer = anyUnpack(await client.call(anyPack(WorkspaceProtocolMessageSchema, message)), WorkspaceProtocolMessageSchema);
    const file = answer?.message.case === "file" ? answer.message.value.message : undefined;
    if (file?.case !== "result") throw new Error("the node answered with something other than a file result");
    return file.value;
  }

  const where = h("p", { class: "meta", id: "files-path" });
  const list = h("ul", { class: "sessions", id: "file-list", "aria-label": "Files" });
  const upload = h("input", {
    type: "file",
    id: "upload",
    multiple: true,
    class: "visually-hidden",
    onchange: () => {
      const chosen = Array.from(upload.files ?? []);
      upload.value = "";
      void (async () => {
        for (const file of chosen) {
          try {
            const data = new Uint8Array(await file.arrayBuffer());
            await call({ case: "writeRequest", value: { $typeName: "aop.file.WriteRequest", path: join(dir, file.name), data } });
            context.status(`Uploaded ${file.name}.`);
          } catch (err) {
            context.status(`Not uploaded: ${errorText(err)}`, "error");
          }
        }
        await open(dir);
      })();
    },
  });

  async function download(path: string, name: string): Promise<void> {
    try {
      const chunks: Uint8Array[] = [];
      let offset = 0n;
      for (;;) {
        const result = await call({ case: "readRequest", value: { $typeName: "aop.file.ReadRequest", path, offset, limit: 1 << 20 } });
        chunks.push(new Uint8Array(result.data));
        offset += BigInt(result.data.byteLength);
        if (result.eof || result.data.byteLength === 0) break;
      }
      const url = URL.createObjectURL(new Blob(chunks as BlobPart[]));
      const link = h("a", { href: url, download: name, hidden: true });
      document.body.appendChild(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      context.status(`Not downloaded: ${errorText(err)}`, "error");
    }
  }

  async function open(path: string): Promise<void> {
    try {
      const result = await call({ case: "listRequest", value: { $typeName: "aop.file.ListRequest", path } });
      dir = path;
      where.textContent = `/${path}`;
      const entries = [...result.entries].sort((a, b) => Number(b.isDirectory) - Number(a.isDirectory) || a.name.localeCompare(b.name));
      const up = path ? h("li", {}, h("button", { class: "ghost entry", onclick: () => void open(path.split("/").slice(0, -1).join("/")) }, "..")) : null;
      replace(
        list,
        up,
        entries.map((entry) =>
          h(
            "li",
            { "data-entry": entry.name },
            entry.isDirectory
              ? h("button", { class: "ghost entry dir", onclick: () => void open(join(path, entry.name)) }, `${entry.name}/`)
              : h(
                  "button",
                  { class: "ghost entry", title: "Download", onclick: () => void download(join(path, entry.name), entry.name) },
                  entry.name,
                  h("span", { class: "meta" }, size(entry.size)),
                ),
          ),
        ),
        entries.length === 0 ? h("li", { class: "empty" }, "Empty folder.") : null,
      );
    } catch (err) {
      replace(list, h("li", { class: "empty error", role: "alert" }, `Cannot list /${path}: ${errorText(err)}`));
    }
  }

  replace(
    context.main,
    h(
      "section",
      { class: "page" },
      h(
        "div",
        { class: "chat-head" },
        h("a", { href: `#/s/${encodeURIComponent(sessionId)}`, class: "back", "aria-label": "Back to the chat" }, "←"),
        h("h1", { class: "grow" }, "Files"),
        context.can.workspace ? h("label", { for: "upload", class: "attach upload", title: "Upload files" }, upload, "Upload") : null,
      ),
      where,
      list,
    ),
  );
  void open("");
  return () => {};
}
