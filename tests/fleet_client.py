"""Drive a fleet of `rss mcp --http` nodes behind HAProxy with the official Python SDK (2.3),
as session-free clients of the 2026-07-28 revision (each request on its own, to any node)
and one old-style client (its session kept on one node by the balancer).

Usage: python fleet_client.py LB_URL TOKEN WALK_FEED READER_FEED STRICT_URL,STRICT_URL,...

Prints one JSON line with what the walk saw, then waits for a line on stdin (the test looks
at the nodes meanwhile), then prints one with what the delivery, the strict host's feeds
and the old-style client saw.
"""

import asyncio
import json
import logging
import sys

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# The SDK's own warnings (a session close it did not like, among them) are what this
# checks: they go to stderr, which the test reads.
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


def client(url, token, mode="2026-07-28"):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return http, Client(streamable_http_client(url, http_client=http), mode=mode)


async def call(c, tool, args):
    r = await c.call_tool(tool, args)
    return r.structured_content or {}, r.is_error


async def walk(url, token, feed):
    http, c = client(url, token)
    async with http, c:
        assert c.protocol_version == "2026-07-28", c.protocol_version
        args = {"url": feed, "limit": 100, "content_format": "none", "max_response_tokens": 700}
        pages, ids, cursor = 0, [], None
        while pages < 50:
            a = dict(args, cursor=cursor) if cursor else args
            out, failed = await call(c, "fetch_feed", a)
            assert not failed, out
            pages += 1
            for f in out.get("feeds", []):
                ids.extend(i["id"] for i in f.get("items", []))
            cursor = out.get("next_cursor")
            if not cursor:
                break
        return {"pages": pages, "ids": ids}


async def rest(url, token, reader_feed, strict):
    result = {}
    http, c = client(url, token)
    async with http, c:
        # A delivery made on one node, acknowledged on the next, seen by the third.
        first, failed = await call(c, "fetch_feed", {"url": reader_feed, "reader": "fleet", "unseen": True, "content_format": "none"})
        assert not failed, first
        token_ = first["delivery_token"]
        acked, failed = await call(c, "ack_delivery", {"delivery_token": token_})
        assert not failed, acked
        again, failed = await call(c, "fetch_feed", {"url": reader_feed, "reader": "fleet", "unseen": True, "content_format": "none"})
        assert not failed, again
        # An altered token is refused on every node.
        altered = token_[:-2] + ("AA" if not token_.endswith("AA") else "BB")
        refused, failed = await call(c, "ack_delivery", {"delivery_token": altered})
        result["delivery"] = {
            "delivered": first["total_items"],
            "acknowledged": acked["acknowledged"],
            "unseen_after": again.get("total_items", 0),
            "altered_refused": bool(failed),
        }

    # The strict host's feeds, each asked by a client of its own, all at once.
    async def one(feed):
        h, cl = client(url, token)
        async with h, cl:
            out, failed = await call(cl, "fetch_feed", {"url": feed, "content_format": "none"})
            f = (out.get("feeds") or [{}])[0]
            return f.get("status") or ("error" if failed else "?")

    result["strict"] = await asyncio.gather(*(one(f) for f in strict))

    # An old-style client: its session stays on one node, and its close is welcome.
    http, c = client(url, token, mode="legacy")
    async with http, c:
        assert c.protocol_version != "2026-07-28", c.protocol_version
        n = 0
        for _ in range(2):
            out, failed = await call(c, "fetch_feed", {"url": reader_feed, "content_format": "none"})
            n += 0 if failed else 1
        result["legacy_calls"] = n
    return result


async def main():
    url, token = sys.argv[1], sys.argv[2]
    print(json.dumps(await walk(url, token, sys.argv[3])), flush=True)
    sys.stdin.readline()
    print(json.dumps(await rest(url, token, sys.argv[4], sys.argv[5].split(","))), flush=True)


asyncio.run(main())
