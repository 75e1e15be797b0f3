"""``make bench``: every SPEC §8 budget measured against its floor in one run, printed as one table.

Each row comes from one benchmark module (``bench.usable``, ``bench.peer``, ``bench.quiet``, ``bench.dispatch``,
``bench.tool_call``, ``bench.management``, ``bench.threads``); every ratio is against a baseline measured in this
run on this machine.
Run: ``.venv/bin/python -m bench.report [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench import dispatch, management, peer, quiet, threads, tool_call, usable, usable_keychain

Row = tuple[str, str, str, str, bool]


def _rows(
    d: dict[str, Any],
    t: dict[str, Any],
    m: dict[str, Any],
    th: dict[str, Any],
    u: dict[str, Any],
    q: dict[str, Any],
    k: dict[str, Any],
) -> list[Row]:
    return [
        (f"time to usable: spawn → {u['servers']} stdio servers ready", f"{u['usable_s']} s",
         f"bare SDK process starting them {u['floor_s']} s", f"≤ {u['budget_ratio']}x ({u['ratio']}x)",
         u["ratio"] <= u["budget_ratio"]),
        (f"time to usable, each of the {k['servers']} servers' secrets in the keychain", f"{k['usable_s']} s",
         f"bare SDK process reading the same items with keyring {k['floor_s']} s",
         f"≤ {k['budget_ratio']}x ({k['ratio']}x)", k["ratio"] <= k["budget_ratio"]),
        (f"{q['threads']} conversations x {q['servers']} servers, PSS", f"quiet {q['quiet_pss_mib']} MiB",
         f"awake {q['awake_pss_mib']} MiB", f"≤ {q['pss_budget_mib']} MiB", q["quiet_pss_mib"] <= q["pss_budget_mib"]),
        ("first call to a sleeping server", f"{q['wake_call_ms']} ms",
         f"its own spawn + initialize {q['direct_start_ms']} ms", f"≤ {q['wake_budget_ratio']}x ({q['wake_ratio']}x)",
         q["wake_ratio"] <= q["wake_budget_ratio"]),
        ("first call to a sleeping server giving catalog TTLs", f"{q['fresh_wake_call_ms']} ms",
         f"its own spawn + initialize {q['fresh_direct_start_ms']} ms",
         f"≤ {q['wake_budget_ratio']}x ({q['fresh_wake_ratio']}x)", q["fresh_wake_ratio"] <= q["wake_budget_ratio"]),
        (f"spawn → first mcpServer/list, {d['stored_servers']} servers in the store", f"{d['first_list_ms']} ms",
         f"asyncio echo {d['echo_first_list_ms']} ms", f"≤ {d['first_list_budget_ratio']}x ({d['first_list_ratio']}x)",
         d["first_list_ratio"] <= d["first_list_budget_ratio"]),
        ("spawn → initialize", f"{d['initialize_ms']} ms", f"asyncio echo {d['echo_initialize_ms']} ms",
         "≤ 1.0x echo", d["initialize_ms"] <= d["echo_initialize_ms"]),
        ("mcpServer/list round trip", f"{d['list_round_trip_us']} µs", f"asyncio echo {d['echo_round_trip_us']} µs",
         f"≤ 1.3x ({d['round_trip_ratio']}x)", d["round_trip_ratio"] <= 1.3),
        ("mcpServer/tool/call, server-everything", f"{t['daemon_median_us']} µs",
         f"SDK front end {t['floor_median_us']} µs (direct {t['direct_sdk_median_us']} µs)",
         f"≤ 1.1x ({t['floor_ratio']}x)", t["floor_ratio"] <= 1.1),
        ("daemon CPU per tool call", f"{t['daemon_cpu_us']} µs (128 in flight: {t['daemon_pipelined_cpu_us']} µs)",
         f"SDK front end {t['floor_cpu_us']} µs ({t['floor_pipelined_cpu_us']} µs)", "≤ 700 µs",
         t["daemon_cpu_us"] <= 700),
        ("tool calls/s, 128 in flight", f"{t['daemon_calls_per_s']}/s",
         f"SDK front end {t['floor_calls_per_s']}/s, direct {t['direct_sdk_calls_per_s']}/s", "≥ 1,500/s",
         t["daemon_calls_per_s"] >= 1500),
        ("16 servers started at once", f"{m['start_16_at_once_s']} s (daemon CPU {m['start_16_daemon_cpu_s']} s)",
         f"one alone {m['start_one_s']} s; fixture CPU {m['start_16_fixture_cpu_s']} s; after the handshake 1.3x "
         f"leaves {m['start_window_after_handshake_s']} s; SDK alone {m['sdk_start_ratio']}x",
         f"≤ 1.3x ({m['start_ratio']}x)", m["start_ratio"] <= 1.3),
        ("mcpTool/search, 32 x 128 tools all matching", f"{m['search_32x128_ms']} ms", "—", "≤ 0.5 ms",
         m["search_32x128_ms"] <= 0.5),
        ("mcpServerStatus/list, 16 x 128 tools, detail full", f"{m['status_list_16_ms']} ms",
         f"daemon CPU {m['status_list_16_daemon_cpu_ms']} ms", "≤ 5 ms, CPU ≤ 1 ms",
         m["status_list_16_ms"] <= 5 and m["status_list_16_daemon_cpu_ms"] <= 1),
        ("mcpServerStatus/list, 16 x 128 tools, detail toolsAndAuthOnly", f"{m['status_list_16_tools_and_auth_ms']} ms",
         f"daemon CPU {m['status_list_16_tools_and_auth_daemon_cpu_ms']} ms", "≤ 5 ms, CPU ≤ 1 ms",
         m["status_list_16_tools_and_auth_ms"] <= 5 and m["status_list_16_tools_and_auth_daemon_cpu_ms"] <= 1),
        (f"thread/list page, {th['threads']} threads", f"{th['page_ms']} ms", "—", "≤ 5 ms", th["page_ms"] <= 5),
        ("RSS with 32 connected servers", f"{m['rss_32_servers_mib']} MiB", "—", "≤ 120 MiB",
         m["rss_32_servers_mib"] <= 120),
    ]


def _peer_rows(p: dict[str, Any]) -> list[Row]:
    """Against Codex app-server (a row without it when it is not installed: the daemon's side alone, not met)."""
    rows: list[Row] = []
    for kind, r in p["kinds"].items():
        against = f"Codex app-server {r['codex_s']} s" if "codex_s" in r else "Codex not installed"
        if "floor_ratio" in r:
            against += f"; the bare SDK floor {r['floor_s']} s, {r['floor_ratio']}x Codex"
        ratio = r.get("ratio")
        rows.append((f"spawn → {p['servers']} x {kind} usable, against the peer", f"{r['daemon_s']} s", against,
                     f"≤ {r['budget_ratio']}x ({ratio}x)", ratio is not None and ratio <= r["budget_ratio"]))
        spawned = r["first_spawn_after_initialized_ms"]
        rows.append((f"initialized → first server process ({kind})", f"{spawned} ms",
                     f"Codex {r['codex_first_spawn_after_initialized_ms']} ms", f"≤ {peer.SPAWN_BUDGET_MS:g} ms",
                     spawned is not None and spawned <= peer.SPAWN_BUDGET_MS))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke of the benchmarks)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    scale = 5 if args.quick else 1
    d = dispatch.measure(2000 // scale, 15 // scale)
    t = tool_call.measure("everything", 1000 // scale, 3000 // scale, 128)  # a fast server (Node)
    m = management.measure(300 // scale)
    th = threads.measure(5000 // scale, 200 // scale, 50)
    u = usable.measure(7 // scale or 1)
    p = peer.measure(7 // scale or 1, 5 // scale or 1)
    k = usable_keychain.measure(7 // scale or 1)
    q = quiet.measure(50 // scale, 4, 7 // scale or 1)
    if args.json:
        measured = {
            "dispatch": d, "tool_call": t, "management": m, "threads": th, "usable": u,
            "peer": p, "quiet": q, "keychain": k,
        }
        print(json.dumps(measured))
        return
    rows = _rows(d, t, m, th, u, q, k)
    rows[1:1] = _peer_rows(p)
    headers = ("path", "daemon", "floor / baseline (same run)", "budget", "met")
    table = [headers, *((p, v, f, b, "yes" if ok else "NO") for p, v, f, b, ok in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(headers))]
    for i, row in enumerate(table):
        print("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    met = sum(ok for *_, ok in rows)
    print(f"\n{met} of {len(rows)} budgets met")


if __name__ == "__main__":
    main()
