// A tab's banner: what an action in that tab reported. Each tab has its own, shown inside its panel, so switching
// tabs never shows another tab's message. Information fades after a while; an error stays until dismissed or
// replaced.
import { h, replace } from "./dom.js";
import { explain, failureView } from "./failure.js";
import type { Failure } from "./failure.js";

const INFO_MS = 8000;

export class Banner {
  readonly element: HTMLElement;
  private shown: object | undefined;

  constructor(tab: string) {
    this.element = h("div", { className: "notice", "aria-live": "polite", "data-banner-of": tab });
  }

  /** Say something in this tab: information, or a failure (sentence first). */
  say(kind: "info" | "error", message: string | Failure): void {
    const token = {};
    this.shown = token;
    replace(
      this.element,
      h(
        "div",
        { className: `notice-${kind}`, role: kind === "error" ? "alert" : "status", "data-role": "notice", "data-kind": kind },
        h("div", { className: "notice-text" }, typeof message === "string" ? h("p", null, message) : failureView(message)),
        h("button", { type: "button", className: "link", "aria-label": "Dismiss", onclick: () => this.clear() }, "×"),
      ),
    );
    if (kind === "info") {
      setTimeout(() => {
        if (this.shown === token) this.clear();
      }, INFO_MS);
    }
  }

  clear(): void {
    this.shown = undefined;
    replace(this.element);
  }

  /** Run an action of this tab, saying why it failed ("Could not <doing>: …"); its result, or undefined. */
  async attempt<T>(doing: string, action: () => Promise<T>): Promise<T | undefined> {
    try {
      return await action();
    } catch (error) {
      this.say("error", explain(error, doing));
      return undefined;
    }
  }
}
