// Import servers from another app's config, and sync the store into apps' live configs. Both show a dry run first;
// the button that writes is enabled only after a dry run of the same choice. Imported servers that are enabled are
// started, as any server saved enabled is.
import type { ImportFromAppParams, ImportFromAppResult, SyncAllToLiveResult } from "mcp-app-server-client";
import type { PageState } from "./state.js";
import type { Banner } from "./banner.js";
import { field, h, replace, uid } from "./dom.js";
import { explain, failureView } from "./failure.js";

type AppId = ImportFromAppParams["app"];

export const APPS: readonly { readonly id: AppId; readonly label: string }[] = [
  { id: "claude", label: "Claude Code" },
  { id: "claudeDesktop", label: "Claude Desktop" },
  { id: "codex", label: "Codex" },
  { id: "gemini", label: "Gemini CLI" },
  { id: "cursor", label: "Cursor" },
  { id: "vscode", label: "VS Code" },
];

export class ImportersPanel {
  constructor(
    private readonly app: PageState,
    private readonly banner: Banner,
    private readonly slot: HTMLElement,
  ) {}

  openImport(): void {
    const select = h("select", null, APPS.map(({ id, label }) => h("option", { value: id }, label)));
    const path = h("input", { type: "text", spellcheck: "false", placeholder: "the app's usual place" });
    const result = h("div", { className: "result", "data-role": "import-result", "aria-live": "polite" });
    const importButton = h("button", { type: "button", className: "primary", disabled: true }, "Import");
    let previewed = "";
    const choice = (): ImportFromAppParams => {
      const params: ImportFromAppParams = { app: select.value as AppId };
      if (path.value.trim() !== "") params.path = path.value.trim();
      return params;
    };
    const reset = (): void => {
      previewed = "";
      importButton.disabled = true;
    };
    select.addEventListener("change", reset);
    path.addEventListener("input", reset);
    const run = async (dryRun: boolean): Promise<void> => {
      const params = choice();
      try {
        const answer = await this.app.client.request("mcpServer/importFromApp", { ...params, dryRun });
        replace(result, importSummary(answer, dryRun));
        if (dryRun) {
          previewed = JSON.stringify(params);
          importButton.disabled = answer.imported.length === 0;
        } else {
          reset();
          await this.app.refreshServers();
          const enabled = this.app.servers.filter((server) => server.enabled && answer.imported.includes(server.name));
          this.banner.say(
            "info",
            `Imported ${answer.imported.length} server(s)${enabled.length === 0 ? "" : `; starting ${enabled.map((server) => server.name).join(", ")}`}.`,
          );
          for (const server of enabled) {
            void this.app.start(server.name).then((failure) => {
              if (failure !== undefined) this.banner.say("error", failure);
            });
          }
        }
      } catch (error) {
        replace(result, failureView(explain(error)));
      }
    };
    importButton.addEventListener("click", () => {
      if (previewed === JSON.stringify(choice())) void run(false);
    });
    this.show(
      "Import from an app",
      field("App", select),
      field("Config file", path, "Optional: another file than the app's usual one."),
      h(
        "div",
        { className: "actions" },
        h("button", { type: "button", onclick: () => void run(true) }, "Preview (dry run)"),
        importButton,
        h("button", { type: "button", onclick: () => replace(this.slot) }, "Close"),
      ),
      result,
    );
  }

  openSync(): void {
    const boxes = APPS.map(({ id, label }) => ({ id, label, box: h("input", { type: "checkbox", id: uid(`sync-${id}`) }) }));
    const result = h("div", { className: "result", "data-role": "sync-result", "aria-live": "polite" });
    const writeButton = h("button", { type: "button", className: "primary", disabled: true }, "Write to apps");
    let previewed = "";
    const chosen = (): AppId[] => boxes.filter(({ box }) => box.checked).map(({ id }) => id);
    for (const { box } of boxes) {
      box.addEventListener("change", () => {
        previewed = "";
        writeButton.disabled = true;
      });
    }
    const run = async (dryRun: boolean): Promise<void> => {
      const apps = chosen();
      try {
        const answer = await this.app.client.request("mcpServer/syncAllToLive", {
          ...(apps.length === 0 ? {} : { apps }),
          dryRun,
        });
        replace(result, syncSummary(answer, dryRun));
        previewed = dryRun ? JSON.stringify(apps) : "";
        writeButton.disabled = !dryRun;
        if (!dryRun) this.banner.say("info", "Synced the apps' live configs.");
      } catch (error) {
        replace(result, failureView(explain(error)));
      }
    };
    writeButton.addEventListener("click", () => {
      if (previewed === JSON.stringify(chosen())) void run(false);
    });
    this.show(
      "Sync to apps",
      h(
        "fieldset",
        { className: "inline" },
        h("legend", null, "Apps (none checked: all)"),
        boxes.map(({ box, label }) => h("label", { for: box.id }, box, ` ${label}`)),
      ),
      h("p", { className: "hint" }, "Writes the servers marked for each app into its live config; other settings stay."),
      h(
        "div",
        { className: "actions" },
        h("button", { type: "button", onclick: () => void run(true) }, "Preview (dry run)"),
        writeButton,
        h("button", { type: "button", onclick: () => replace(this.slot) }, "Close"),
      ),
      result,
    );
  }

  private show(title: string, ...children: HTMLElement[]): void {
    const headingId = uid("panel");
    const panel = h(
      "section",
      {
        className: "panel",
        "aria-labelledby": headingId,
        onkeydown: (event: Event) => {
          if ((event as KeyboardEvent).key === "Escape") replace(this.slot);
        },
      },
      h("h3", { id: headingId }, title),
      children,
    );
    replace(this.slot, panel);
    panel.querySelector<HTMLElement>("select, input")?.focus();
  }
}

function importSummary(answer: ImportFromAppResult, dryRun: boolean): HTMLElement {
  return h(
    "div",
    null,
    h("p", null, h("strong", null, dryRun ? "Would import: " : "Imported: "), answer.imported.join(", ") || "nothing"),
    answer.skipped.length === 0
      ? null
      : h("ul", null, answer.skipped.map((entry) => h("li", null, `skipped ${entry.name}: ${entry.reason}`))),
    answer.warnings.length === 0 ? null : h("ul", { className: "warnings" }, answer.warnings.map((w) => h("li", null, w))),
  );
}

function syncSummary(answer: SyncAllToLiveResult, dryRun: boolean): HTMLElement {
  return h(
    "table",
    null,
    h("caption", null, dryRun ? "Dry run: nothing was written" : "Written"),
    h("thead", null, h("tr", null, ["App", "Config file", "Servers", "Changed", "Backup / error"].map((t) => h("th", { scope: "col" }, t)))),
    h(
      "tbody",
      null,
      answer.results.map((entry) =>
        h(
          "tr",
          { "data-app": entry.app },
          h("td", null, entry.app),
          h("td", null, h("code", null, entry.path)),
          h("td", null, entry.servers.join(", ") || "—"),
          h("td", null, entry.changed ? "yes" : "no"),
          h("td", null, entry.error ? `${entry.error.reason}: ${entry.error.message}` : (entry.backupPath ?? "")),
          entry.warnings?.length ? h("td", null, entry.warnings.join("; ")) : null,
        ),
      ),
    ),
  );
}
