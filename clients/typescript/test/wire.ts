// A test double that speaks the wire: the other end of an in-process duplex, playing the daemon line by line.
import { PassThrough } from "node:stream";
import { AppServerClient, streamTransport } from "mcp-app-server-client";
import type { ClientOptions, InitializeResult, LineOptions } from "mcp-app-server-client";
import { Arrivals } from "./support.js";

type Message = { [key: string]: unknown };

export const INITIALIZE_RESULT: InitializeResult = {
  serverInfo: { name: "mcp-app-server", version: "0.0.0-double" },
  protocolVersion: "test",
  userAgent: "mcp-app-server/0.0.0-double (tests/1.0.0)",
  dataDir: "/nowhere",
  methods: ["mcpServer/list"],
  notifications: ["mcpServer/tool/progress"],
  policy: { source: null, restricts: [] },
  secretStore: { kind: "file", backend: "files in the data dir" },
};

/** The daemon's end of the duplex: what the client sent, and a way to send it anything. */
export class WireDouble {
  readonly toClient = new PassThrough();
  readonly fromClient = new PassThrough();
  private readonly received = new Arrivals<Message>();
  private buffered = "";

  constructor() {
    this.fromClient.setEncoding("utf8");
    this.fromClient.on("data", (chunk: string) => {
      this.buffered += chunk;
      const lines = this.buffered.split("\n");
      this.buffered = lines.pop() ?? "";
      for (const line of lines) this.received.push(JSON.parse(line) as Message);
    });
    this.fromClient.on("end", () => this.toClient.end()); // like the daemon: stdin EOF ends the connection
  }

  /** A client on this double, initialized. */
  async client(options: ClientOptions = {}, lines: LineOptions = {}): Promise<AppServerClient> {
    const client = new AppServerClient(streamTransport(this.toClient, this.fromClient, lines), options);
    const initializing = client.initialize({ name: "tests", version: "1.0.0" });
    const request = await this.next((m) => m.method === "initialize");
    this.reply(request, INITIALIZE_RESULT);
    await initializing;
    await this.next((m) => m.method === "initialized");
    return client;
  }

  /** Write one line to the client, as it is. */
  line(text: string): void {
    this.toClient.write(`${text}\n`);
  }

  /** Write one message to the client. */
  send(message: Message): void {
    this.line(JSON.stringify({ jsonrpc: "2.0", ...message }));
  }

  /** Write `chunks` to the client as it reads them (waiting whenever the pipe is full), then a newline. */
  async stream(chunks: Iterable<string | Uint8Array>): Promise<void> {
    for (const chunk of chunks) {
      if (!this.toClient.write(chunk)) await new Promise((resolve) => this.toClient.once("drain", resolve));
    }
    this.toClient.write("\n");
  }

  /** Answer `request` with `result`. */
  reply(request: Message, result: unknown): void {
    this.send({ id: request.id, result });
  }

  /** Answer `request` with an error. */
  fail(request: Message, error: unknown): void {
    this.send({ id: request.id, error });
  }

  /** The first message from the client (seen or to come) that matches, taken off the list; within `WAIT_MS`. */
  next(match: (message: Message) => boolean = () => true): Promise<Message> {
    return this.received.wait((messages) => {
      const index = messages.findIndex(match);
      return index < 0 ? undefined : messages.splice(index, 1)[0];
    }, "the client sent nothing matching");
  }

  /** Everything the client sent that was not taken yet. */
  get unread(): readonly Message[] {
    return this.received.items;
  }

  /** End the connection from the daemon's side. */
  hangUp(): void {
    this.toClient.end();
  }
}
