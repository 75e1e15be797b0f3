// The one global modal for server-originated elicitation (SPEC §7): the form is built from the request's typed schema
// (MCP's primitive fields), checked before it is sent, and answered accept, decline or cancel. Requests arriving
// while one is shown wait their turn; a request the daemon resolved meanwhile (the call ended) closes unanswered.
import type {
  AnyElicitationRequest,
  ElicitationContext,
  ElicitationResponse,
  ElicitationValue,
  FormElicitationRequest,
  PrimitiveSchemaDefinition,
  UrlElicitationRequest,
} from "mcp-app-server-client";
import { h, replace, uid } from "./dom.js";

interface Pending {
  readonly request: AnyElicitationRequest;
  readonly context: ElicitationContext;
  readonly resolve: (answer: ElicitationResponse) => void;
}

/** Reads one field's control: its value, or an error in plain words. */
type Reader = () => { value?: ElicitationValue; error?: string };

interface FieldUi {
  readonly key: string;
  readonly element: HTMLElement;
  readonly read: Reader;
  readonly focusTarget: HTMLElement;
  readonly errorSlot: HTMLElement;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

export class ElicitationModal {
  private readonly dialog: HTMLDialogElement;
  private readonly queue: Pending[] = [];
  private current: { pending: Pending; fields: FieldUi[]; returnFocus: Element | null } | undefined;
  /** Called with how each request ended, for the activity log. */
  onAnswered: (request: AnyElicitationRequest, answer: ElicitationResponse | "resolved elsewhere") => void = () => {};
  /** Opens a URL the user agreed to open (the page's host decides how; by default a new browser tab). */
  openUrl: (url: string) => void = (url) => void window.open(url, "_blank", "noopener,noreferrer");

