// Rendering what MCP servers send — content blocks, resource contents, projections — so that the DOM stays small
// whatever their size: text is cut, and images, audio and blobs are shown as a summary (type, size, digest), never
// as their base64.
import type { ContentBlock, Projection, ResourceContent } from "mcp-app-server-client";
import { base64Bytes, boundedText, formatBytes, h } from "./dom.js";

/** One content block of a tool result or a prompt message. */
export function contentBlock(block: ContentBlock): HTMLElement {
  switch (block.type) {
    case "text":
      return h("div", { className: "block", "data-kind": "text" }, boundedText(block.text));
    case "image":
    case "audio":
      return summary(block.type, block.mimeType, base64Bytes(block.data));
    case "resource_link":
      return h(
        "div",
        { className: "block", "data-kind": "resource_link" },
        h("span", { className: "badge" }, "link"),
        ` ${block.name} — `,
        h("code", null, block.uri),
        block.mimeType === undefined ? null : ` (${block.mimeType})`,
      );
    case "resource": {
      const resource = block.resource;
      if ("text" in resource) {
        return h(
          "div",
          { className: "block", "data-kind": "resource" },
          h("p", { className: "meta" }, h("code", null, resource.uri), ` ${resource.mimeType ?? ""}`),
          boundedText(resource.text),
        );
      }
      return summary("resource", resource.mimeType, base64Bytes(resource.blob), resource.uri);
    }
  }
}

/** One content of a resource read with `preview: true` (a full read's blob is summarized too). */
export function resourceContent(content: ResourceContent): HTMLElement {
  const head = h("p", { className: "meta" }, h("code", null, content.uri), content.mimeType ? ` ${content.mimeType}` : "");
  if (content.text !== undefined) {
    return h(
      "div",
      { className: "block", "data-kind": "text", "data-truncated": content.truncated === true ? "true" : "false" },
      head,
      content.truncated === true
        ? h("p", { className: "note", role: "note" }, "Preview: the text is cut to its first 16 KiB.")
        : null,
      boundedText(content.text),
    );
  }
  const bytes = content.blobBytes ?? (content.blob === undefined ? 0 : base64Bytes(content.blob));
  const kind = content.mimeType?.startsWith("image/") ? "image" : content.mimeType?.startsWith("audio/") ? "audio" : "blob";
  return summary(kind, content.mimeType, bytes, content.uri, content.sha256);
}

/** A tool result's projection: the text a model sees and the archived refs. */
export function projection(value: Projection): HTMLElement {
  return h(
    "div",
    { className: "projection" },
    h("h4", null, "Projection", value.truncated ? " (truncated)" : ""),
    boundedText(value.text),
    value.refs.length === 0
      ? null
      : h(
          "table",
          null,
          h("caption", null, "Archived refs (read back with thread/context/read)"),
          h("thead", null, h("tr", null, ["ref", "kind", "type", "size", "sha256"].map((t) => h("th", null, t)))),
          h(
            "tbody",
            null,
            value.refs.map((ref) =>
              h(
                "tr",
                null,
                h("td", null, h("code", null, ref.ref)),
                h("td", null, ref.kind),
                h("td", null, ref.mimeType ?? ""),
                h("td", null, formatBytes(ref.bytes)),
                h("td", null, h("code", { className: "digest" }, ref.sha256.slice(0, 16), "…")),
              ),
            ),
          ),
        ),
  );
}

function summary(kind: string, mimeType: string | undefined, bytes: number, uri?: string, sha256?: string): HTMLElement {
  return h(
    "div",
    { className: "block summary", "data-kind": kind, "data-bytes": bytes },
    h("span", { className: "badge" }, kind),
    ` ${mimeType ?? "unknown type"}, ${formatBytes(bytes)}`,
    uri === undefined ? null : [" — ", h("code", null, uri)],
    sha256 === undefined ? null : h("div", null, "sha256 ", h("code", { className: "digest" }, sha256)),
    h("div", { className: "note" }, "Content not shown: a preview carries only its type, size and digest."),
  );
}
