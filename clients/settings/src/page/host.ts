// The page's one call to its host besides the bridge: open a URL in the system browser (an OAuth login). A desktop
// app puts the same call behind its IPC (Electron's `shell.openExternal`, Tauri's opener plugin).
let hostToken = "";

/** Remember this run's token for host calls. */
export function useToken(token: string): void {
  hostToken = token;
}

/** Ask the host to open `url` in the system browser. */
export async function openExternal(url: string): Promise<void> {
  const response = await fetch("/host/open", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Bridge-Token": hostToken },
    body: JSON.stringify({ url }),
  });
  if (!response.ok) throw new Error(`the host could not open the browser: ${await response.text()}`);
}
