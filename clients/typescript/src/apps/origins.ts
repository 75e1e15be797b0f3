// Node only: a view's declared origins (`_meta.ui.csp`) checked before they go into a Content-Security-Policy header,
// by the rule the daemon's protocol model applies (protocol/apps.py): `scheme://host[:port]`, the host in ASCII
// (punycode), a wildcard only as a leading `*.` over two labels or more, never a loopback, private or local address.
// The daemon already drops other entries; a host checks again because its header must never carry anything else.
import { isIPv4, isIPv6 } from "node:net";
import { domainToASCII } from "node:url";
import { MCP_APPS } from "../generated/protocol.js";

const ORIGIN = /^(https?|wss?):\/\/(\[[0-9A-Fa-f:.]+\]|[^/:?#@[\]\\\s]+)(?::([0-9]{1,5}))?\/?$/;
const ASCII_HOST = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/;
const NUMERIC_LABEL = /^(?:[0-9]+|0x[0-9a-f]*)$/;
const LOCAL_SUFFIXES = [".localhost", ".local", ".internal", ".home.arpa"];

/** `entry` as a CSP source a view may be given, normalized; `undefined` for anything else. */
export function cspOrigin(entry: unknown): string | undefined {
  if (typeof entry !== "string" || entry.length > MCP_APPS.maxOriginChars) return undefined;
  const match = ORIGIN.exec(entry);
  if (match === null) return undefined;
  const [, scheme, host = "", port] = match;
  if (port !== undefined && !(Number(port) > 0 && Number(port) <= 65535)) return undefined;
  const wildcard = host.startsWith("*.");
  const name = publicHost(wildcard ? host.slice(2) : host, wildcard);
  if (name === undefined) return undefined;
  return `${scheme}://${wildcard ? "*." : ""}${name}${port === undefined ? "" : `:${Number(port)}`}`;
}

/** The entries of one directive that are origins, normalized, each once. */
export function cspOrigins(entries: unknown): string[] {
  if (!Array.isArray(entries)) return [];
  const kept = new Set<string>();
  for (const entry of entries) {
    const origin = cspOrigin(entry);
    if (origin !== undefined) kept.add(origin);
  }
  return [...kept];
}

function publicHost(host: string, wildcard: boolean): string | undefined {
  if (host.includes("*")) return undefined;
  if (host.startsWith("[")) {
    const address = host.slice(1, -1).toLowerCase();
    if (wildcard || !isIPv6(address) || !publicIPv6(address)) return undefined;
    return `[${address}]`;
  }
  // `domainToASCII` answers "" for what is not a valid domain (control characters, forbidden code points).
  const name = domainToASCII(host).toLowerCase();
  if (!ASCII_HOST.test(name)) return undefined;
  if (NUMERIC_LABEL.test(name.slice(name.lastIndexOf(".") + 1))) {
    // A browser reads a numeric last label as an IPv4 address (`127.1` is loopback): only a public dotted quad.
    return !wildcard && isIPv4(name) && publicIPv4(name) ? name.split(".").map(Number).join(".") : undefined;
  }
  if (LOCAL_SUFFIXES.some((suffix) => name.endsWith(suffix))) return undefined;
  return name;
}

function publicIPv4(address: string): boolean {
  const [a = 0, b = 0] = address.split(".").map(Number);
  return !(
    a === 0 ||
    a === 10 ||
    a === 127 ||
    a >= 224 ||
    (a === 100 && b >= 64 && b < 128) ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b < 32) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0) ||
    (a === 198 && (b === 18 || b === 19))
  );
}

function publicIPv6(address: string): boolean {
  // Global unicast is 2000::/3; loopback, unspecified, link-local, unique-local and IPv4-mapped are not.
  return /^[23][0-9a-f]{0,3}:/.test(address) && !address.startsWith("2001:db8:");
}
