// The Browse tab: search the MCP Registry, an entry's details and install options, its inputs form (secrets masked),
// Install → the new row with its live status; and Install bundle: a `.mcpb` file's manifest, compatibility and
// signature shown before the user consents. What the administrator's policy locks is said up front and in errors.
import type { InstallInput, InstallOption, RegistryEntry } from "mcp-app-server-client";
import type { PageState } from "./state.js";
import type { Banner } from "./banner.js";
import { field, h, replace } from "./dom.js";
import { explain, failureView } from "./failure.js";
import type { EventHub } from "./hub.js";
import type { ViewContext } from "./tabs.js";

/** A value of an install input, as `mcpServer/install` takes it. */
type InputValue = string | number | boolean | string[];

const POLICY_WORDS: { readonly [key: string]: string } = {
  allowedServers: "only the servers it lists may be added",
  deniedServers: "some servers are denied",
  registries: "only the registries it lists may be used",
  allowBundles: "bundles may not be installed",
  allowUserServers: "servers may not be added by hand",
};

/** A form of install inputs: one control per input, secrets as password fields. */
class InputsForm {
  readonly element: HTMLElement;
  private readonly controls: { input: InstallInput; control: HTMLInputElement | HTMLSelectElement }[];

  constructor(inputs: readonly InstallInput[]) {
    this.controls = inputs.map((input) => ({ input, control: control(input) }));
    this.element = h(
      "div",
      { className: "inputs", "data-role": "install-inputs" },
      inputs.length === 0 ? h("p", { className: "empty" }, "Nothing to fill in.") : null,
      this.controls.map(({ input, control: element }) =>
        field(`${input.title}${input.required ? " (required)" : ""}${input.secret ? " (secret)" : ""}`, element, input.description),
      ),
    );
  }

  values(): { [key: string]: InputValue } {
    const values: { [key: string]: InputValue } = {};
    for (const { input, control: element } of this.controls) {
      if (element instanceof HTMLInputElement && element.type === "checkbox") values[input.key] = element.checked;
      else if (element.value === "") continue;
      else if (input.format === "number") values[input.key] = Number(element.value);
      else values[input.key] = element.value;
    }
    return values;
  }
}

function control(input: InstallInput): HTMLInputElement | HTMLSelectElement {
  const data = { "data-input": input.key, required: input.required };
  if (input.choices !== undefined) {
    return h(
      "select",
      data,
      input.required ? null : h("option", { value: "" }, "(none)"),
      input.choices.map((choice) => h("option", { value: choice, selected: input.default === choice }, choice)),
    );
  }
  if (input.format === "boolean") return h("input", { ...data, type: "checkbox", checked: input.default === true || input.default === "true" });
  const type = input.secret ? "password" : input.format === "number" ? "number" : "text";
  const value = input.secret || input.default === undefined ? "" : String(input.default);
  return h("input", { ...data, type, value, autocomplete: input.secret ? "off" : null });
}

/** A suggested server name (alias) for an entry: its last part, cut to the name rule. */
function alias(name: string): string {
  const tail = name.split("/").pop() ?? name;
  return tail.replace(/[^A-Za-z0-9_-]/g, "-").replace(/__+/g, "_").slice(0, 24) || "server";
}

export class BrowseView {
  readonly element: HTMLElement;
  private readonly query = h("input", { type: "search", placeholder: "Search the registry", "data-role": "registry-query" });
  private readonly listing = h("div", { className: "results", "data-role": "registry-list" });
  private readonly detail = h("div", { className: "detail", "data-role": "registry-detail", "aria-live": "polite" });
  private readonly policy = h("p", { className: "hint", "data-role": "policy-note" });
  private readonly bundlePath = h("input", { type: "text", placeholder: "/path/to/server.mcpb", "data-role": "bundle-path" });
  private readonly bundle = h("div", { className: "detail", "data-role": "bundle-detail", "aria-live": "polite" });
  private readonly app: PageState;
  private readonly hub: EventHub;
  private readonly banner: Banner;
  private watching: { name: string; status: HTMLElement } | undefined;

  constructor({ app, hub, banner }: ViewContext) {
    this.app = app;
    this.hub = hub;
    this.banner = banner;
    this.element = h(
      "section",
      { className: "view", "aria-labelledby": "browse-heading" },
      h("h2", { id: "browse-heading" }, "Browse"),
      this.policy,
      h(
        "form",
        { className: "toolbar", onsubmit: (event: Event) => (event.preventDefault(), void this.search()) },
        this.query,
        h("button", { type: "submit", "data-role": "registry-search" }, "Search"),
      ),
      h("div", { className: "split" }, this.listing, this.detail),
      h("h3", null, "Install a bundle"),
      h(
        "form",
        { className: "toolbar", onsubmit: (event: Event) => (event.preventDefault(), void this.inspect()) },
        this.bundlePath,
        h("button", { type: "submit", "data-role": "bundle-inspect" }, "Inspect"),
      ),
      this.bundle,
    );
    this.hub.on("servers", () => this.showStatus());
  }

  shown(): void {
    const restricts = this.app.client.initializeResult?.policy.restricts ?? [];
    this.policy.textContent =
      restricts.length === 0 ? "" : `Your administrator's policy applies: ${restricts.map((key) => POLICY_WORDS[key] ?? key).join("; ")}.`;
    if (this.listing.childElementCount === 0) void this.search();
  }