  constructor(parent: HTMLElement) {
    this.dialog = h("dialog", {
      id: "elicitation",
      className: "modal",
      "aria-labelledby": "elicitation-title",
      "aria-describedby": "elicitation-message",
    });
    // Escape on a modal dialog fires `cancel`: the request is answered cancel (never left hanging).
    this.dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      this.finish({ action: "cancel" });
    });
    this.dialog.addEventListener("keydown", (event) => this.keepFocus(event));
    parent.append(this.dialog);
  }

  /** The `onElicitation` handler. */
  readonly handle = (request: AnyElicitationRequest, context: ElicitationContext): Promise<ElicitationResponse> =>
    new Promise((resolve) => {
      const pending: Pending = { request, context, resolve };
      context.signal.addEventListener(
        "abort",
        () => {
          const index = this.queue.indexOf(pending);
          if (index >= 0) this.queue.splice(index, 1);
          if (this.current?.pending === pending) this.close("resolved elsewhere");
          resolve({ action: "cancel" });
        },
        { once: true },
      );
      this.queue.push(pending);
      if (this.current === undefined) this.showNext();
    });

  private showNext(): void {
    const pending = this.queue.shift();
    if (pending === undefined) return;
    if (pending.request.mode === "url") this.showUrl(pending, pending.request);
    else this.showForm(pending, pending.request);
  }

  /** A URL elicitation: the full origin in bold (what the user is sent to), the message, and Open or Cancel. */
  private showUrl(pending: Pending, request: UrlElicitationRequest): void {
    let origin: string;
    try {
      origin = new URL(request.url).origin;
    } catch {
      pending.resolve({ action: "decline" });
      this.onAnswered(request, { action: "decline" });
      this.showNext();
      return;
    }
    const open = h(
      "button",
      {
        type: "button",
        className: "primary",
        "data-role": "open-url",
        onclick: () => {
          this.openUrl(request.url);
          this.finish({ action: "accept" });
        },
      },
      "Open",
    );
    replace(
      this.dialog,
      h("h2", { id: "elicitation-title" }, `${request.serverName} asks you to open a page`),
      h("p", { className: "origin" }, "Opens ", h("strong", { "data-role": "url-origin" }, origin)),
      h("p", { id: "elicitation-message", className: "message" }, request.message),
      h("p", { className: "meta url", title: request.url }, request.url),
      h(
        "div",
        { className: "actions" },
        open,
        h("button", { type: "button", onclick: () => this.finish({ action: "cancel" }) }, "Cancel"),
      ),
    );
    this.current = { pending, fields: [], returnFocus: document.activeElement };
    this.dialog.showModal();
    open.focus();
  }

  private showForm(pending: Pending, request: FormElicitationRequest): void {
    const schema = request.requestedSchema;
    const required = new Set(schema.required ?? []);
    const fields = Object.entries(schema.properties).map(([key, definition]) =>
      buildField(key, definition, required.has(key)),
    );
    const form = h(
      "form",
      { novalidate: true, onsubmit: (event: Event) => (event.preventDefault(), this.submit()) },
      fields.map((f) => f.element),
      h(
        "div",
        { className: "actions" },
        h("button", { type: "submit", className: "primary" }, "Accept"),
        h("button", { type: "button", onclick: () => this.finish({ action: "decline" }) }, "Decline"),
        h("button", { type: "button", onclick: () => this.finish({ action: "cancel" }) }, "Cancel"),
      ),
    );
    replace(
      this.dialog,
      h("h2", { id: "elicitation-title" }, `${request.serverName} asks for input`),
      h("p", { id: "elicitation-message", className: "message" }, request.message),
      h("p", { className: "meta" }, `Thread ${request.threadId}${request.turnId ? `, turn ${request.turnId}` : ""}`),
      form,
    );
    this.current = { pending, fields, returnFocus: document.activeElement };
    this.dialog.showModal();
    (fields[0]?.focusTarget ?? form.querySelector("button"))?.focus();
  }

  private submit(): void {
    const current = this.current;
    if (current === undefined) return;
    const content: { [key: string]: ElicitationValue } = {};
    let firstInvalid: FieldUi | undefined;
    for (const f of current.fields) {
      const { value, error } = f.read();
      f.errorSlot.textContent = error ?? "";
      f.focusTarget.setAttribute("aria-invalid", error === undefined ? "false" : "true");
      if (error !== undefined) firstInvalid ??= f;
      else if (value !== undefined) content[f.key] = value;
    }
    if (firstInvalid !== undefined) {
      firstInvalid.focusTarget.focus();
      return;
    }
    this.finish({ action: "accept", content });
  }

  private finish(answer: ElicitationResponse): void {
    const current = this.current;
    if (current === undefined) return;
    current.pending.resolve(answer);
    this.close(answer);
  }

  private close(outcome: ElicitationResponse | "resolved elsewhere"): void {
    const current = this.current;
    if (current === undefined) return;
    this.current = undefined;
    this.dialog.close();
    this.onAnswered(current.pending.request, outcome);
    if (current.returnFocus instanceof HTMLElement) current.returnFocus.focus();
    this.showNext();
  }

  /** Tab and Shift-Tab cycle inside the modal. */
  private keepFocus(event: KeyboardEvent): void {
    if (event.key !== "Tab") return;
    const focusable = [
      ...this.dialog.querySelectorAll<HTMLElement>("input, select, textarea, button, [tabindex]:not([tabindex='-1'])"),
    ].filter((element) => !element.hasAttribute("disabled"));
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    if (first === undefined || last === undefined) return;
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  }
}

