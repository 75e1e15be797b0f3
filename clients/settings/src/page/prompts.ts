// The prompts browser: the prompts of the running servers, and a prompt rendered with the arguments filled in.
import type { PromptView } from "mcp-app-server-client";
import type { PageState } from "./state.js";
import { contentBlock } from "./content.js";
import { field, h, replace, uid } from "./dom.js";
import { explain, failureView } from "./failure.js";
import type { ViewContext } from "./tabs.js";

export class PromptsView {
  readonly element: HTMLElement;
  private readonly listing = h("div", { className: "results", "data-role": "prompt-list" });
  private readonly detail = h("div", { className: "detail", "data-role": "prompt-detail", "aria-live": "polite" });

  private readonly app: PageState;

  constructor({ app }: ViewContext) {
    this.app = app;
    this.element = h(
      "section",
      { className: "view", "aria-labelledby": "prompts-heading" },
      h("h2", { id: "prompts-heading" }, "Prompts"),
      h("div", { className: "toolbar" }, h("button", { type: "button", onclick: () => this.shown() }, "Refresh")),
      h("div", { className: "split" }, this.listing, this.detail),
    );
  }

  shown(): void {
    void this.load();
  }

  private async load(): Promise<void> {
    try {
      const prompts: PromptView[] = [];
      for await (const prompt of this.app.client.paginate("mcpPrompt/list", {})) prompts.push(prompt);
      replace(
        this.listing,
        prompts.length === 0
          ? h("p", { className: "empty" }, "No prompts: start a server that offers some.")
          : h(
              "ul",
              { className: "plain" },
              prompts.map((prompt) =>
                h(
                  "li",
                  { "data-prompt": `${prompt.server}/${prompt.name}` },
                  h(
                    "button",
                    { type: "button", className: "link", onclick: () => this.open(prompt) },
                    `${prompt.server} / ${prompt.title ?? prompt.name}`,
                  ),
                  prompt.description === undefined ? null : h("span", { className: "description" }, prompt.description),
                ),
              ),
            ),
      );
    } catch (error) {
      replace(this.listing, failureView(explain(error)));
    }
  }

  private open(prompt: PromptView): void {
    const inputs = prompt.arguments.map((argument) => {
      const suggestions = h("datalist", { id: uid(`suggest-${argument.name}`), "data-suggestions": argument.name });
      const input = h("input", {
        type: "text",
        required: argument.required === true,
        "data-argument": argument.name,
        list: suggestions.id,
        autocomplete: "off",
      });
      return { argument, input, suggestions };
    });
    // Suggestions as the user types (the server's completion/complete), the other arguments given as context; only
    // the answer to the latest keystroke is shown, and a server without completions simply suggests nothing.
    for (const { argument, input, suggestions } of inputs) {
      let asked = 0;
      input.addEventListener("input", () => {
        const ticket = ++asked;
        const others: { [name: string]: string } = {};
        for (const other of inputs) if (other.input !== input && other.input.value !== "") others[other.argument.name] = other.input.value;
        this.app.client
          .complete({
            server: prompt.server,
            ref: { type: "prompt", name: prompt.name },
            argument: { name: argument.name, value: input.value },
            context: { arguments: others },
          })
          .then(
            (answer) => {
              if (ticket === asked) replace(suggestions, answer.values.map((value) => h("option", { value })));
            },
            () => undefined,
          );
      });
    }
    const output = h("div", { className: "result", "data-role": "prompt-result" });
    const get = async (): Promise<void> => {
      const values: { [name: string]: string } = {};
      for (const { argument, input } of inputs) if (input.value !== "") values[argument.name] = input.value;
      try {
        const result = await this.app.client.request("mcpPrompt/get", {
          server: prompt.server,
          name: prompt.name,
          arguments: values,
        });
        replace(
          output,
          result.description === undefined ? null : h("p", { className: "description" }, result.description),
          result.messages.map((message) =>
            h("div", { className: `message role-${message.role}` }, h("span", { className: "badge" }, message.role), contentBlock(message.content)),
          ),
        );
      } catch (error) {
        replace(output, failureView(explain(error)));
      }
    };
    replace(
      this.detail,
      h("h3", null, `${prompt.server} / ${prompt.name}`),
      prompt.description === undefined ? null : h("p", null, prompt.description),
      h(
        "form",
        {
          onsubmit: (event: Event) => {
            event.preventDefault();
            void get();
          },
        },
        inputs.length === 0 ? h("p", { className: "hint" }, "This prompt takes no arguments.") : null,
        inputs.map(({ argument, input, suggestions }) => [
          field(`${argument.title ?? argument.name}${argument.required ? " (required)" : ""}`, input, argument.description),
          suggestions,
        ]),
        h("button", { type: "submit", className: "primary" }, "Get prompt"),
      ),
      output,
    );
    (inputs[0]?.input ?? this.detail.querySelector("button"))?.focus();
  }
}
