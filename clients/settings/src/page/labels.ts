// Words for the protocol's unions, typed by the generated types: each table must name every member (`satisfies
// Record<…>`, read with no fallback), so a status, state or reason the daemon gains fails the page's build until it
// has words here.
import type {
  ErrorReason,
  ServerRequestResolved,
  ServerStatus,
  StartupStatusUpdated,
} from "mcp-app-server-client";

/** Where a server's connection is (`mcpServerStatus/list`). */
export type RuntimeStatus = ServerStatus["runtimeStatus"];
/** How a start went (`mcpServer/startupStatus/updated`). */
export type StartupState = StartupStatusUpdated["status"];
/** How a server authenticates. */
export type AuthStatus = ServerStatus["authStatus"];
/** What a server was told about a form (`serverRequest/resolved`). */
export type ResolvedAction = ServerRequestResolved["action"];

export const RUNTIME_STATUS_LABEL = {
  notStarted: "not started",
  starting: "starting",
  connected: "ready",
  idle: "asleep (restarts on next use)",
  authenticationRequired: "login needed",
  failed: "failed",
  cancelled: "cancelled",
  disabled: "disabled",
} as const satisfies Record<RuntimeStatus, string>;

export const STARTUP_STATE_LABEL = {
  starting: "starting",
  ready: "ready",
  failed: "failed",
  cancelled: "cancelled",
} as const satisfies Record<StartupState, string>;

export const AUTH_STATUS_LABEL = {
  unknown: "unknown",
  unsupported: "none",
  notLoggedIn: "not logged in",
  bearerToken: "bearer token",
  oAuth: "OAuth",
} as const satisfies Record<AuthStatus, string>;

export const RESOLVED_ACTION_LABEL = {
  accept: "accepted",
  decline: "declined",
  cancel: "cancelled",
} as const satisfies Record<ResolvedAction, string>;

/**
 * Each typed reason in a few plain words, shown next to the reason itself (the sentence before it comes from the
 * error's own message and details, `failure.ts`).
 */
export const REASON_LABEL = {
  alreadyInitialized: "the connection was already initialized",
  authRequired: "a login is needed",
  bundleTooLarge: "the bundle is too large",
  callbackPortInUse: "the login's callback port is taken",
  cancelled: "cancelled",
  catalogTooLarge: "the catalog is too large",
  configTooLarge: "the config file is too large",
  conflictingServerConfig: "two configs with one name",
  connectionLost: "the connection was lost",
  inlineSecret: "a secret written into the config",
  insecureUrl: "a URL the policy refuses",
  insufficientScope: "the login grants too little",
  internal: "an internal error of the daemon",
  invalidArguments: "arguments the tool's schema refuses",
  invalidBundle: "not a valid bundle",
  invalidElicitationResponse: "an answer that does not fit the form",
  invalidHeader: "a header the policy refuses",
  invalidInput: "a value the entry does not accept",
  invalidOutput: "output that breaks the tool's schema",
  invalidParams: "parameters the method refuses",
  invalidRequest: "a request the daemon cannot read",
  invalidServerName: "a server name the rule refuses",
  invalidToolName: "a tool name the rule refuses",
  messageTooLarge: "a message too large",
  methodNotFound: "a method the daemon does not have",
  missingEnvVar: "an environment variable is not set",
  missingInput: "a required value is missing",
  secretStoreLocked: "the OS keychain is locked",
  missingSecret: "a stored secret is no longer in the OS keychain",
  noThreadOwner: "no thread owns this",
  notARegularFile: "not a regular file",
  notInitialized: "the connection is not initialized",
  notRunning: "not running",
  oauthFailed: "the login failed",
  oauthHeaderConflict: "a header conflicts with the login",
  originNotAllowed: "an origin the login does not allow",
  overloaded: "the daemon is overloaded",
  parseError: "not JSON",
  policyDenied: "your administrator's policy does not allow it",
  reauthenticationRequired: "a new login is needed",
  redactedValue: "a stored secret cannot follow",
  redirectRejected: "a redirect was refused",
  registryUnavailable: "the registry cannot be reached",
  reservedHeader: "a header the protocol reserves",
  responseTooLarge: "a response too large",
  resourceTooLarge: "the view is too large to show",
  retired: "a retired method",
  revisionMismatch: "changed meanwhile",
  serverBusy: "busy; retry",
  serverExists: "the name is taken",
  startupFailed: "could not start",
  storageFull: "the data folder's disk is full",
  storeCorrupted: "the store cannot be read",
  threadArchived: "the thread is archived",
  threadRequired: "a thread is needed",
  timeout: "no answer in time",
  tooManyPages: "too many pages",
  tooManyTasks: "too many background calls in this thread",
  tooManyServers: "too many servers",
  tooManyTools: "too many tools",
  toolNotAllowed: "a tool this caller may not call",
  transportNotAllowed: "a transport the policy refuses",
  unknownLogin: "no such login",
  unknownPrompt: "no such prompt",
  unknownRef: "no such archived ref",
  unknownRegistryEntry: "no such registry entry",
  unknownResource: "no such resource",
  unknownServer: "no such server",
  unknownTask: "no such background call",
  unknownThread: "no such thread",
  unknownTool: "no such tool",
  unsafeBundle: "the bundle has an unsafe entry",
  unsafeEnv: "an environment variable the policy refuses",
  unsafePath: "a path the daemon refuses",
  unsupported: "not supported",
  upstreamError: "the server answered with an error",
  urlElicitationRequired: "the server asks for a page to be opened first",
} as const satisfies Record<ErrorReason, string>;
