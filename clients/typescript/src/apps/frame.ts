// What a view's frames may do and where a view runs, for the host's page and for the sandbox's relay alike (each
// frame must grant a feature for the view to have it). Browser-safe: the relay's module imports it as served.
import { MCP_APPS } from "../generated/protocol.js";

/** The frames' `sandbox` attribute, as ext-apps' basic-host sets it (no popups, no top navigation). */
export const VIEW_SANDBOX = "allow-scripts allow-same-origin allow-forms";

/** The `allow` attribute for the permissions a view asked for (`_meta.ui.permissions`); unknown ones grant nothing. */
export function allowAttribute(permissions: object | undefined): string {
  const asked = (permissions ?? {}) as { readonly [feature: string]: unknown };
  return Object.entries(MCP_APPS.permissions)
    .filter(([key]) => Object.hasOwn(asked, key) && asked[key] !== undefined && asked[key] !== null && asked[key] !== false)
    .map(([, feature]) => feature)
    .join("; ");
}

/** A view's label: the sandbox gives each label an origin of its own, so one per server (and per declared
 * `_meta.ui.domain`) means no server's view shares storage with another's. A SHA-256 so no server can pick another's. */
export async function viewLabel(server: string, domain: string | undefined): Promise<string> {
  const bytes = new TextEncoder().encode(`${server}\n${domain ?? ""}`);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return `v${[...digest.slice(0, 16)].map((byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

/** A label as `viewLabel` makes them. */
export const VIEW_LABEL = /^v[0-9a-f]{32}$/;
