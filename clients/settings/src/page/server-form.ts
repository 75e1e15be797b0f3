// Add and edit a server, losslessly: the form starts from the config `mcpServer/list` gave (secrets read back as
// "***"), changes only the fields it shows, and sends every other field back as it came (shown as JSON under
// "Other fields"). A "***" left in place keeps the stored value; the daemon answers `redactedValue` when a kept
// secret would follow the server to a new destination, and the form says which value to enter again. The name rule
// is checked as the name is typed, before anything is sent; a server saved enabled is started.
import { AppServerError } from "mcp-app-server-client";
import type { McpServerConfig, ServerRecord } from "mcp-app-server-client";
import type { PageState } from "./state.js";
import { APPS } from "./importers.js";
import type { Banner } from "./banner.js";
import { field, h, replace, uid } from "./dom.js";
import { explain, failureView } from "./failure.js";
import { SERVER_NAME_RULE, serverNameProblem } from "./names.js";

type Json = { [key: string]: unknown };

/** The fields the form edits; every other key of a config round-trips through "Other fields". */
const MANAGED = new Set([
  "type",
  "command",
  "args",
  "cwd",
  "env",
  "envVars",
  "url",
  "headers",
  "envHeaders",
  "bearerTokenEnvVar",
  "oauth",
  "description",
  "enabled",
  "startupTimeoutMs",
  "toolTimeoutMs",
  "idleTimeoutMs",
  "apps",
]);
const REDACTED = "***";

const DEFAULT_IDLE_MS = 600_000;

/** How long a server stays quiet before it sleeps, in words (its own `idleTimeoutMs` or the default). */
function idleMinutes(idleTimeoutMs: number | undefined): string {
  const ms = idleTimeoutMs === undefined || idleTimeoutMs === 0 ? DEFAULT_IDLE_MS : idleTimeoutMs;
  const minutes = ms / 60_000;
  return minutes >= 1 ? `${Number(minutes.toFixed(1))} min` : `${Math.round(ms / 1000)} s`;
}

/** Rows of name → value, the value masked when it is a secret (env values, header values); a stored secret is
 * never shown: it says where it is kept, and is replaced by typing a new value or removed with its row. */
class PairsEditor {
  readonly element: HTMLElement;
  private readonly rows = h("div", { className: "pairs" });

  constructor(
    private readonly legend: string,
    private readonly keyLabel: string,
    private readonly valueLabel: string,
    private readonly secret: boolean,
    initial: { readonly [key: string]: string } | undefined,
    private readonly keptIn = "",
  ) {
    this.element = h(
      "fieldset",
      { className: "pairs-editor" },
      h("legend", null, legend),
      this.rows,
      h("button", { type: "button", onclick: () => this.add("", "", true) }, `Add ${keyLabel.toLowerCase()}`),
    );
    for (const [key, value] of Object.entries(initial ?? {})) this.add(key, value, false);
  }

  values(): Json | undefined {
    const result: Json = {};
    for (const row of this.rows.children) {
      const [key, value] = row.querySelectorAll("input");
      if (key !== undefined && value !== undefined && key.value.trim() !== "") result[key.value.trim()] = value.value;
    }
    return Object.keys(result).length === 0 ? undefined : result;
  }

  private add(key: string, value: string, focus: boolean): void {
    const keyInput = h("input", { type: "text", value: key, "aria-label": `${this.keyLabel} (${this.legend})`, spellcheck: "false" });
    const stored = this.secret && value === REDACTED;
    const valueInput = h("input", {
      type: this.secret ? "password" : "text",
      value,
      autocomplete: "off",
      spellcheck: "false",
      "aria-label": `${this.valueLabel} (${this.legend})`,
    });
    const row = h(
      "div",
      { className: "pair" },
      keyInput,
      valueInput,
      stored ? h("span", { className: "hint", "data-role": "kept-in" }, keptHint(this.keptIn)) : null,
      h("button", { type: "button", "aria-label": `Remove ${key || "this row"}`, onclick: () => row.remove() }, "Remove"),
    );
    this.rows.append(row);
    if (focus) keyInput.focus();
  }
}

/** What a stored secret's row says: where the value is kept, and how to change it (it is never read back). */
function keptHint(backend: string): string {
  return `${backend === "" ? "stored" : `kept in ${backend}`} — type a new value to replace it, or remove the row`;
}

function list(text: string, separator: RegExp): string[] | undefined {
  const items = text
    .split(separator)
    .map((item) => item.trim())
    .filter((item) => item !== "");
  return items.length === 0 ? undefined : items;
}

