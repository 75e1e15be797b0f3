// The resources browser: resources and templates, read through the management connection or a thread's, always with
// `preview: true` (text cut to 16 KiB, blobs replaced by their size and digest, so no base64 ever reaches the page);
// and subscriptions, with each `mcp:resource_updated` counted on its row.
import type { ResourceTemplateView, ResourceView } from "mcp-app-server-client";
import type { PageState } from "./state.js";
import type { Banner } from "./banner.js";
import { resourceContent } from "./content.js";
import { formatBytes, h, replace } from "./dom.js";
import { explain, failureView } from "./failure.js";
import type { ViewContext } from "./tabs.js";

interface Subscription {
  readonly server: string;
  readonly uri: string;
  readonly threadId: string | null;
  updates: number;
  last: Date | undefined;
}

const VARIABLE = /\{([^}]+)\}/g;

export class ResourcesView {
  readonly element: HTMLElement;
  private readonly context = h("select", { id: "resource-context" });
  private readonly listing = h("div", { className: "results", "data-role": "resource-list" });
  private readonly preview = h("div", { className: "detail", "data-role": "resource-preview", "aria-live": "polite" });
  private readonly subscriptionList = h("div", { "data-role": "subscriptions" });
  private readonly subscriptions = new Map<string, Subscription>();

  private readonly app: PageState;
  private readonly banner: Banner;

  constructor({ app, hub, banner }: ViewContext) {
    this.app = app;
    this.banner = banner;
    this.element = h(
      "section",
      { className: "view", "aria-labelledby": "resources-heading" },
      h("h2", { id: "resources-heading" }, "Resources"),
      h(
        "div",
        { className: "toolbar" },
        h("label", { for: "resource-context" }, "Read through"),
        this.context,
        h("button", { type: "button", onclick: () => this.shown() }, "Refresh"),
      ),
      h("div", { className: "split" }, this.listing, this.preview),
      h("h3", null, "Subscriptions"),
      this.subscriptionList,
    );
    this.context.addEventListener("change", () => this.shown());
    hub.on("threads", () => this.fillContexts());
    hub.on("mcp:resources_updated", () => this.shown());
    // A new connection has no subscriptions (they belonged to the one that ended).
    hub.on("connected", () => {
      this.subscriptions.clear();
      this.renderSubscriptions();
    });
    hub.on("mcp:resource_updated", (update) => {
      const subscription = this.subscriptions.get(key(update.server, update.uri, update.threadId));
      if (subscription === undefined) return;
      subscription.updates += 1;
      subscription.last = new Date();
      this.renderSubscriptions();
    });
    this.fillContexts();
    this.renderSubscriptions();
  }

  shown(): void {
    void this.load();
  }

  private threadId(): string | undefined {
    return this.context.value === "" ? undefined : this.context.value;
  }

  private fillContexts(): void {
    const chosen = this.context.value;
    replace(
      this.context,
      h("option", { value: "" }, "management (no thread)"),
      this.app.threads.map((thread) =>
        h("option", { value: thread.id, selected: thread.id === chosen }, `thread ${thread.name || thread.id}`),
      ),
    );
  }

