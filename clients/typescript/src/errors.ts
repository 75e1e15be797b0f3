import { ERROR_CODES } from "./generated/protocol.js";
import type { ErrorCode, ErrorData, ErrorDataByReason, ErrorReason, JsonRpcError } from "./generated/protocol.js";

/** Where an error was decided: answered by the daemon, or made by this client (timeout, abort, lost sidecar). */
export type ErrorSource = "daemon" | "client";

/**
 * A failed request, typed by its reason: `data` is `reason` plus the details that reason carries.
 *
 * Branch on `data.reason` (which narrows `data`) or `error.is("unknownServer")`, never on `message`.
 */
export class AppServerError extends Error {
  override readonly name = "AppServerError";
  /** The JSON-RPC error code (it follows from `reason`). */
  readonly code: ErrorCode;
  /** The typed reason (also `data.reason`). */
  readonly reason: ErrorReason;
  /** `reason` and its details, a union discriminated by `reason`. */
  readonly data: ErrorData;
  /** The method of the request that failed, when known. */
  readonly method: string | undefined;
  /** Whether the daemon answered this error or the client decided it. */
  readonly source: ErrorSource;

  constructor(error: JsonRpcError, method?: string, source: ErrorSource = "daemon") {
    super(error.message);
    this.code = error.code;
    this.reason = error.data.reason;
    this.data = error.data;
    this.method = method;
    this.source = source;
  }

  /** Whether this is an error of `reason`; narrows `data` to that reason's details. */
  is<R extends ErrorReason>(reason: R): this is AppServerErrorOf<R> {
    return this.reason === reason;
  }

  /** An error this client decided (never answered by the daemon), in the daemon's shape. */
  static local<R extends ErrorReason>(
    reason: R,
    message: string,
    details: Omit<ErrorDataByReason[R], "reason">,
    method?: string,
  ): AppServerErrorOf<R> {
    const data = { ...details, reason } as ErrorDataByReason[R] & ErrorData;
    return new AppServerError({ code: ERROR_CODES[reason], message, data }, method, "client") as AppServerErrorOf<R>;
  }
}

/** An `AppServerError` of one reason, with that reason's `data`. */
export type AppServerErrorOf<R extends ErrorReason> = AppServerError & {
  readonly reason: R;
  readonly data: ErrorDataByReason[R];
};

/** Whether `value` is an `AppServerError` (of `reason`, when given; then `data` is that reason's). */
export function isAppServerError<R extends ErrorReason = ErrorReason>(
  value: unknown,
  reason?: R,
): value is AppServerErrorOf<R> {
  return value instanceof AppServerError && (reason === undefined || value.reason === reason);
}

/** One way a message misses the protocol's schema. */
export interface SchemaIssue {
  /** A JSON pointer into the message ("" for the message itself). */
  readonly path: string;
  /** What is wrong there. */
  readonly message: string;
}

/** What kind of incoming message failed the check. */
export type ViolationKind = "message" | "response" | "error" | "notification" | "serverRequest";

/**
 * An incoming message that does not match the protocol's JSON Schema. It never reaches the caller: a response
 * rejects its request with this, a notification or server request is dropped (an elicitation is answered `cancel`)
 * and reported through `client.on("error", …)`.
 */
export class ProtocolViolation extends Error {
  override readonly name = "ProtocolViolation";
  /** What was being checked. */
  readonly kind: ViolationKind;
  /** The method concerned (the request's, the notification's), when known. */
  readonly method: string | undefined;
  /** How the message misses the schema. */
  readonly issues: readonly SchemaIssue[];
  /** The message as received (parsed when it was JSON, else the text). */
  readonly received: unknown;

  constructor(kind: ViolationKind, method: string | undefined, issues: readonly SchemaIssue[], received: unknown) {
    const what = method === undefined ? kind : `${kind} of ${method}`;
    const first = issues[0];
    super(`${what} does not match the protocol${first ? `: ${first.path || "/"} ${first.message}` : ""}`);
    this.kind = kind;
    this.method = method;
    this.issues = issues;
    this.received = received;
  }
}