  private async search(): Promise<void> {
    try {
      const query = this.query.value.trim();
      const found = await this.app.client.request("mcpServer/registry/search", query === "" ? {} : { query });
      replace(
        this.listing,
        found.stale ? h("p", { className: "hint", "data-role": "registry-stale" }, "The registry cannot be reached: this is its last answer.") : null,
        found.data.length === 0
          ? h("p", { className: "empty" }, "No entries.")
          : h("ul", { className: "plain" }, found.data.map((entry) => this.row(entry))),
      );
    } catch (error) {
      replace(this.listing, failureView(explain(error, "search the registry")));
    }
  }

  private row(entry: RegistryEntry): HTMLElement {
    return h(
      "li",
      { "data-entry": entry.name },
      h("button", { type: "button", className: "link", onclick: () => void this.open(entry.name) }, entry.title ?? entry.name),
      h("span", { className: "badge" }, entry.version),
      entry.kinds.map((kind) => h("span", { className: "badge" }, kind)),
      entry.installedAs === null ? null : h("span", { className: "badge ok" }, `installed as ${entry.installedAs}`),
      h("span", { className: "description" }, entry.description),
    );
  }

  private async open(name: string): Promise<void> {
    try {
      const { server, installOptions } = await this.app.client.request("mcpServer/registry/get", { name });
      const runnable = installOptions.filter((option) => option.runnable);
      const choice = h(
        "select",
        { "data-role": "install-option" },
        installOptions.map((option) =>
          h("option", { value: option.option, disabled: !option.runnable }, describeOption(option)),
        ),
      );
      const formHolder = h("div");
      const aliasInput = h("input", { type: "text", value: alias(name), "data-role": "install-name" });
      let form = new InputsForm(runnable[0]?.inputs ?? []);
      const pick = (): void => {
        const option = installOptions.find((o) => o.option === choice.value);
        form = new InputsForm(option?.inputs ?? []);
        replace(formHolder, form.element);
      };
      choice.value = runnable[0]?.option ?? "";
      choice.addEventListener("change", pick);
      replace(formHolder, form.element);
      const status = h("p", { className: "status", "data-role": "install-status", "aria-live": "polite" });
      const install = async (): Promise<void> => {
        await this.install(aliasInput.value, { registry: { name, option: choice.value } }, form.values(), status);
      };
      replace(
        this.detail,
        h("h3", null, String(server.title ?? name)),
        h("p", null, String(server.description ?? "")),
        h("p", { className: "meta" }, `${name} ${String(server.version)}`),
        field("Install as", aliasInput, "The server's name here: letters, digits, - and _"),
        field("Install from", choice),
        formHolder,
        h("button", { type: "button", "data-role": "install", disabled: runnable.length === 0, onclick: () => void install() }, "Install"),
        status,
      );
    } catch (error) {
      replace(this.detail, failureView(explain(error, `read ${name}`)));
    }
  }

  private async inspect(): Promise<void> {
    const path = this.bundlePath.value.trim();
    try {
      const seen = await this.app.client.request("mcpServer/bundle/inspect", { path });
      const form = new InputsForm(seen.inputs);
      const aliasInput = h("input", { type: "text", value: alias(seen.manifest.name), "data-role": "install-name" });
      const status = h("p", { className: "status", "data-role": "install-status", "aria-live": "polite" });
      const signature = {
        signed: "Signed: the content matches its signature.",
        unsigned: "Not signed: nobody vouches for this file.",
        invalid: "The signature does not match the content: the file was changed after signing.",
      }[seen.signature];
      replace(
        this.bundle,
        h("h3", null, seen.manifest.displayName ?? seen.manifest.name),
        h("p", null, seen.manifest.description),
        h("p", { className: "meta" }, `${seen.manifest.name} ${seen.manifest.version} by ${seen.manifest.author.name}`),
        h("p", { "data-role": "bundle-signature", className: seen.signature === "signed" ? "ok" : "warning" }, signature),
        h(
          "p",
          { "data-role": "bundle-compatibility", className: seen.compatibility.ok ? "ok" : "warning" },
          seen.compatibility.ok ? "Runs on this machine." : `Does not run here: ${seen.compatibility.reason ?? "unknown"}`,
        ),
        seen.manifest.tools.length === 0 ? null : h("p", null, `Tools: ${seen.manifest.tools.map((t) => t.name).join(", ")}`),
        field("Install as", aliasInput),
        form.element,
        h(
          "button",
          {
            type: "button",
            "data-role": "install",
            disabled: !seen.compatibility.ok,
            onclick: () => void this.install(aliasInput.value, { bundle: { path } }, form.values(), status),
          },
          "I trust this bundle: install",
        ),
        status,
      );
    } catch (error) {
      replace(this.bundle, failureView(explain(error, "read the bundle")));
    }
  }

  private async install(
    name: string,
    source: { registry: { name: string; option: string } } | { bundle: { path: string } },
    inputs: { [key: string]: InputValue },
    status: HTMLElement,
  ): Promise<void> {
    try {
      const { server } = await this.app.client.request("mcpServer/install", { name, source, inputs });
      this.banner.say("info", `Installed ${server.name} from ${server.source}.`);
      this.watching = { name: server.name, status };
      await this.app.refreshServers();
      const failure = await this.app.start(server.name);
      if (failure !== undefined) replace(status, failureView(failure));
      else this.showStatus();
    } catch (error) {
      replace(status, failureView(explain(error, `install ${name}`)));
    }
  }

  private showStatus(): void {
    if (this.watching === undefined) return;
    const { name, status } = this.watching;
    status.setAttribute("data-status", this.app.displayStatus(name));
    status.textContent = `${name}: ${this.app.displayStatus(name)}`;
  }
}

function describeOption(option: InstallOption): string {
  const base = `${option.kind} (${option.transport})`;
  return option.runnable ? base : `${base}: ${option.reason ?? (option.missing === undefined ? "not runnable" : `needs ${option.missing}`)}`;
}