  private async load(): Promise<void> {
    const threadId = this.threadId();
    try {
      const resources: ResourceView[] = [];
      const templates: ResourceTemplateView[] = [];
      let cursor: string | undefined;
      do {
        const page = await this.app.client.request("mcpResource/list", {
          ...(threadId === undefined ? {} : { threadId }),
          ...(cursor === undefined ? {} : { cursor }),
        });
        resources.push(...page.resources);
        templates.push(...page.resourceTemplates);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      replace(
        this.listing,
        h("h3", null, "Resources"),
        resources.length === 0
          ? h("p", { className: "empty" }, "No resources: start a server that lists some.")
          : h(
              "ul",
              { className: "plain resources" },
              resources.map((resource) => this.resourceItem(resource, threadId ?? null)),
            ),
        h("h3", null, "Templates"),
        templates.length === 0
          ? h("p", { className: "empty" }, "No templates.")
          : h("ul", { className: "plain" }, templates.map((template) => this.templateItem(template))),
      );
    } catch (error) {
      replace(this.listing, failureView(explain(error)));
    }
  }

  private resourceItem(resource: ResourceView, threadId: string | null): HTMLElement {
    const subscribed = this.subscriptions.has(key(resource.server, resource.uri, threadId));
    return h(
      "li",
      { "data-uri": resource.uri },
      h(
        "span",
        { className: "what" },
        h("span", { className: "name" }, `${resource.server} / ${resource.title ?? resource.name}`),
        " ",
        h("code", null, resource.uri),
        " ",
        resource.mimeType === undefined ? null : h("span", { className: "badge" }, resource.mimeType),
        resource.size === undefined ? null : h("span", { className: "meta" }, formatBytes(resource.size)),
      ),
      h(
        "span",
        { className: "actions" },
        h("button", { type: "button", onclick: () => void this.read(resource.server, resource.uri) }, "Preview"),
        h(
          "button",
          {
            type: "button",
            "aria-pressed": subscribed ? "true" : "false",
            onclick: () => void this.toggleSubscription(resource.server, resource.uri, threadId),
          },
          subscribed ? "Unsubscribe" : "Subscribe",
        ),
      ),
    );
  }

  private templateItem(template: ResourceTemplateView): HTMLElement {
    const names = [...template.uriTemplate.matchAll(VARIABLE)].map((match) => match[1] ?? "");
    const inputs = names.map((name) =>
      h("input", { type: "text", "aria-label": `${name} of ${template.uriTemplate}`, placeholder: name, size: 10 }),
    );
    const fill = (): string => {
      let index = 0;
      return template.uriTemplate.replace(VARIABLE, () => encodeURIComponent(inputs[index++]?.value ?? ""));
    };
    return h(
      "li",
      { "data-template": template.uriTemplate },
      h(
        "span",
        { className: "what" },
        h("span", { className: "name" }, `${template.server} / ${template.title ?? template.name}`),
        " ",
        h("code", null, template.uriTemplate),
      ),
      h(
        "form",
        {
          className: "inline",
          onsubmit: (event: Event) => {
            event.preventDefault();
            void this.read(template.server, fill());
          },
        },
        inputs,
        h("button", { type: "submit" }, "Preview"),
      ),
    );
  }

  private async read(server: string, uri: string, threadId = this.threadId()): Promise<void> {
    try {
      const result = await this.app.client.request("mcpServer/resource/read", {
        server,
        uri,
        preview: true,
        ...(threadId === undefined ? {} : { threadId }),
      });
      replace(
        this.preview,
        h("h3", null, "Preview of ", h("code", null, uri)),
        result.contents.length === 0 ? h("p", { className: "empty" }, "The resource is empty.") : null,
        result.contents.map((content) => resourceContent(content)),
      );
    } catch (error) {
      replace(this.preview, failureView(explain(error)));
    }
  }

  private async toggleSubscription(server: string, uri: string, threadId: string | null): Promise<void> {
    const id = key(server, uri, threadId);
    const params = { server, uri, ...(threadId === null ? {} : { threadId }) };
    const ok = await this.banner.attempt(`${this.subscriptions.has(id) ? "unsubscribe from" : "subscribe to"} ${uri}`, async () => {
      if (this.subscriptions.has(id)) {
        await this.app.client.request("mcpResource/unsubscribe", params);
        this.subscriptions.delete(id);
      } else {
        await this.app.client.request("mcpResource/subscribe", params);
        this.subscriptions.set(id, { server, uri, threadId, updates: 0, last: undefined });
      }
      return true;
    });
    if (ok) {
      this.renderSubscriptions();
      void this.load();
    }
  }

  private renderSubscriptions(): void {
    const rows = [...this.subscriptions.values()];
    replace(
      this.subscriptionList,
      rows.length === 0
        ? h("p", { className: "empty" }, "None. Subscribe to a resource to see its updates here.")
        : h(
            "table",
            null,
            h("thead", null, h("tr", null, ["Resource", "Through", "Updates", "Last update", ""].map((t) => h("th", { scope: "col" }, t)))),
            h(
              "tbody",
              null,
              rows.map((row) =>
                h(
                  "tr",
                  { "data-subscription": row.uri, "data-updates": row.updates },
                  h("td", null, `${row.server} `, h("code", null, row.uri)),
                  h("td", null, row.threadId === null ? "management" : `thread ${row.threadId}`),
                  h("td", { "data-role": "updates" }, String(row.updates)),
                  h("td", null, row.last === undefined ? "—" : row.last.toLocaleTimeString()),
                  h("td", null, h("button", { type: "button", onclick: () => void this.read(row.server, row.uri, row.threadId ?? undefined) }, "Read again")),
                ),
              ),
            ),
          ),
    );
  }
}

function key(server: string, uri: string, threadId: string | null): string {
  return JSON.stringify([server, uri, threadId]);
}
