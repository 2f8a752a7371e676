"""Issue 31: what a model sees, checked through the official Python MCP SDK.

Usage: python mcp_model_client.py RSS_BINARY BASE_URL

BASE_URL is a loopback server with feeds /f0 to /f3 (each item linking to a page
/page/N), /broken (an HTML page), /news.xml (a realistic news feed) and /page/N (long
article pages). Every check reads only a result's content[] text, never structuredContent,
as a client that hands a model only the text would. Prints `OK model view ...` and exits 0
when every check passes.
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def texts(result):
    return [c.text for c in result.content if getattr(c, "type", "") == "text"]


def body(result):
    """The result a model reads: the last text block, as JSON."""
    return json.loads(texts(result)[-1])


def error_of(result):
    assert result.is_error, texts(result)
    v = body(result)
    return v["errors"][0] if "errors" in v else v


async def call(session, tool, args):
    return await session.call_tool(tool, args)


async def follow(session, tool, args, first, pick, key):
    """Follows next_offset from `first` (argument `key`) to the end; the parts."""
    parts = [pick(first)["content"]]
    nxt = pick(first).get("next_offset")
    for _ in range(60):
        if nxt is None:
            break
        r = body(await call(session, tool, {**args, key: nxt}))
        parts.append(pick(r)["content"])
        nxt = pick(r).get("next_offset")
    assert nxt is None, "a text that never ends"
    return parts


async def checks(session, base):
    figures = {}
    tools = (await session.list_tools()).tools
    listing = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools])
    brief = sum(len(t.description or "") + len(json.dumps(t.input_schema)) for t in tools)
    figures["tools/list"] = len(listing)
    figures["descriptions+inputs"] = brief
    assert brief <= 10_000, brief
    for t in tools:
        assert t.input_schema.get("additionalProperties") is False, t.name

    # Five feeds, one a web page: every feed with its status on page 1, items shared.
    urls = [f"{base}/f0", f"{base}/f1", f"{base}/broken", f"{base}/f2", f"{base}/f3"]
    r = await call(session, "fetch_feed", {"urls": urls, "max_response_tokens": 3000})
    assert not r.is_error, texts(r)
    page = body(r)
    feeds = page["feeds"]
    assert [f["feed_url"] for f in feeds] == urls, feeds
    assert [f["status"] for f in feeds] == ["ok", "ok", "error", "ok", "ok"], feeds
    broken = feeds[2]["error"]
    assert broken["code"] == "FEED_PARSE_FAILED", broken
    assert "discover_feeds" in broken["message"] and "rss " not in broken["message"], broken
    assert broken["details"]["content_type"].startswith("text/html"), broken
    for i in (0, 1, 3, 4):
        assert feeds[i].get("items"), f"feed {i} has no item on page 1"
    seen = {(f["feed_url"], it["id"]) for f in feeds for it in f.get("items", [])}
    cursor, pages = page.get("next_cursor"), 1
    while cursor:
        nxt = body(await call(session, "fetch_feed", {"urls": urls, "max_response_tokens": 3000, "cursor": cursor}))
        for f in nxt["feeds"]:
            for it in f.get("items", []):
                key = (f["feed_url"], it["id"])
                assert key not in seen, f"{key} repeats"
                seen.add(key)
        cursor, pages = nxt.get("next_cursor"), pages + 1
        assert pages < 40
    assert len(seen) == 4 * 6, len(seen)
    figures["pages"] = pages

    # One body per item with an article; none never empties the article.
    r = body(await call(session, "fetch_feed", {"url": f"{base}/f0", "limit": 1, "articles": True, "content_format": "none"}))
    item = r["feeds"][0]["items"][0]
    assert "content" not in item, item
    assert "para0word0" in item["article"]["content"], item

    # Every cut continued to its end.
    r = await call(session, "fetch_article", {"url": f"{base}/page/0", "max_response_tokens": 1500})
    first = body(r)
    parts = await follow(session, "fetch_article", {"url": f"{base}/page/0", "max_response_tokens": 1500}, first, lambda v: v["articles"][0], "offset")
    whole = body(await call(session, "fetch_article", {"url": f"{base}/page/0", "max_response_tokens": 20000}))["articles"][0]["content"]
    assert "".join(parts) == whole and len(parts) >= 3, len(parts)
    item_id = body(await call(session, "fetch_feed", {"url": f"{base}/f0", "content_format": "none", "limit": 1}))["feeds"][0]["items"][0]["id"]
    args = {"feed_url": f"{base}/f0", "id": item_id, "article": True, "max_response_tokens": 1500}
    first = body(await call(session, "get_item", args))
    parts = await follow(session, "get_item", args, first, lambda v: v["item"]["article"], "article_offset")
    assert "".join(parts) == whole, "get_item's article parts"
    err = error_of(await call(session, "fetch_article", {"url": f"{base}/page/0", "offset": 10 ** 7}))
    assert err["code"] == "USAGE_ERROR" and "past the end" in err["message"], err
    figures["article parts"] = len(parts)

    # Unknown arguments refused, naming the nearest.
    err = error_of(await call(session, "fetch_feed", {"url": f"{base}/f0", "max_results": 3}))
    assert err["code"] == "USAGE_ERROR" and "`limit`" in err["message"], err

    # OR answered; a query that leaves nothing says how many items it looked at.
    r = body(await call(session, "fetch_feed", {"url": f"{base}/news.xml", "query": "budget OR library"}))
    titles = [i["title"] for i in r["feeds"][0]["items"]]
    assert len(titles) == 3 and all(re.search("budget|library", t, re.I) for t in titles), titles
    r = await call(session, "fetch_feed", {"url": f"{base}/news.xml", "query": "WeWork OR Europa"})
    assert "matched none of the 8 items it looked at" in texts(r)[0], texts(r)[0]

    # MCP words in MCP errors.
    err = error_of(await call(session, "fetch_feed", {"url": f"{base}/f0", "since": "today"}))
    assert err["message"].startswith("`since`"), err
    err = error_of(await call(session, "get_item", {"feed_url": f"{base}/f0", "id": "nope"}))
    assert err["code"] == "NOT_FOUND" and err["details"]["feed_url"] == f"{base}/f0", err
    assert "fetch_feed" in err["message"] and "rss fetch" not in err["message"], err

    # The compact view: a content_format none listing, per item.
    r = body(await call(session, "fetch_feed", {"url": f"{base}/news.xml", "content_format": "none"}))
    items = r["feeds"][0]["items"]
    per_item = sum(len(json.dumps(i, separators=(",", ":"), ensure_ascii=False)) for i in items) // len(items)
    assert per_item <= 520, per_item
    figures["chars per listed item"] = per_item

    # The cap on max_response_tokens.
    err = error_of(await call(session, "fetch_feed", {"url": f"{base}/f0", "max_response_tokens": 100000}))
    assert err["code"] == "USAGE_ERROR" and "cap of 25000" in err["message"], err
    return figures


async def over_http(binary, base, allow):
    """`rss mcp --http` on a free port: is a loopback feed refused (or served)?"""
    from mcp.client.streamable_http import streamable_http_client

    with tempfile.TemporaryDirectory() as cache:
        cmd = [binary, "mcp", "--http", "127.0.0.1:0", "--cache-dir", cache, "--state-dir", os.path.join(cache, "state")]
        if allow:
            cmd.append("--allow-private-networks")
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            url = None
            for line in proc.stderr:
                m = re.search(r"http://\S+", line)
                if m:
                    url = m.group(0)
                    break
            assert url, "the server did not say where it listens"
            async with streamable_http_client(url) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    r = await call(session, "fetch_feed", {"url": f"{base}/f0"})
                    if allow:
                        assert not r.is_error, texts(r)
                        assert body(r)["feeds"][0]["status"] == "ok"
                    else:
                        err = error_of(r)
                        assert err["code"] == "INVALID_URL", err
        finally:
            proc.terminate()
            proc.wait(timeout=10)


async def main(binary, base):
    with tempfile.TemporaryDirectory() as cache:
        params = StdioServerParameters(command=binary, args=["mcp", "--cache-dir", cache])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                figures = await checks(session, base)
    await over_http(binary, base, allow=False)
    await over_http(binary, base, allow=True)
    print("OK model view", json.dumps(figures))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
