"""``mcpTool/search`` in process (SPEC §8): ``ToolIndex.search`` over 32 servers x 128 tools, <= 0.5 ms median.

This is the uncached ranking; the daemon also keeps answers per catalog generation (``bench.management`` measures
the round trip).

Run from the repo root: ``.venv/bin/python -m bench.search [--iterations N] [--json]``
(``.venv/bin/python bench/search.py`` works too).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp_runtime.catalog.search import ToolIndex
from mcp_runtime.catalog.views import build_views
from mcp_runtime.config.rules import parse_server_config
from protocol.status import McpTool
from protocol.tool import ToolView

BUDGET_MS = 0.5
SERVERS = (
    "github", "gitlab", "slack", "jira", "linear", "notion", "postgres", "filesystem",
    "docs", "browser", "calendar", "gmail", "drive", "sentry", "datadog", "stripe",
    "figma", "confluence", "zendesk", "hubspot", "salesforce", "airtable", "asana", "trello",
    "kubernetes", "aws-s3", "cloudflare", "vercel", "docker", "redis", "mongo_db", "search-web",
)  # fmt: skip
VERBS = (
    "create", "list", "get", "update", "delete", "search", "archive", "export",
    "import", "sync", "close", "assign", "comment", "query", "upload", "download",
)  # fmt: skip
NOUNS = (
    "issue", "pullRequest", "comment", "file", "message", "channel", "ticket", "page",
    "record", "table", "event", "invoice", "deployment", "bucket", "document", "user",
)  # fmt: skip
TEMPLATES = (
    "{Verb} a {noun} in {server}. Returns the {noun} as JSON with its id and URL.",
    "{Verb} {noun}s that match the given filters; supports pagination with a cursor.",
    "Use this to {verb} the {noun} identified by id. Requires write access to the {server} workspace.",
    "{Verb} one or more {noun}s and report what changed, including timestamps and the author.",
)
TAGS = ("read", "write", "admin", "bulk", "realtime", "billing", "devops", "collaboration")
QUERIES = (
    "create issue",
    "+github comment",
    "search files",
    "list pull requests",
    "listPullRequests",
    "send message to slack channel",
    "database query table",
    "+postgres +query",
    "upload document to drive",
    "deploy kubernetes deployment",
    "invoice billing",
    "the",
    "mcp__jira__get_ticket",
    "calendar event invite",
    "sync",
    "select:mcp__github__create_issue,mcp__slack__comment_message,mcp__nope__missing",
)


def _words(name: str) -> str:
    return "".join(" " + c.lower() if c.isupper() else c for c in name)


def synthetic_tools(rng: random.Random) -> list[tuple[str, list[McpTool]]]:
    """32 servers x 128 tools with names, titles, descriptions and tags like real MCP servers have."""
    catalog: list[tuple[str, list[McpTool]]] = []
    for server in SERVERS:
        tools: list[McpTool] = []
        for i, (verb, noun) in enumerate((v, n) for v in VERBS for n in NOUNS[:8]):
            noun = NOUNS[(i + len(server)) % len(NOUNS)] if i % 3 == 0 else noun
            name = f"{verb}_{noun}" + (f"_{i}" if any(t.name.startswith(f"{verb}_{noun}") for t in tools) else "")
            words = _words(noun)
            description = rng.choice(TEMPLATES).format(Verb=verb.capitalize(), verb=verb, noun=words, server=server)
            meta: dict[str, Any] = {"tags": rng.sample(TAGS, 2)} if i % 4 == 0 else {}
            raw: dict[str, Any] = {
                "name": name,
                "title": f"{verb.capitalize()} {words}",
                "description": description,
                "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
            }
            if meta:
                raw["_meta"] = meta
            tools.append(McpTool.model_validate(raw))
        catalog.append((server, tools))
    return catalog


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


def _timed_searches(index: ToolIndex, iterations: int, visible: set[str] | None) -> list[float]:
    for query in QUERIES:  # warm-up (regex and allocator caches), not measured
        index.search(query, 10, visible=visible)
    samples: list[float] = []
    for i in range(iterations):
        query = QUERIES[i % len(QUERIES)]
        started = time.perf_counter_ns()
        index.search(query, 10, visible=visible)
        samples.append((time.perf_counter_ns() - started) / 1e6)
    samples.sort()
    return samples


def run(iterations: int) -> dict[str, Any]:
    config = parse_server_config("bench", {"command": "true"})
    catalog = synthetic_tools(random.Random(0))
    started = time.perf_counter()
    views: list[ToolView] = [view for server, tools in catalog for view in build_views(server, config, tools)]
    build_views_ms = _ms(started)
    started = time.perf_counter()
    index = ToolIndex(views)
    index_ms = _ms(started)

    samples = _timed_searches(index, iterations, None)
    # A context that sees 30 of the 32 servers, searched through the shared index.
    context = {v.name for v in views if v.server not in SERVERS[:2]}
    context_samples = _timed_searches(index, iterations, context)
    median = statistics.median(samples)
    context_median = statistics.median(context_samples)
    return {
        "benchmark": "mcpTool/search",
        "tools": len(index),
        "queries": len(QUERIES),
        "iterations": iterations,
        "buildViewsMs": build_views_ms,
        "indexBuildMs": index_ms,
        "medianMs": round(median, 4),
        "p95Ms": round(samples[int(0.95 * (len(samples) - 1))], 4),
        "maxMs": round(samples[-1], 4),
        "contextMedianMs": round(context_median, 4),
        "contextP95Ms": round(context_samples[int(0.95 * (len(context_samples) - 1))], 4),
        "budgetMs": BUDGET_MS,
        "withinBudget": max(median, context_median) <= BUDGET_MS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=4000)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.iterations < 1000:
        parser.error("--iterations must be at least 1000")
    result = run(args.iterations)
    if args.json:
        print(json.dumps(result))
    else:
        verdict = "meets" if result["withinBudget"] else "MISSES"
        print(
            f"mcpTool/search over {result['tools']} tools, {result['iterations']} searches "
            f"({result['queries']} queries): median {result['medianMs']:.3f} ms, p95 {result['p95Ms']:.3f} ms, "
            f"max {result['maxMs']:.3f} ms; narrowed to a context: median {result['contextMedianMs']:.3f} ms, "
            f"p95 {result['contextP95Ms']:.3f} ms; build: views {result['buildViewsMs']:.1f} ms, index "
            f"{result['indexBuildMs']:.1f} ms -> {verdict} the "
            f"{BUDGET_MS} ms median budget"
        )
    return 0 if result["withinBudget"] else 1


if __name__ == "__main__":
    sys.exit(main())
