// The relay: the outer frame of the spec's double iframe, on the sandbox's relay origin. It hands the view's HTML to
// the sandbox (a POST to its own origin) and frames the view's document on the view's own origin (a port of its own,
// which the sandbox names in the relay's document: another origin than the relay's, so the view can touch neither the
// relay nor another server's view), then passes JSON-RPC messages between the host's page and the view, each way
// only from the one window and origin expected.
import { MCP_APPS } from "../generated/protocol.js";
import { VIEW_SANDBOX, allowAttribute } from "./frame.js";

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

  const inner = document.createElement("iframe");
  inner.setAttribute("sandbox", VIEW_SANDBOX);
  inner.title = "MCP App view";
  let handed = false;

  const load = async (params: ResourceReady): Promise<void> => {
    const allow = allowAttribute(params.permissions);
    if (allow !== "") inner.setAttribute("allow", allow);
    if (typeof params.html !== "string") return;
    const token = query.get("token") ?? "";
    const handOver = new URL("/views", location.origin);
    handOver.searchParams.set("token", token);
    handOver.searchParams.set("view", query.get("view") ?? "");
    const answer = await fetch(handOver, { method: "POST", body: params.html, headers: { "Content-Type": "text/plain" } });
    if (!answer.ok) throw new Error(`the sandbox refused the view: ${await answer.text()}`);
    const { id } = (await answer.json()) as { id: string };
    const src = new URL("/view.html", viewOrigin);
    src.searchParams.set("token", token);
    src.searchParams.set("id", id);
    src.searchParams.set("csp", query.get("csp") ?? "{}");
    inner.src = src.href;
    document.body.append(inner);
  };

  window.addEventListener("message", (event: MessageEvent) => {
    if (event.source === window.parent) {
      if (event.origin !== page) return;
      const message = event.data as { method?: unknown; params?: ResourceReady } | null;
      if (message?.method === MCP_APPS.sandboxResourceReady) {
        if (!handed) void load(message.params ?? {});
        handed = true;
        return;
      }
      inner.contentWindow?.postMessage(event.data, viewOrigin);
    } else if (event.source === inner.contentWindow && event.origin === viewOrigin) {
      window.parent.postMessage(event.data, page);
    }
  });
  window.parent.postMessage({ jsonrpc: "2.0", method: MCP_APPS.sandboxProxyReady, params: {} }, page);
}

start();
