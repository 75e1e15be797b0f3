// The schema guard: every incoming message checked against the protocol's JSON Schema, by validators Ajv compiled when
// the package was built (src/generated/validators.ts), so nothing is compiled, and no code made from text, at run time.
import { ProtocolViolation } from "../errors.js";
import type { SchemaIssue, ViolationKind } from "../errors.js";

/** A validator of Ajv's standalone code: `true` when the value matches, else `false` with `errors` set. */
export interface CompiledValidator {
  (value: unknown): boolean;
  readonly errors?:
    readonly { readonly instancePath: string; readonly keyword: string; readonly message?: string }[] | null;
}

/** Which schema type each incoming message is checked against. */
export interface ValidatorTables {
  /** The result type of each client request, by method. */
  readonly results: { readonly [method: string]: string };
  /** The params type of each notification the daemon sends. */
  readonly notifications: { readonly [method: string]: string };
  /** The params and result types of each request the daemon sends. */
  readonly serverRequests: { readonly [method: string]: { readonly params: string; readonly result: string } };
}

/** The envelope types of JSON-RPC messages. */
export type Envelope = "JsonRpcRequest" | "JsonRpcNotification" | "JsonRpcSuccessResponse" | "JsonRpcErrorResponse";

interface Compiled {
  readonly validators: { readonly [name: string]: CompiledValidator };
  readonly tables: ValidatorTables;
}

let loading: Promise<Compiled> | undefined;

/**
 * The compiled validators, loaded once per process. They are a large module: a client starts loading it when its
 * connection opens, so that reading it overlaps the sidecar's own start instead of delaying it.
 */
export function loadValidators(): Promise<Compiled> {
  loading ??= import("../generated/validators.js");
  return loading;
}

/** The fail-closed check of every incoming message against the protocol's JSON Schema. */
export class ProtocolGuard {
  private compiled: Compiled | undefined;
  private readonly ready: Promise<void>;

  constructor() {
    this.ready = loadValidators().then((compiled) => {
      this.compiled = compiled;
    });
  }

  /** Whether the validators are loaded (before that, incoming messages wait for `loaded`). */
  get isLoaded(): boolean {
    return this.compiled !== undefined;
  }

  /** Resolves once the validators are loaded. */
  get loaded(): Promise<void> {
    return this.ready;
  }

  /** Whether the daemon may send this server request. */
  knowsServerRequest(method: string): boolean {
    return Object.hasOwn(this.use().tables.serverRequests, method);
  }

  /** Check a message's envelope. */
  envelope(kind: Envelope, message: unknown, violation: ViolationKind, method?: string): void {
    this.check(kind, message, violation, method, message);
  }

  /** Check the result of a client request. */
  result(method: string, result: unknown, message: unknown): void {
    const name = own(this.use().tables.results, method);
    if (name === undefined) throw new ProtocolViolation("response", method, [unknownMethod(method)], message);
    this.check(name, result, "response", method, message, "/result");
  }

  /** Check a notification's params. */
  notification(method: string, params: unknown, message: unknown): void {
    const name = own(this.use().tables.notifications, method);
    if (name === undefined) throw new ProtocolViolation("notification", method, [unknownMethod(method)], message);
    this.check(name, params, "notification", method, message, "/params");
  }

  /** Check a server request's params. */
  serverRequest(method: string, params: unknown, message: unknown): void {
    const pair = own(this.use().tables.serverRequests, method);
    if (pair === undefined) throw new ProtocolViolation("serverRequest", method, [unknownMethod(method)], message);
    this.check(pair.params, params, "serverRequest", method, message, "/params");
  }

  /** How `value` misses what the client answers a server request of `method` with (none: it matches). */
  serverResponseIssues(method: string, value: unknown): SchemaIssue[] {
    const pair = own(this.use().tables.serverRequests, method);
    if (pair === undefined) return [unknownMethod(method)];
    const validate = this.validator(pair.result);
    return validate(value) ? [] : issues(validate, "");
  }

  private check(
    name: string,
    value: unknown,
    kind: ViolationKind,
    method: string | undefined,
    message: unknown,
    prefix = "",
  ): void {
    const validate = this.validator(name);
    if (!validate(value)) throw new ProtocolViolation(kind, method, issues(validate, prefix), message);
  }

  private validator(name: string): CompiledValidator {
    const validate = own(this.use().validators, name);
    if (validate === undefined) throw new Error(`the package was built without a validator of ${name}`);
    return validate;
  }

  private use(): Compiled {
    if (this.compiled === undefined) throw new Error("the protocol's validators are not loaded yet");
    return this.compiled;
  }
}

function own<T>(table: { readonly [key: string]: T }, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

function unknownMethod(method: string): SchemaIssue {
  return { path: "/method", message: `${JSON.stringify(method).slice(0, 200)} is not in the protocol` };
}

function issues(validate: CompiledValidator, prefix: string): SchemaIssue[] {
  return (validate.errors ?? []).map((error) => ({
    path: `${prefix}${error.instancePath}`,
    message: error.message ?? error.keyword,
  }));
}
