// A tool call's first arguments, from the tool's JSON Schema: every property's `default`, as the server declared it.
// A property with no default is left out rather than given a made-up value (a zero or an empty string would be
// sent as if someone had chosen it); the required ones among them are named so the person fills them in.

/** A required property with no default. */
export interface ToFill {
  readonly name: string;
  /** Its JSON Schema type, when it says one. */
  readonly type: string | undefined;
}

/** The schema's defaults, and the required properties that have none. */
export function defaultArguments(schema: { readonly [key: string]: unknown }): {
  values: { [name: string]: unknown };
  toFill: ToFill[];
} {
  const properties = isObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((n): n is string => typeof n === "string") : []);
  const values: { [name: string]: unknown } = {};
  const toFill: ToFill[] = [];
  for (const [name, property] of Object.entries(properties)) {
    if (isObject(property) && "default" in property) values[name] = structuredClone(property.default);
    else if (required.has(name)) toFill.push({ name, type: isObject(property) ? typeName(property.type) : undefined });
  }
  return { values, toFill };
}

function typeName(type: unknown): string | undefined {
  if (typeof type === "string") return type;
  if (Array.isArray(type)) return type.filter((t): t is string => typeof t === "string").join(" or ") || undefined;
  return undefined;
}

function isObject(value: unknown): value is { readonly [key: string]: unknown } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
