// The MCP Apps kit's Node half: a view's declared origins checked as origins (IDN to punycode, control characters,
// paths, wildcards, local addresses), the policies built from them, and the sandbox server answering hostile
// requests without ever ending its process.
import assert from "node:assert/strict";
import { request } from "node:http";
import { connect } from "node:net";
import { test } from "node:test";
import { AppsSandbox, MAX_VIEW_ORIGINS, cspOrigin, relayPolicy, viewPolicy } from "mcp-app-server-client/apps-host";

test("an origin is kept, normalized to ASCII", () => {
  assert.equal(cspOrigin("https://api.example.com"), "https://api.example.com");
  assert.equal(cspOrigin("https://api.example.com/"), "https://api.example.com");
  assert.equal(cspOrigin("wss://ws.example.com:8443"), "wss://ws.example.com:8443");
  assert.equal(cspOrigin("https://*.example.com"), "https://*.example.com");
  assert.equal(cspOrigin("https://Bücher.example"), "https://xn--bcher-kva.example");
  assert.equal(cspOrigin("https://例え.テスト"), "https://xn--r8jz45g.xn--zckzah");
  assert.equal(cspOrigin("https://8.8.8.8"), "https://8.8.8.8");
  assert.equal(cspOrigin("https://[2001:4860::8888]"), "https://[2001:4860::8888]");
});

test("anything that is not a public origin is refused", () => {
  const refused = [
    "*",
    "https://*",
    "https://*.com",
    "https://a.*.example.com",
    "https://a.test; script-src *",
    "https://a.test https://b.test",
    "'unsafe-eval'",
    "https://example.com/path",
    "https://user@example.com",
    "javascript:alert(1)",
    "data:",
    "http://127.0.0.1:8080",
    "http://127.1",
    "http://0x7f.1",
    "http://2130706433",
    "https://10.1.2.3",
    "https://172.20.0.1",
    "https://192.168.0.1",
    "https://169.254.169.254",
    "https://[::1]",
    "https://[fd00::1]",
    "https://[fe80::1]",
    "https://[::ffff:127.0.0.1]",
    "http://localhost:3000",
    "https://view.localhost",
    "https://printer.local",
    "https://intranet",
    "https://ex\u0000ample.com",
    "https://ex\u0001ample.com",
    "https://ex\u0085ample.com",
    "https://a.com\r\nSet-Cookie: x=1",
    "https://example.com:0",
    "https://example.com:70000",
    `https://${"a".repeat(300)}.com`,
    42,
    null,
  ];
  for (const entry of refused) assert.equal(cspOrigin(entry), undefined, JSON.stringify(entry));
});

const directive = (policy: string, name: string): string | undefined =>
  policy
    .split(";")
    .map((part) => part.trim())
    .find((part) => part.startsWith(`${name} `));

test("the view's policy names exactly its declared origins per directive, each once, framed by its ancestors", () => {
  const policy = viewPolicy(
    {
      connectDomains: ["https://api.example.com", "https://API.example.com/", "http://127.0.0.1:9", "*"],
      resourceDomains: ["https://cdn.example.com"],
      frameDomains: ["https://Bücher.example"],
    },
    ["http://127.0.0.1:1", "http://127.0.0.1:2", "not an origin; script-src *"],
  );
  assert.equal(directive(policy, "connect-src"), "connect-src 'self' https://api.example.com");
  assert.equal(directive(policy, "img-src"), "img-src 'self' data: blob: https://cdn.example.com");
  assert.equal(directive(policy, "frame-src"), "frame-src https://xn--bcher-kva.example");
  assert.equal(directive(policy, "base-uri"), "base-uri 'none'");
  assert.equal(directive(policy, "frame-ancestors"), "frame-ancestors http://127.0.0.1:1 http://127.0.0.1:2");
  assert.equal(policy.split(";").filter((part) => part.trim().startsWith("script-src")).length, 1);
  assert.match(policy, /^[\x20-\x7e]+$/);
  const none = viewPolicy(undefined, []);
  assert.equal(directive(none, "connect-src"), "connect-src 'self'");
  assert.equal(directive(none, "frame-src"), "frame-src 'none'");
  assert.equal(directive(none, "frame-ancestors"), "frame-ancestors 'none'");
  assert.equal(
    relayPolicy("http://127.0.0.1:3", ["app:"]),
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; frame-src http://127.0.0.1:3; base-uri 'none'; form-action 'none'; frame-ancestors app:",
  );
});

