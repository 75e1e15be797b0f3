// The relay inside the sandbox frame (served by the host's SandboxServer on its own origin): it writes the view's
// HTML into an inner frame, which inherits this document's Content-Security-Policy, and passes JSON-RPC messages
// between the settings page and the view, each way only from the one window expected. The page's origin comes from
// the query and must be one the host named for this sandbox.
import { VIEW_SANDBOX, allowAttribute } from "./frame-policy.js";

const RESOURCE_READY = "ui/notifications/sandbox-resource-ready";
const PROXY_READY = "ui/notifications/sandbox-proxy-ready";

interface ResourceReady {
  readonly html?: unknown;
  readonly permissions?: { readonly [feature: string]: unknown } | undefined;
}

function start(): void {
  const script = document.currentScript;
  const allowed = new Set((script?.dataset["pageOrigins"] ?? "").split(" ").filter((origin) => origin !== ""));
  const page = new URLSearchParams(location.search).get("host") ?? "";
  if (window.self === window.top) throw new Error("the sandbox runs only inside the settings page");
  if (!allowed.has(page)) throw new Error(`the sandbox serves only its settings page, not ${page}`);

  const inner = document.createElement("iframe");
  inner.setAttribute("sandbox", VIEW_SANDBOX);
  inner.title = "MCP App view";
  document.body.append(inner);
  let written = false;

  window.addEventListener("message", (event: MessageEvent) => {
    if (event.source === window.parent) {
      if (event.origin !== page) return;
      const message = event.data as { method?: unknown; params?: ResourceReady } | null;
      if (message?.method === RESOURCE_READY) {
        if (!written) write(inner, message.params ?? {});
        written = true;
        return;
      }
      inner.contentWindow?.postMessage(event.data, location.origin);
    } else if (event.source === inner.contentWindow && event.origin === location.origin) {
      window.parent.postMessage(event.data, page);
    }
  });
  window.parent.postMessage({ jsonrpc: "2.0", method: PROXY_READY, params: {} }, page);
}

/** The view's document: written (not `srcdoc`) so it keeps this origin and this document's policy. */
function write(inner: HTMLIFrameElement, params: ResourceReady): void {
  const allow = allowAttribute(params.permissions);
  if (allow !== "") inner.setAttribute("allow", allow);
  if (typeof params.html !== "string") return;
  const doc = inner.contentDocument;
  if (doc === null) {
    inner.srcdoc = params.html;
    return;
  }
  doc.open();
  doc.write(params.html);
  doc.close();
}

start();
