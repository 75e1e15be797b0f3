// The sidecar module as a browser bundle resolves it (the package's `#sidecar` import, `browser` condition): a
// renderer never spawns a process, so these say so instead of pulling in Node's child_process and fs.
import type { SidecarOptions, SidecarTransport, StderrSink, StderrStream } from "./sidecar.js";

const NODE_ONLY = "AppServerClient.spawn runs in Node only: in a renderer, use new AppServerClient(messagePortTransport(port))";

export function openStderr(_destination: string | StderrStream, _report: (error: Error) => void): StderrSink {
  throw new Error(NODE_ONLY);
}

export function startSidecar(
  _command: string,
  _args: readonly string[],
  _options: SidecarOptions,
  _stderr: StderrSink | undefined,
): SidecarTransport {
  throw new Error(NODE_ONLY);
}
