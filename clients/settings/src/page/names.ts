// The server-name rule, checked in the form before anything is sent. The daemon decides it
// (mcp_runtime/config/rules.py, check_server_name); it is repeated here because the client package does not export
// it yet and the page must say what is wrong while the person types (a language boundary).
const CHARACTER = /^[A-Za-z0-9_-]$/;
const MAX_LENGTH = 24;

/** The rule in words, for the form's hint. */
export const SERVER_NAME_RULE = "1–24 letters, digits, - or _, never two _ in a row (__ separates a tool's server from its name).";

/** What is wrong with `name` as a server name, in words, or `undefined` when the daemon will take it. */
export function serverNameProblem(name: string): string | undefined {
  if (name === "") return "Enter a name.";
  if (name.length > MAX_LENGTH) return `At most ${MAX_LENGTH} characters (this one has ${name.length}).`;
  const bad = [...new Set([...name].filter((character) => !CHARACTER.test(character)))];
  if (bad.length > 0) {
    return `Only letters, digits, - and _ (not ${bad.map((character) => (character === " " ? "a space" : `“${character}”`)).join(", ")}).`;
  }
  if (name.includes("__")) return "Never two _ in a row: __ separates a tool's server from its name (mcp__server__tool).";
  return undefined;
}