function setOrDelete(target: Json, key: string, value: unknown): void {
  if (value === undefined) delete target[key];
  else target[key] = value;
}

export class ServerForm {
  constructor(
    private readonly app: PageState,
    private readonly banner: Banner,
    private readonly slot: HTMLElement,
  ) {}

  /** Open the form: empty for a new server, filled from `server` to edit it. */
  open(server?: ServerRecord): void {
    const original: Json = server === undefined ? {} : (structuredClone(server.config) as unknown as Json);
    const editing = server !== undefined;
    const str = (key: string): string => (typeof original[key] === "string" ? (original[key] as string) : "");
    const strings = (key: string): string[] => (Array.isArray(original[key]) ? (original[key] as string[]) : []);
    const record = (key: string): { [key: string]: string } | undefined =>
      typeof original[key] === "object" && original[key] !== null ? (original[key] as { [key: string]: string }) : undefined;
    const oauth = record("oauth") as Json | undefined;
    const apps = (record("apps") ?? {}) as { [app: string]: unknown };

    const name = h("input", { type: "text", required: true, value: server?.name ?? "", readonly: editing, spellcheck: "false", autocomplete: "off" });
    const nameError = h("span", { className: "field-error", id: uid("name-error"), role: "alert", "data-role": "name-error" });
    /** The name's problem shown under it (`undefined`: none); nothing is sent while there is one. */
    const checkName = (): string | undefined => {
      const problem = editing ? undefined : serverNameProblem(name.value.trim());
      nameError.textContent = problem ?? "";
      name.setAttribute("aria-invalid", problem === undefined ? "false" : "true");
      return problem;
    };
    // Said while typing once the person has typed something (an empty name is said on submit).
    name.addEventListener("input", () => {
      if (name.value !== "") checkName();
      else nameError.textContent = "";
    });
    const isHttp = original.type === "http";
    const transportName = uid("transport");
    const stdioRadio = h("input", { type: "radio", name: transportName, value: "stdio", checked: !isHttp, id: uid("t") });
    const httpRadio = h("input", { type: "radio", name: transportName, value: "http", checked: isHttp, id: uid("t") });

    const command = h("input", { type: "text", value: str("command"), spellcheck: "false" });
    const args = h("textarea", { rows: 3, spellcheck: "false" }, strings("args").join("\n"));
    const cwd = h("input", { type: "text", value: str("cwd"), spellcheck: "false" });
    const env = new PairsEditor("Environment", "Variable", "Value", true, record("env"), this.app.secretBackend);
    const envVars = h("input", { type: "text", value: strings("envVars").join(", "), spellcheck: "false" });

    const url = h("input", { type: "url", value: str("url"), spellcheck: "false" });
    const headers = new PairsEditor("Headers", "Header", "Value", true, record("headers"), this.app.secretBackend);
    const envHeaders = new PairsEditor("Headers from the environment", "Header", "Variable", false, record("envHeaders"));
    const bearer = h("input", { type: "text", value: str("bearerTokenEnvVar"), spellcheck: "false" });
    const useOauth = h("input", { type: "checkbox", checked: oauth !== undefined, id: uid("oauth") });
    const scopes = h("input", { type: "text", value: ((oauth?.scopes as string[] | undefined) ?? []).join(" ") });
    const origins = h("input", { type: "text", value: ((oauth?.allowedOrigins as string[] | undefined) ?? []).join(" ") });

    const description = h("input", { type: "text", value: str("description") });
    const enabled = h("input", { type: "checkbox", checked: original.enabled !== false, id: uid("enabled") });
    const startupTimeout = h("input", { type: "number", min: 1, max: 600000, value: original.startupTimeoutMs === undefined ? "" : String(original.startupTimeoutMs) });
    const toolTimeout = h("input", { type: "number", min: 1, max: 300000, value: original.toolTimeoutMs === undefined ? "" : String(original.toolTimeoutMs) });
    const idleTimeoutMs = typeof original.idleTimeoutMs === "number" ? original.idleTimeoutMs : undefined;
    const keepAwake = h("input", { type: "checkbox", checked: idleTimeoutMs === 0, id: uid("awake") });
    keepAwake.setAttribute("aria-describedby", `${keepAwake.id}-hint`);
    const appBoxes = APPS.map(({ id, label }) => ({ id, box: h("input", { type: "checkbox", checked: apps[id] === true, id: uid(`app-${id}`) }), label }));
    const others = Object.fromEntries(Object.entries(original).filter(([key]) => !MANAGED.has(key)));
    const otherJson = h("textarea", { rows: 4, spellcheck: "false" }, Object.keys(others).length === 0 ? "" : JSON.stringify(others, null, 2));
    const errors = h("div", { className: "form-errors", role: "alert", "data-role": "form-errors" });

    const stdioSection = h(
      "div",
      { className: "transport-fields", "data-transport": "stdio" },
      field("Command", command, "The program to run (looked up on PATH)."),
      field("Arguments", args, "One per line."),
      field("Working directory", cwd, "Absolute; empty: none."),
      env.element,
      field("Pass-through variables", envVars, "Names of the daemon's environment variables to pass on, comma-separated."),
    );
    const httpSection = h(
      "div",
      { className: "transport-fields", "data-transport": "http" },
      field("URL", url, "https, or http to a loopback host."),
      headers.element,
      envHeaders.element,
      field("Bearer token variable", bearer, "The environment variable holding a bearer token."),
      h("div", { className: "field inline" }, useOauth, h("label", { for: useOauth.id }, "Log in with OAuth")),
      field("OAuth scopes", scopes, "Space-separated."),
      field("Allowed OAuth origins", origins, "Origins besides the server's own that its OAuth endpoints may be on."),
    );
    const showTransport = (): void => {
      stdioSection.hidden = !stdioRadio.checked;
      httpSection.hidden = !httpRadio.checked;
    };
    stdioRadio.addEventListener("change", showTransport);
    httpRadio.addEventListener("change", showTransport);
    showTransport();

    const build = (): McpServerConfig => {
      const config: Json = structuredClone(original);
      for (const key of Object.keys(config)) if (!MANAGED.has(key)) delete config[key];
      if (otherJson.value.trim() !== "") {
        let parsed: unknown;
        try {
          parsed = JSON.parse(otherJson.value);
        } catch (error) {
          throw new Error(`Other fields: not JSON (${(error as Error).message})`);
        }
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
          throw new Error("Other fields: expected a JSON object");
        }
        for (const [key, value] of Object.entries(parsed)) {
          if (MANAGED.has(key)) throw new Error(`Other fields: ${key} is set by the form above`);
          config[key] = value;
        }
      }
      const http = httpRadio.checked;
      for (const key of http ? ["command", "args", "cwd", "env", "envVars"] : ["url", "headers", "envHeaders", "bearerTokenEnvVar", "oauth"]) {
        delete config[key];
      }
      if (http) {
        config.type = "http";
        setOrDelete(config, "url", url.value.trim() || undefined);
        setOrDelete(config, "headers", headers.values());
        setOrDelete(config, "envHeaders", envHeaders.values());
        setOrDelete(config, "bearerTokenEnvVar", bearer.value.trim() || undefined);
        if (useOauth.checked) {
          const next: Json = { ...(oauth ?? {}) };
          setOrDelete(next, "scopes", list(scopes.value, /[\s,]+/));
          setOrDelete(next, "allowedOrigins", list(origins.value, /[\s,]+/));
          config.oauth = next;
        } else {
          delete config.oauth;
        }
      } else {
        if (original.type === "stdio") config.type = "stdio";
        else delete config.type;
        setOrDelete(config, "command", command.value.trim() || undefined);
        setOrDelete(config, "args", list(args.value, /\n/));
        setOrDelete(config, "cwd", cwd.value.trim() || undefined);
        setOrDelete(config, "env", env.values());
        setOrDelete(config, "envVars", list(envVars.value, /[\s,]+/));
      }
      setOrDelete(config, "description", description.value.trim() || undefined);
      setOrDelete(config, "enabled", enabled.checked && original.enabled === undefined ? undefined : enabled.checked);
      setOrDelete(config, "startupTimeoutMs", startupTimeout.value === "" ? undefined : Number(startupTimeout.value));
      setOrDelete(config, "toolTimeoutMs", toolTimeout.value === "" ? undefined : Number(toolTimeout.value));
      // Kept awake: 0 (never sleeps); unticked, a value of its own is kept and a 0 goes back to the default.
      setOrDelete(config, "idleTimeoutMs", keepAwake.checked ? 0 : idleTimeoutMs === 0 ? undefined : idleTimeoutMs);
      const targets: Json = {};
      for (const { id, box } of appBoxes) {
        if (box.checked) targets[id] = true;
        else if (apps[id] !== undefined) targets[id] = false;
      }
      setOrDelete(config, "apps", Object.keys(targets).length === 0 ? undefined : targets);
      return config as unknown as McpServerConfig;
    };

