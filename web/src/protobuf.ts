// The copy of @bufbuild/protobuf that the TypeScript client is built with
// (clients/ts/node_modules), so that messages made here are the client's own
// and the bundle holds one copy.
export { create } from "../../clients/ts/node_modules/@bufbuild/protobuf/dist/esm/index.js";
export { anyPack } from "../../clients/ts/node_modules/@bufbuild/protobuf/dist/esm/wkt/index.js";
export { anyUnpack } from "../../clients/ts/node_modules/@bufbuild/protobuf/dist/esm/wkt/index.js";
