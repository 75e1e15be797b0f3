// mcp-app-server-client: the typed client runtime for hosts of mcp-app-server.
//   client.ts          the app client: typed requests, events, waitFor, elicitation, spawn and restart
//   apps.ts            MCP Apps: a server's view read whole, and its own requests (origin "app") for AppBridge
//   rpc/connection.ts  the protocol core: messages in and out, dispatch of notifications and server requests
//   rpc/emitter.ts     the one typed listener set: client events and notifications
//   supervisor.ts      restarts of a crashed sidecar: backoff, attempts, the stable-run reset
//   rpc/pending.ts     where a response is matched to its request (ids, timeouts and cancellation live beside it)
//   rpc/lines.ts       where a line is read (linear, capped at the daemon's MAX_OUTPUT_LINE_BYTES)
//   rpc/guard.ts       the schema guard, over validators compiled when the package is built
//   rpc/port.ts        a transport over a postMessage pair (a renderer talking to the sidecar through its host)
//   sidecar.ts         Node only: the daemon as a child process, its stderr (`#sidecar`; a browser gets a stub)
//   browser.ts         the `browser` condition of `.`: the same API, nothing of Node
//   apps-host.ts       `./apps-host` (Node): the MCP Apps sandbox server, the views' policies
//   apps-view.ts       `./apps-view` (browser): mount a view for a tool call through the sandbox
export { AppServerClient, CLIENT_INFO, DEFAULT_REQUEST_TIMEOUT_MS, elicitationOfMode } from "./client.js";
export type {
  AnyElicitationRequest,
  ClientEvents,
  ClientOptions,
  ElicitationContext,
  ElicitationHandler,
  EventName,
  FormElicitationRequest,
  EventPayload,
  Method,
  PageItem,
  PaginatedMethod,
  ParamsOf,
  RequestArgs,
  RequestOptions,
  RestartPolicy,
  ResultOf,
  SidecarExit,
  SpawnOptions,
  ToolCallBackgroundParams,
  ToolCallForegroundParams,
  UrlElicitationRequest,
  WaitOptions,
} from "./client.js";
export { APP_VIEW_MIME_TYPE, AppView, AppViewUnavailable, hasAppView } from "./apps.js";
export type {
  AppCallToolParams,
  AppCursorParams,
  AppReadResourceParams,
  AppReadResourceResult,
  AppToolResult,
  AppViewTarget,
} from "./apps.js";
export { AppServerError, ProtocolViolation, isAppServerError } from "./errors.js";
export type { AppServerErrorOf, ErrorSource, SchemaIssue, ViolationKind } from "./errors.js";
export { extensionKey, isServerName, parseToolFullName, toolFullName } from "./names.js";
export { streamTransport } from "./rpc/transport.js";
export { PORT_CLOSED, messagePortTransport } from "./rpc/port.js";
export type { MessagePortLike } from "./rpc/port.js";
export type {
  LineOptions,
  ReadableLike,
  Transport,
  TransportClosed,
  TransportReceiver,
  WritableLike,
} from "./rpc/transport.js";
export type { DroppedLine } from "./rpc/lines.js";
export type { SidecarOptions, StderrStream } from "./sidecar.js";
export {
  DAEMON_NAME,
  DAEMON_VERSION,
  ERROR_CODES,
  MAX_MESSAGE_BYTES,
  MAX_OUTPUT_LINE_BYTES,
  PROTOCOL_VERSION,
  MCP_APPS,
  TOOL_NAME_RULE,
} from "./generated/protocol.js";
export type * from "./generated/protocol.js";
