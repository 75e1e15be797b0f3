// mcp-app-server-client: the typed client runtime for hosts of mcp-app-server.
export { AppServerClient, CLIENT_INFO } from "./client.js";
export type {
  ClientEvents,
  ClientOptions,
  ElicitationContext,
  ElicitationHandler,
  EventName,
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
} from "./client.js";
export { AppServerError, ProtocolViolation, isAppServerError } from "./errors.js";
export type { AppServerErrorOf, ErrorSource, SchemaIssue, ViolationKind } from "./errors.js";
export { extensionKey, parseToolFullName, toolFullName } from "./names.js";
export { streamTransport } from "./transport.js";
export type { ReadableLike, Transport, TransportClosed, TransportReceiver, WritableLike } from "./transport.js";
export type { SidecarOptions } from "./sidecar.js";
export { ERROR_CODES } from "./generated/protocol.js";
export type * from "./generated/protocol.js";
