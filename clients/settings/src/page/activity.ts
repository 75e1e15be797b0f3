// The activity log: every notification the page received (its params cut short), newest first, for people
// debugging a host against the daemon.
import type { PageState } from "./state.js";
import { h, replace } from "./dom.js";
import type { ViewContext } from "./tabs.js";

export class ActivityView {
  readonly element: HTMLElement;
  private readonly body = h("tbody");
  private scheduled = false;

  private readonly app: PageState;

  constructor({ app, hub }: ViewContext) {
    this.app = app;
    this.element = h(
      "section",
      { className: "view", "aria-labelledby": "activity-heading" },
      h("h2", { id: "activity-heading" }, "Activity"),
      h("p", { className: "hint" }, "Notifications from the daemon on this page's connection, newest first (the last 200)."),
      h(
        "table",
        { className: "activity" },
        h("thead", null, h("tr", null, ["Time", "Notification", "Params"].map((t) => h("th", { scope: "col" }, t)))),
        this.body,
      ),
    );
    hub.on("activity", () => {
      if (this.scheduled || !this.element.isConnected) return;
      this.scheduled = true;
      requestAnimationFrame(() => {
        this.scheduled = false;
        this.render();
      });
    });
  }

  shown(): void {
    this.render();
  }

  private render(): void {
    replace(
      this.body,
      this.app.activity.map((entry) =>
        h(
          "tr",
          null,
          h("td", null, entry.at.toLocaleTimeString()),
          h("td", null, h("code", null, entry.method)),
          h("td", null, h("code", { className: "params" }, entry.summary)),
        ),
      ),
    );
  }
}
