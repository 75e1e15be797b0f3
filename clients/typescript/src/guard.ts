import ajvModule from "ajv/dist/2020.js";
import type { ErrorObject, ValidateFunction } from "ajv/dist/2020.js";
import { ProtocolViolation } from "./errors.js";
import type { SchemaIssue, ViolationKind } from "./errors.js";
import { protocolSchema } from "./generated/schema.js";

const Ajv2020 = ajvModule.default;
const BUNDLE_ID = "mcp-app-server-protocol";

interface MethodTable {
  readonly [method: string]: { readonly params: string; readonly result: string };
}

/**
 * The fail-closed check of every incoming message against the protocol's JSON Schema (the bundle generated from the
 * daemon's models). Validators are compiled on first use, one per type.
 */
export class ProtocolGuard {
  private readonly ajv = new Ajv2020({ discriminator: true, allErrors: false, strict: true });
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly methods: MethodTable;
  private readonly serverRequests: MethodTable;
  private readonly notifications: { readonly [method: string]: string };

  constructor(schema: { readonly [key: string]: unknown } = protocolSchema) {
    this.ajv.addSchema({ ...schema, $id: BUNDLE_ID });
    const tables = (schema as { properties: Record<string, { properties: Record<string, unknown> }> }).properties;
    this.methods = pairs(tables.methods?.properties ?? {});
    this.serverRequests = pairs(tables.serverRequests?.properties ?? {});
    this.notifications = Object.fromEntries(
      Object.entries(tables.notifications?.properties ?? {}).map(([method, ref]) => [method, defName(ref)]),
    );
  }

  /** Whether `method` is a request of the catalog (its result can be checked). */
  knowsMethod(method: string): boolean {
    return method in this.methods;
  }

  /** Whether the daemon may send this notification. */
  knowsNotification(method: string): boolean {
    return method in this.notifications;
  }

  /** Whether the daemon may send this server request. */
  knowsServerRequest(method: string): boolean {
    return method in this.serverRequests;
  }

  /** Check a message's envelope: `request`, `notification`, `successResponse` or `errorResponse`. */
  envelope(
    kind: "JsonRpcRequest" | "JsonRpcNotification" | "JsonRpcSuccessResponse" | "JsonRpcErrorResponse",
    message: unknown,
    violation: ViolationKind,
    method?: string,
  ): void {
    this.check(kind, message, violation, method, message);
  }

  /** Check the result of a client request. */
  result(method: string, result: unknown, message: unknown): void {
    const pair = this.methods[method];
    if (pair === undefined) throw new ProtocolViolation("response", method, [unknownMethod(method)], message);
    this.check(pair.result, result, "response", method, message, "/result");
  }

  /** Check a notification's params. */
  notification(method: string, params: unknown, message: unknown): void {
    const name = this.notifications[method];
    if (name === undefined) throw new ProtocolViolation("notification", method, [unknownMethod(method)], message);
    this.check(name, params, "notification", method, message, "/params");
  }

  /** Check a server request's params. */
  serverRequest(method: string, params: unknown, message: unknown): void {
    const pair = this.serverRequests[method];
    if (pair === undefined) throw new ProtocolViolation("serverRequest", method, [unknownMethod(method)], message);
    this.check(pair.params, params, "serverRequest", method, message, "/params");
  }

  /** Whether `value` is what the client answers a server request of `method` with. */
  serverResponseIssues(method: string, value: unknown): SchemaIssue[] {
    const pair = this.serverRequests[method];
    if (pair === undefined) return [unknownMethod(method)];
    const validate = this.validator(pair.result);
    return validate(value) ? [] : issues(validate.errors, "");
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
    if (!validate(value)) throw new ProtocolViolation(kind, method, issues(validate.errors, prefix), message);
  }

  private validator(name: string): ValidateFunction {
    let validate = this.validators.get(name);
    if (validate === undefined) {
      validate = this.ajv.getSchema(`${BUNDLE_ID}#/$defs/${name}`);
      if (validate === undefined) throw new Error(`the protocol schema has no type ${name}`);
      this.validators.set(name, validate);
    }
    return validate;
  }
}

function defName(ref: unknown): string {
  const target = (ref as { $ref?: unknown }).$ref;
  if (typeof target !== "string") throw new Error("the protocol schema's tables must refer to named types");
  return target.replace("#/$defs/", "");
}

function pairs(table: Record<string, unknown>): MethodTable {
  return Object.fromEntries(
    Object.entries(table).map(([method, pair]) => {
      const properties = (pair as { properties: { params: unknown; result: unknown } }).properties;
      return [method, { params: defName(properties.params), result: defName(properties.result) }];
    }),
  );
}

function unknownMethod(method: string): SchemaIssue {
  return { path: "/method", message: `${JSON.stringify(method).slice(0, 200)} is not in the protocol` };
}

function issues(errors: ErrorObject[] | null | undefined, prefix: string): SchemaIssue[] {
  return (errors ?? []).map((error) => ({
    path: `${prefix}${error.instancePath}`,
    message: error.message ?? error.keyword,
  }));
}
