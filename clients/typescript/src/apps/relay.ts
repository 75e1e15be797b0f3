// The relay: the outer frame of the spec's double iframe, on the sandbox's relay origin. It frames the view's own
// origin (a port of its own, which the sandbox names in the relay's document: another origin than the relay's, so the
// view can touch neither the relay nor another server's view), hands the view's HTML to the view's bootstrap, and passes JSON-RPC messages between the host's
// page and the view, each way only from the one window and origin expected.
import { MCP_APPS } from "../generated/protocol.js";
import { VIEW_BOOT_HTML, VIEW_BOOT_READY, VIEW_SANDBOX, allowAttribute } from "./frame.js";

interface ResourceReady {
  readonly html?: unknown;
  readonly permissions?: { readonly [feature: string]: unknown } | undefined;
}

function start(): void {
  const query = new URLSearchParams(location.search);
  const meta = (name: string): string => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? "";
  const allowed = new Set(meta("page-origins").split(" ").filter((origin) => origin !== ""));
  const page = query.get("page") ?? "";
  const viewOrigin = meta("view-origin");
  if (window.self === window.top) throw new Error("the relay runs only inside the host's page");
  if (!allowed.has(page)) throw new Error(`the relay serves only its host's page, not ${page}`);
  if (!viewOrigin.startsWith("http://127.0.0.1:")) throw new Error("the relay was given no view origin");
  const viewUrl = new URL("/view.html", viewOrigin);
  viewUrl.searchParams.set("token", query.get("token") ?? "");
  viewUrl.searchParams.set("relay", location.origin);
  viewUrl.searchParams.set("csp", query.get("csp") ?? "{}");

  const inner = document.createElement("iframe");
  inner.setAttribute("sandbox", VIEW_SANDBOX);
  inner.title = "MCP App view";
  let html: string | undefined;
  let booted = false;
  const deliver = (): void => {
    if (!booted || html === undefined) return;
    inner.contentWindow?.postMessage({ method: VIEW_BOOT_HTML, params: { html } }, viewOrigin);
    html = undefined;
  };

  window.addEventListener("message", (event: MessageEvent) => {
    if (event.source === window.parent) {
      if (event.origin !== page) return;
      const message = event.data as { method?: unknown; params?: ResourceReady } | null;
      if (message?.method === MCP_APPS.sandboxResourceReady) {
        if (inner.src !== "") return;
        const params = message.params ?? {};
        const allow = allowAttribute(params.permissions);
        if (allow !== "") inner.setAttribute("allow", allow);
        if (typeof params.html !== "string") return;
        html = params.html;
        inner.src = viewUrl.href;
        document.body.append(inner);
        return;
      }
      inner.contentWindow?.postMessage(event.data, viewOrigin);
    } else if (event.source === inner.contentWindow && event.origin === viewOrigin) {
      const message = event.data as { method?: unknown } | null;
      if (message?.method === VIEW_BOOT_READY) {
        booted = true;
        deliver();
        return;
      }
      window.parent.postMessage(event.data, page);
    }
  });
  window.parent.postMessage({ jsonrpc: "2.0", method: MCP_APPS.sandboxProxyReady, params: {} }, page);
}

start();
