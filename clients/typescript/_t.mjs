const t0 = performance.now();
const m = await import("mcp-app-server-client");
const t1 = performance.now();
const c = await m.AppServerClient.spawn(".venv/bin/python", ["-m", "app_server"], { dataDir: "/tmp/dd3" });
const t2 = performance.now();
console.log(`import ${(t1 - t0).toFixed(1)} spawn ${(t2 - t1).toFixed(1)}`);
await c.close();
