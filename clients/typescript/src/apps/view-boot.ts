// The view's bootstrap, on the view's own origin with the view's policy as its header: it asks its relay for the
// view's HTML once and writes it over itself (the document, and so its origin and policy, stay the same).
import { VIEW_BOOT_HTML, VIEW_BOOT_READY } from "./frame.js";

function start(): void {
  const relay = new URLSearchParams(location.search).get("relay") ?? "";
  if (window.self === window.top || relay === "") return;
  const listener = (event: MessageEvent): void => {
    const message = event.data as { method?: unknown; params?: { html?: unknown } } | null;
    if (event.source !== window.parent || event.origin !== relay || message?.method !== VIEW_BOOT_HTML) return;
    window.removeEventListener("message", listener);
    const html = message.params?.html;
    if (typeof html !== "string") return;
    document.open();
    document.write(html);
    document.close();
  };
  window.addEventListener("message", listener);
  window.parent.postMessage({ method: VIEW_BOOT_READY }, relay);
}

start();
