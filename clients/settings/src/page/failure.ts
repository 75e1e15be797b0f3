// Errors for people: a sentence first, built from the typed error (its message, its details, the stderr tail),
// then the typed reason as a detail with its words (`labels.ts`), then the facts the error carries. The page never
// leads with a reason code.
import { AppServerError, ProtocolViolation } from "mcp-app-server-client";
import type { ErrorInfo, ErrorReason } from "mcp-app-server-client";
import { h } from "./dom.js";
import { REASON_LABEL } from "./labels.js";

/** An error, explained. */
export interface Failure {
  /** What happened, in one sentence. */
  readonly sentence: string;
  /** The typed reason, when the daemon (or the client) gave one. */
  readonly reason: ErrorReason | undefined;
  /** What else the error says: validation issues, the folders searched, the last stderr line, … */
  readonly facts: readonly string[];
}

/** Any error, explained; `doing` ("start a thread") frames the sentence as what could not be done. */
export function explain(error: unknown, doing?: string): Failure {
  if (error instanceof AppServerError) {
    return { sentence: frame(doing, error.message), reason: error.reason, facts: dataFacts(error.data) };
  }
  if (error instanceof ProtocolViolation) {
    return {
      sentence: frame(doing, `the daemon sent a ${error.kind} the protocol does not allow${error.method === undefined ? "" : ` (${error.method})`}`),
      reason: undefined,
      facts: error.issues.map((issue) => `${issue.path || "(message)"}: ${issue.message}`),
    };
  }
  return { sentence: frame(doing, error instanceof Error ? error.message : String(error)), reason: undefined, facts: [] };
}

/** A typed error a notification carried (`{reason, message}`), explained as `explain` does. */
export function explainInfo(info: ErrorInfo, doing?: string): Failure {
  return { sentence: frame(doing, info.message), reason: info.reason, facts: [] };
}

/**
 * Why a server is not running. `started`: the error ended a start (the start's own error when the page made the
 * request, whose data carries the details; else the startup notification's); otherwise it is the status row's last
 * error. `stderrTail` is the status row's.
 */
export function serverFailure(
  name: string,
  error: AppServerError | ErrorInfo,
  options: { readonly started: boolean; readonly stderrTail?: string | undefined },
): Failure {
  const data: { readonly [key: string]: unknown } =
    error instanceof AppServerError ? (error.data as unknown as { readonly [key: string]: unknown }) : {};
  const command = typeof data.command === "string" ? data.command : undefined;
  const searched = Array.isArray(data.searched) ? data.searched.filter((d): d is string => typeof d === "string") : [];
  const facts: string[] = [];
  let sentence: string;
  if (data.detail === "commandNotFound" && command !== undefined) {
    sentence = `${name} could not start: its command ${command} is not on the daemon's PATH (${searched.length} folders searched).`;
    if (searched.length > 0) facts.push(`Looked in ${searched.join(", ")}`);
  } else if (options.started || error.reason === "startupFailed") {
    sentence = `${name} could not start: ${sentenceBody(error.message)}`;
  } else {
    sentence = `${name}: ${sentenceBody(error.message)}`;
  }
  const tail = lastLine(typeof data.stderrTail === "string" ? data.stderrTail : options.stderrTail);
  if (tail !== undefined) facts.push(`Its stderr ended with: ${tail}`);
  return { sentence, reason: error.reason, facts };
}

/** A failure as the page shows it: the sentence, then the reason with its words, then the facts. */
export function failureView(failure: Failure): HTMLElement {
  return h(
    "div",
    { className: "failure", "data-role": "failure" },
    h("p", { className: "sentence", "data-role": "sentence" }, failure.sentence),
    failure.reason === undefined
      ? null
      : h(
          "p",
          { className: "reason", "data-role": "reason" },
          "Reason ",
          h("code", null, failure.reason),
          `: ${REASON_LABEL[failure.reason]}`,
        ),
    failure.facts.length === 0
      ? null
      : h("ul", { className: "facts" }, failure.facts.map((fact) => h("li", null, fact.slice(0, 500)))),
  );
}

function frame(doing: string | undefined, message: string): string {
  return doing === undefined ? capitalized(sentenceBody(message)) : `Could not ${doing}: ${sentenceBody(message)}`;
}

function sentenceBody(message: string): string {
  const text = message.trim() || "no reason given";
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function lastLine(text: string | undefined): string | undefined {
  const lines = (text ?? "").split("\n").map((line) => line.trim()).filter((line) => line !== "");
  return lines[lines.length - 1];
}

/** The details an error's data carries, beside its reason (validation issues first). */
function dataFacts(data: AppServerError["data"]): string[] {
  const fields = data as unknown as { readonly [key: string]: unknown };
  const issues = Array.isArray(fields.errors) ? (fields.errors as { path?: unknown; message?: unknown }[]) : [];
  const facts = issues.map((issue) => `${String(issue.path ?? "") || "(arguments)"}: ${String(issue.message ?? "")}`);
  for (const [key, value] of Object.entries(fields)) {
    if (key === "reason" || key === "errors") continue;
    if (key === "stderrTail" && typeof value === "string") {
      const tail = lastLine(value);
      if (tail !== undefined) facts.push(`Its stderr ended with: ${tail}`);
      continue;
    }
    facts.push(`${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`);
  }
  return facts;
}