    const save = async (): Promise<void> => {
      replace(errors);
      if (checkName() !== undefined) {
        name.focus();
        return;
      }
      let config: McpServerConfig;
      try {
        config = build();
      } catch (error) {
        replace(errors, (error as Error).message);
        return;
      }
      let saved: ServerRecord;
      try {
        saved =
          server === undefined
            ? (await this.app.client.request("mcpServer/create", { name: name.value.trim(), config })).server
            : (await this.app.client.request("mcpServer/update", { name: server.name, config, expectedRevision: server.revision })).server;
      } catch (error) {
        const hint =
          error instanceof AppServerError && error.is("redactedValue")
            ? h("p", null, `Enter the value of ${error.data.path} again: a stored secret is only kept while the server's command (or URL) stays the same.`)
            : error instanceof AppServerError && error.is("revisionMismatch")
              ? h("p", null, "The server changed since this form was opened: close it and edit again.")
              : null;
        replace(errors, h("p", null, h("strong", null, "Not saved.")), failureView(explain(error)), hint);
        return;
      }
      this.close();
      const done = `${server === undefined ? "Added" : "Saved"} ${saved.name}`;
      this.banner.say("info", `${done}${saved.enabled ? "; starting it…" : "."}`);
      await this.banner.attempt("refresh the servers", () => this.app.refreshServers());
      if (!saved.enabled) return;
      // Enabled means running: a new server is started, an edited one restarted with its new config (the daemon
      // restarts a running one itself; a start of a live server with this config only reports it ready).
      const failure = await this.app.start(saved.name);
      this.banner.say(failure === undefined ? "info" : "error", failure ?? `${done}; it is ready.`);
    };