/** One raw request (any Host, any path bytes), answered or not; never throws past a closed socket. */
function raw(port: number, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const sent = request({ host: "127.0.0.1", port, path, headers, insecureHTTPParser: true }, (response) => {
      response.resume();
      response.on("end", () => resolve(response.statusCode ?? 0));
    });
    sent.on("error", () => resolve(0));
    sent.end();
  });
}

/** Bytes no HTTP client would send (a control character in the Host); the status line's code, or 0 if none. */
function bytes(port: number, text: string): Promise<number> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1", () => socket.end(Buffer.from(text, "latin1")));
    let answer = "";
    socket.on("data", (chunk) => (answer += chunk.toString("latin1")));
    socket.on("close", () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1] ?? 0)));
    socket.on("error", () => {});
  });
}

test("the sandbox survives hostile requests and bounds the origins it opens", async () => {
  const lines: string[] = [];
  const sandbox = await AppsSandbox.start({ pageOrigins: ["http://127.0.0.1:1"], log: (line) => lines.push(line) });
  try {
    const port = Number(new URL(sandbox.origin).port);
    const token = new URL(sandbox.url).searchParams.get("token") ?? "";
    const label = `v${"12".repeat(16)}`;
    const view = Number(new URL((await sandbox.viewOrigin(label)) ?? "").port);
    const hostile = ["https://例え.テスト", "https://ex\u0001ample.com", "https://\u0100.com", "https://é\u0000.com"];
    const handOver = async (origin: string): Promise<Response> =>
      fetch(`${sandbox.origin}/views?token=${token}&view=${label}`, { method: "POST", body: "<p>view</p>", headers: { Origin: origin } });
    assert.equal((await handOver("http://evil.example")).status, 403);
    for (const entry of hostile) {
      const { id } = (await (await handOver(sandbox.origin)).json()) as { id: string };
      const csp = encodeURIComponent(JSON.stringify({ connectDomains: [entry], resourceDomains: [entry] }));
      const query = `token=${token}&id=${id}&csp=${csp}`;
      assert.equal(await raw(view, `/view.html?${query}`, { host: `127.0.0.1:${view}` }), 200, entry);
      assert.equal(await raw(view, `/view.html?${query}`, { host: `127.0.0.1:${view}` }), 404, "a view was served twice");
    }
    assert.equal(await bytes(port, "GET /relay.html HTTP/1.1\r\nHost: 127.0.0.1\u0001\u00ff\r\n\r\n"), 400);
    assert.equal(await bytes(port, "GET /relay.html?\u00e9\u0001 HTTP/1.1\r\nHost: ex.com\r\n\r\n"), 400);
    // Past Node's header limit the parser refuses it (400) before the sandbox's own URL bound (414) would.
    assert.equal(await raw(port, `/relay.html?csp=${"x".repeat(20_000)}`, { host: `127.0.0.1:${port}` }), 400);
    assert.equal(await raw(port, "/apps/relay.js", { host: `127.0.0.1:${port}` }), 200);
    for (let i = 1; i < MAX_VIEW_ORIGINS; i++) await sandbox.viewOrigin(`v${i.toString(16).padStart(32, "0")}`);
    assert.equal(await sandbox.viewOrigin(`v${"f".repeat(32)}`), undefined);
    assert.equal(await sandbox.viewOrigin("not-a-label"), undefined);
    assert.equal(await sandbox.viewOrigin(label), `http://127.0.0.1:${view}`);
  } finally {
    await sandbox.close();
  }
});
