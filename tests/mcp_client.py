"""Drive `rss mcp` with the official Python MCP SDK: initialize, list tools, call fetch_feed
and fetch_article.

Usage: python mcp_client.py RSS_BINARY FEED_URL ARTICLE_URL          (stdio: spawns `rss mcp`)
       python mcp_client.py --http MCP_URL TOKEN FEED_URL ARTICLE_URL  (streamable HTTP)
The tools the server must list, in order, are in RSS_TEST_TOOLS (comma-separated), as the
server's own code names them. Prints `OK fetch_feed ...` and exits 0 when every check passes.
"""

import asyncio
import json
import os
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(binary: str, feed_url: str, article_url: str) -> None:
    with tempfile.TemporaryDirectory() as cache:
        params = StdioServerParameters(command=binary, args=["mcp", "--cache-dir", cache])
        async with stdio_client(params) as (read, write):
            await check(read, write, feed_url, article_url)


async def main_http(url: str, token: str, feed_url: str, article_url: str) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with create_mcp_http_client(headers=headers) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            await check(read, write, feed_url, article_url)


async def check(read, write, feed_url: str, article_url: str) -> None:
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "rss", init.server_info
        assert "RATE_LIMITED" in (init.instructions or "")

        tools = await session.list_tools()
        names = [t.name for t in tools.tools]
        assert names == os.environ["RSS_TEST_TOOLS"].split(","), names
        fetch = next(t for t in tools.tools if t.name == "fetch_feed")
        assert fetch.output_schema and fetch.output_schema.get("type") == "object"
        assert fetch.annotations and fetch.annotations.read_only_hint is True

        # The SDK validates structured content against the tool's output schema.
        result = await session.call_tool("fetch_feed", {"url": feed_url, "limit": "2"})
        assert not result.is_error, result.content
        data = result.structured_content
        assert data["schema_version"] == "1"
        feed = data["feeds"][0]
        assert feed["status"] == "ok", feed
        assert feed["title"] == "Example Engineering Blog"
        assert feed["item_count"] == 2
        assert feed["items"][0]["title"] == "Shipping the new parser & more"
        summary = result.content[0].text
        assert len(summary) < 200 and "1 feed" in summary, summary
        # The result's JSON is in the text too, for clients that show only content[].
        assert json.loads(result.content[-1].text) == data

        bad = await session.call_tool("fetch_feed", {"url": "ftp://nowhere/feed"})
        assert bad.is_error
        err = json.loads(bad.content[-1].text)["errors"][0]
        assert err["code"] == "INVALID_URL", err

        # An article, cut to a small budget, then its next part from the cache.
        first = await session.call_tool(
            "fetch_article", {"url": article_url, "max_response_tokens": "600", "content_format": "text"}
        )
        assert not first.is_error, first.content
        art = first.structured_content["articles"][0]
        assert art["status"] == "ok", art
        assert art["title"] == "The lighthouse keepers of Skerry Point", art
        assert art["content_truncated"] and art["next_offset"], art
        rest = await session.call_tool(
            "fetch_article",
            {"url": article_url, "offset": art["next_offset"], "content_format": "text"},
        )
        assert not rest.is_error, rest.content
        nxt = rest.structured_content["articles"][0]
        assert nxt["from_cache"] is True, nxt
        assert nxt["content"] and nxt["content"] not in art["content"], nxt
        print("OK fetch_feed", feed["item_count"], "items; fetch_article in", 2, "parts")


if __name__ == "__main__":
    if sys.argv[1] == "--http":
        asyncio.run(main_http(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]))
    else:
        asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