    const nameField = field("Name", name, editing ? "A server's name cannot change." : SERVER_NAME_RULE);
    nameField.append(nameError);
    name.setAttribute("aria-describedby", `${name.getAttribute("aria-describedby") ?? ""} ${nameError.id}`.trim());
    const heading = editing ? `Edit ${server.name}` : "Add a server";
    const headingId = uid("form-heading");
    const form = h(
      "form",
      {
        className: "panel server-form",
        "aria-labelledby": headingId,
        novalidate: true,
        onsubmit: (event: Event) => {
          event.preventDefault();
          void save();
        },
        onkeydown: (event: Event) => {
          if ((event as KeyboardEvent).key === "Escape") this.close();
        },
      },
      h("h3", { id: headingId }, heading),
      nameField,
      h(
        "fieldset",
        { className: "inline" },
        h("legend", null, "Transport"),
        h("label", { for: stdioRadio.id }, stdioRadio, " stdio (a local program)"),
        h("label", { for: httpRadio.id }, httpRadio, " http (a URL)"),
      ),
      stdioSection,
      httpSection,
      field("Description", description),
      h("div", { className: "field inline" }, enabled, h("label", { for: enabled.id }, "Enabled (started by the daemon, offered to threads)")),
      h("div", { className: "row" }, field("Startup timeout (ms)", startupTimeout), field("Tool timeout (ms)", toolTimeout)),
      h(
        "div",
        { className: "field inline" },
        keepAwake,
        h("label", { for: keepAwake.id }, "Keep awake in threads"),
        h(
          "span",
          { className: "hint", id: `${keepAwake.id}-hint` },
          ` A thread's server that has been quiet for ${idleMinutes(idleTimeoutMs)} sleeps: it is stopped, and restarted on its next use, losing what it held (an open browser page, a REPL's variables, a session). Keep awake servers that hold such state.`,
        ),
      ),
      h(
        "fieldset",
        { className: "inline" },
        h("legend", null, "Sync to apps"),
        appBoxes.map(({ box, label }) => h("label", { for: box.id }, box, ` ${label}`)),
      ),
      field("Other fields (JSON)", otherJson, "Every other field of the config, kept as it is unless you change it."),
      errors,
      h(
        "div",
        { className: "actions" },
        h("button", { type: "submit", className: "primary" }, editing ? "Save" : "Add"),
        h("button", { type: "button", onclick: () => this.close() }, "Cancel"),
      ),
    );
    replace(this.slot, form);
    (editing ? description : name).focus();
  }

  close(): void {
    replace(this.slot);
  }
}
