// mcp-app-server-client in a browser or a renderer (the `browser` condition of the package's `.`): everything of the
// Node entry that runs there. `AppServerClient.spawn` is Node's only (its sidecar module resolves, through the
// package's `#sidecar` import, to a stub that says so); a renderer talks to the sidecar through its host, e.g. over
// `messagePortTransport`.
export * from "./index.js";
