const t0 = performance.now();
const m = await import("node:child_process");
const t1 = performance.now();
console.log(`import child_process ${(t1 - t0).toFixed(1)}`);
