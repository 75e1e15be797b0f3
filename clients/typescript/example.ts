// A strictly typed stdio client for mcp-app-server: every protocol type comes from the generated bindings.
// Usage: node example.js <python> <fixture_server.py> <data-dir>   (it runs the daemon as `<python> -m app_server`)
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { ERROR_CODES } from "../../schemas/typescript/index.js";
import type {
  ClientNotification, ClientRequest, ClientResponseByMethod, JsonRpcError, RequestId, ServerNotification,
  ServerRequest, ServerResponseByMethod,
} from "../../schemas/typescript/index.js";

type Method = ClientRequest["method"];
type ParamsOf<M extends Method> = Extract<ClientRequest, { method: M }>["params"];
type Answer = (request: ServerRequest) => ServerResponseByMethod[ServerRequest["method"]];

class DaemonError extends Error {
  constructor(readonly error: JsonRpcError) {
    super(`${error.data.reason}: ${error.message}`);
  }
}

class Client {
  private nextId = 0;
  private readonly waiting = new Map<RequestId, { resolve: (result: never) => void; reject: (e: Error) => void }>();
  private readonly daemon;

  constructor(command: string, args: string[], answer: Answer, onNotification: (n: ServerNotification) => void) {
    this.daemon = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
    createInterface({ input: this.daemon.stdout }).on("line", (line) => {
      const message = JSON.parse(line);
      const waiter = this.waiting.get(message.id);
      if (message.method !== undefined && message.id !== undefined) {
        this.send({ jsonrpc: "2.0", id: message.id, result: answer(message as ServerRequest) });
      } else if (message.method !== undefined) {
        onNotification(message as ServerNotification);
      } else if (waiter !== undefined) {
        this.waiting.delete(message.id);
        if (message.error) waiter.reject(new DaemonError(message.error as JsonRpcError));
        else waiter.resolve(message.result as never);
      }
    });
  }

  call<M extends Method>(method: M, params: ParamsOf<M>): Promise<ClientResponseByMethod[M]> {
    const id = `ts-${++this.nextId}`;
    this.send({ jsonrpc: "2.0", id, method, params });
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }));
  }

  notify(notification: ClientNotification): void {
    this.send({ jsonrpc: "2.0", ...notification });
  }

  close(): Promise<number | null> {
    this.daemon.stdin.end();
    return new Promise((resolve) => this.daemon.on("exit", resolve));
  }

  private send(message: object): void {
    this.daemon.stdin.write(JSON.stringify(message) + "\n");
  }
}

const ADA = { name: "Ada", age: 36 }; // the fixture's `ask` tool requests a form {name, age}

async function main(python: string, fixture: string, dataDir: string): Promise<void> {
  const client = new Client(
    python,
    ["-m", "app_server", "--data-dir", dataDir],
    (request) => (request.params.serverName === "fx" ? { action: "accept", content: ADA } : { action: "decline" }),
    (note) => {
      if (note.method === "mcpServer/startupStatus/updated") console.error(`${note.params.name} ${note.params.status}`);
    },
  );
  const hello = await client.call("initialize", { clientInfo: { name: "ts-example", version: "1.0.0" } });
  client.notify({ method: "initialized" });
  await client.call("mcpServer/create", { name: "fx", config: { command: python, args: [fixture] } });
  const servers = (await client.call("mcpServer/list", undefined)).data;
  const commands = servers.map((s) => ("url" in s.config ? s.config.url : s.config.command));
  const { thread } = await client.call("thread/start", { name: "example", servers: ["fx"] });
  const call = (tool: string, args: Record<string, unknown>) =>
    client.call("mcpServer/tool/call", { threadId: thread.id, server: "fx", tool, arguments: args });
  const echo = await call("echo", { text: "hi" });
  const asked = await call("ask", { question: "Who are you?" }); // the daemon sends an elicitation request first
  const failed = await client.call("thread/read", { threadId: "no-such-thread" }).catch((e: DaemonError) => e.error);
  const reason = "data" in failed ? failed.data.reason : undefined;
  console.log(JSON.stringify({
    server: hello.serverInfo.name, servers: servers.map((s) => s.name), commands, thread: thread.status,
    echo: echo.content[0], elicited: asked.content[0], reason, code: reason && ERROR_CODES[reason],
  }));
  await client.call("thread/archive", { threadId: thread.id });
  process.exitCode = (await client.close()) ?? 1;
}

const [python, fixture, dataDir] = process.argv.slice(2);
main(python, fixture, dataDir).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
