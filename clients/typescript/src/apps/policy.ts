// Node only: the Content-Security-Policy headers of the sandbox's two documents. The view's policy allows inline
// code and its own origin plus exactly the origins it declared for each kind of load; the relay's allows only the
// relay's own script and the view's frame. Every source is checked first, and the header is checked whole.
import type { UiCsp } from "../generated/protocol.js";
import { cspOrigins } from "./origins.js";

/** A view's declared origins (`_meta.ui.csp`), as the daemon types them. */
export type ViewCsp = UiCsp;

/** Who may frame a document: a list of origins (`http://127.0.0.1:5173`) or schemes (`app:`), no separators. */
export function frameAncestorSources(ancestors: readonly string[]): string[] {
  return ancestors.filter((source) => /^[a-z][a-z0-9+.-]*:(\/\/[a-z0-9.[\]:*-]+)?$/i.test(source));
}

/** The view's policy, framed only by `ancestors` (its relay and the host's page). */
export function viewPolicy(csp: ViewCsp | undefined, ancestors: readonly string[]): string {
  const resources = cspOrigins(csp?.resourceDomains).join(" ");
  const connect = cspOrigins(csp?.connectDomains).join(" ");
  const frames = cspOrigins(csp?.frameDomains).join(" ");
  const bases = cspOrigins(csp?.baseUriDomains).join(" ");
  return checked([
    "default-src 'self' 'unsafe-inline'",
    `script-src 'self' 'unsafe-inline' 'unsafe-eval' blob: data: ${resources}`.trim(),
    `style-src 'self' 'unsafe-inline' blob: data: ${resources}`.trim(),
    `img-src 'self' data: blob: ${resources}`.trim(),
    `font-src 'self' data: blob: ${resources}`.trim(),
    `media-src 'self' data: blob: ${resources}`.trim(),
    `connect-src 'self' ${connect}`.trim(),
    `worker-src 'self' blob: ${resources}`.trim(),
    frames === "" ? "frame-src 'none'" : `frame-src ${frames}`,
    "object-src 'none'",
    bases === "" ? "base-uri 'none'" : `base-uri ${bases}`,
    "form-action 'none'",
    ancestorsDirective(ancestors),
  ]);
}

/** The relay's policy: its own script, the hand-over to its own origin, the one view origin it frames, framed only
 * by the host's page. */
export function relayPolicy(viewOrigin: string, pageOrigins: readonly string[]): string {
  return checked([
    "default-src 'none'",
    "script-src 'self'",
    "connect-src 'self'",
    "style-src 'unsafe-inline'",
    `frame-src ${viewOrigin}`,
    "base-uri 'none'",
    "form-action 'none'",
    ancestorsDirective(pageOrigins),
  ]);
}

function ancestorsDirective(ancestors: readonly string[]): string {
  const sources = frameAncestorSources(ancestors);
  return sources.length === 0 ? "frame-ancestors 'none'" : `frame-ancestors ${sources.join(" ")}`;
}

/** The header value, refused whole if anything outside printable ASCII got in (a header must never throw). */
function checked(directives: readonly string[]): string {
  const policy = directives.join("; ");
  if (!/^[\x20-\x7e]*$/.test(policy)) throw new Error("a policy with a character a header cannot carry");
  return policy;
}