function buildField(key: string, definition: PrimitiveSchemaDefinition, required: boolean): FieldUi {
  const id = uid(`elicit-${key}`);
  const errorSlot = h("span", { className: "field-error", id: `${id}-error`, role: "alert" });
  const label = `${definition.title ?? key}${required ? " (required)" : ""}`;
  const description =
    definition.description === undefined ? null : h("span", { className: "hint", id: `${id}-hint` }, definition.description);
  const describedBy = [description === null ? "" : `${id}-hint`, `${id}-error`].join(" ").trim();
  const wrap = (control: HTMLElement, read: Reader, labelled: HTMLElement = control): FieldUi => ({
    key,
    read,
    focusTarget: labelled,
    errorSlot,
    element: h(
      "div",
      { className: "field", "data-field": key },
      control.tagName === "FIELDSET" ? null : h("label", { for: id }, label),
      control,
      description,
      errorSlot,
    ),
  });

  switch (definition.type) {
    case "boolean": {
      const input = h("input", { type: "checkbox", id, checked: definition.default === true, "aria-describedby": describedBy });
      return wrap(input, () => ({ value: input.checked }));
    }
    case "number":
    case "integer": {
      const integer = definition.type === "integer";
      const input = h("input", {
        type: "number",
        id,
        step: integer ? 1 : "any",
        min: definition.minimum,
        max: definition.maximum,
        value: definition.default === undefined ? "" : String(definition.default),
        "aria-describedby": describedBy,
        "aria-required": required,
      });
      return wrap(input, () => {
        const text = input.value.trim();
        if (text === "") return required ? { error: "Enter a number." } : {};
        const value = Number(text);
        if (!Number.isFinite(value)) return { error: "Enter a number." };
        if (integer && !Number.isInteger(value)) return { error: "Enter a whole number." };
        if (definition.minimum !== undefined && value < definition.minimum) {
          return { error: `At least ${definition.minimum}.` };
        }
        if (definition.maximum !== undefined && value > definition.maximum) {
          return { error: `At most ${definition.maximum}.` };
        }
        return { value };
      });
    }
    case "array": {
      const options =
        "anyOf" in definition.items
          ? definition.items.anyOf.map((option) => ({ value: option.const, label: option.title }))
          : definition.items.enum.map((value) => ({ value, label: value }));
      const chosen = new Set(definition.default ?? []);
      const boxes = options.map((option) =>
        h("input", { type: "checkbox", value: option.value, checked: chosen.has(option.value), id: uid(id) }),
      );
      const fieldset = h(
        "fieldset",
        { id, "aria-describedby": describedBy },
        h("legend", null, label),
        boxes.map((box, index) => h("label", { className: "choice" }, box, ` ${options[index]?.label ?? ""}`)),
      );
      return wrap(
        fieldset,
        () => {
          const value = boxes.filter((box) => box.checked).map((box) => box.value);
          if (required && value.length === 0) return { error: "Choose at least one." };
          if (definition.minItems !== undefined && value.length < definition.minItems) {
            return { error: `Choose at least ${definition.minItems}.` };
          }
          if (definition.maxItems !== undefined && value.length > definition.maxItems) {
            return { error: `Choose at most ${definition.maxItems}.` };
          }
          return { value };
        },
        boxes[0] ?? fieldset,
      );
    }
    case "string": {
      if ("enum" in definition || "oneOf" in definition) {
        const options =
          "oneOf" in definition
            ? definition.oneOf.map((option) => ({ value: option.const, label: option.title }))
            : definition.enum.map((value, index) => ({
                value,
                label: "enumNames" in definition ? (definition.enumNames[index] ?? value) : value,
              }));
        const select = h(
          "select",
          { id, "aria-describedby": describedBy, "aria-required": required },
          h("option", { value: "" }, "— choose —"),
          options.map((option) =>
            h("option", { value: option.value, selected: option.value === definition.default }, option.label),
          ),
        );
        return wrap(select, () => {
          if (select.value === "") return required ? { error: "Choose one." } : {};
          return { value: select.value };
        });
      }
      const format = "format" in definition ? definition.format : undefined;
      const input = h("input", {
        type: format === "email" ? "email" : format === "uri" ? "url" : format === "date" ? "date" : "text",
        id,
        value: definition.default ?? "",
        placeholder: format === "date-time" ? "2026-01-31T09:30:00Z" : undefined,
        minlength: definition.minLength,
        maxlength: definition.maxLength,
        "aria-describedby": describedBy,
        "aria-required": required,
      });
      return wrap(input, () => {
        const value = input.value;
        if (value === "") return required ? { error: "Fill this in." } : {};
        if (definition.minLength !== undefined && value.length < definition.minLength) {
          return { error: `At least ${definition.minLength} characters.` };
        }
        if (definition.maxLength !== undefined && value.length > definition.maxLength) {
          return { error: `At most ${definition.maxLength} characters.` };
        }
        const formatError = checkFormat(format, value);
        return formatError === undefined ? { value } : { error: formatError };
      });
    }
  }
}

function checkFormat(format: string | undefined, value: string): string | undefined {
  switch (format) {
    case "email":
      return EMAIL.test(value) ? undefined : "Enter an email address.";
    case "uri":
      try {
        new URL(value);
        return undefined;
      } catch {
        return "Enter a full URL.";
      }
    case "date":
      return DATE.test(value) ? undefined : "Enter a date (YYYY-MM-DD).";
    case "date-time":
      return Number.isNaN(Date.parse(value)) || !value.includes("T") ? "Enter a date and time (ISO 8601)." : undefined;
    default:
      return undefined;
  }
}
