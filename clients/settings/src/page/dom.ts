// A few DOM helpers: building elements, bounding what reaches the DOM, and formatting sizes.

type Child = Node | string | number | null | undefined | false | readonly Child[];
type Handler = (event: Event) => void;
type AttrValue = string | number | boolean | null | undefined | Handler;
type Attrs = { readonly [name: string]: AttrValue };

const PROPERTIES = new Set(["value", "checked", "disabled", "selected", "indeterminate"]);

/** An element with attributes (`onclick` etc. become listeners; `value`/`checked` are set as properties). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (PROPERTIES.has(name)) (element as unknown as Record<string, unknown>)[name] = value;
    else element.setAttribute(name === "className" ? "class" : name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

/** Append children (nested arrays flattened; null, undefined and false skipped). */
export function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child as readonly Child[]);
    else parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace an element's children. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** The most characters of one text the page puts in the DOM (the daemon's preview cut is 16 KiB). */
export const MAX_TEXT_CHARS = 16 * 1024;

/** A `<pre>` of at most `MAX_TEXT_CHARS`, saying how much was left out. */
export function boundedText(text: string, limit = MAX_TEXT_CHARS, label = "text"): HTMLElement {
  if (text.length <= limit) return h("pre", { className: "text" }, text);
  return h(
    "div",
    null,
    h("pre", { className: "text" }, text.slice(0, limit)),
    h("p", { className: "note" }, `… ${(text.length - limit).toLocaleString()} more characters of ${label} not shown`),
  );
}

/** JSON for people, bounded. */
export function boundedJson(value: unknown, limit = MAX_TEXT_CHARS): HTMLElement {
  return boundedText(JSON.stringify(value, null, 2) ?? "undefined", limit, "JSON");
}

/** `1.0 MiB`, `512 B`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** The decoded size of a base64 string, without decoding it. */
export function base64Bytes(data: string): number {
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

let uniqueCounter = 0;
/** An id unique in the page, for label/field pairs. */
export function uid(prefix: string): string {
  uniqueCounter += 1;
  return `${prefix}-${uniqueCounter}`;
}

/** A labelled field: `<label for>` + the control, with an optional hint tied by aria-describedby. */
export function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  const id = control.id || uid("field");
  control.id = id;
  const hintElement = hint === undefined ? null : h("span", { className: "hint", id: `${id}-hint` }, hint);
  if (hintElement !== null) control.setAttribute("aria-describedby", hintElement.id);
  return h("div", { className: "field" }, h("label", { for: id }, label), control, hintElement);
}
