"""Drive `rss mcp`'s feed resources and subscriptions with the official Python SDK (2.3):
`resources/read`, `subscriptions/listen`, `notifications/resources/updated`, against loopback
origins whose feeds the script changes through their control server.

Usage: python watch_client.py CONFIG_JSON

CONFIG_JSON names the scenario (`session`, `caps` or `fleet`), the transport (`stdio`: the
`rss` binary and its arguments; `http`: the servers' MCP URLs), the feeds and the control
URLs. The script prints `RESULT NAME {json}` for each part and `OK SCENARIO` when every
check passed; the test that runs it checks the origins' request logs.
"""

import contextlib
import json
import sys
import traceback
import time
import urllib.request

import anyio
from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError

CONFIG = json.loads(sys.argv[1])
# Long enough for a check on a loaded machine; a check is due within a second.
NOTIFIED_WITHIN = 15.0


def result(name, value):
    print("RESULT", name, json.dumps(value), flush=True)


async def get(url):
    def read():
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read().decode()

    return await anyio.to_thread.run_sync(read)


async def count(key):
    return int(await get(CONFIG["control"]["count_" + key]))


async def bump(key):
    await get(CONFIG["control"]["bump_" + key])


def client(node=0, **kw):
    if CONFIG["transport"] == "stdio":
        server = StdioServerParameters(command=CONFIG["rss"], args=CONFIG["args"])
    else:
        server = CONFIG["urls"][node]
    return Client(server, **kw)


async def quiet_for(sub, seconds):
    """The events that come within `seconds`."""
    got = []
    with anyio.move_on_after(seconds):
        async for ev in sub:
            got.append(ev)
    return got


async def next_event(sub, within=NOTIFIED_WITHIN):
    with anyio.fail_after(within):
        async for ev in sub:
            return ev
    raise AssertionError("the listen ended without an event")


async def fetch(c, url, **args):
    r = await c.call_tool("fetch_feed", {"url": url, **args})
    assert not r.is_error, r.content
    return r.structured_content


async def notify(c):
    feeds = CONFIG["feeds"]
    a, churn = feeds["a"], feeds["b"]
    r = await c.read_resource(a)
    body = json.loads(r.contents[0].text)
    assert r.contents[0].mime_type == "application/json", r.contents[0]
    assert [i["title"] for i in body["feeds"][0]["items"]] == ["item 2", "item 1"], body
    assert 0 < r.ttl_ms <= 1000, r.ttl_ms
    assert r.cache_scope == "public", r.cache_scope
    # Read with credentials (the URL's own), it is one user's.
    own = await c.read_resource(a.replace("http://", "http://me:secret@", 1))
    assert own.cache_scope == "private", own.cache_scope
    for bad in [feeds["missing"], "ftp://example.com/feed.xml"]:
        try:
            await c.read_resource(bad)
            raise AssertionError(f"{bad} was read")
        except MCPError as e:
            assert e.error.code == -32602, (bad, e.error)
    # A reader that has seen both items.
    seen = await fetch(c, a, reader="r", unseen=True)
    assert seen["total_items"] == 2, seen
    ack = await c.call_tool("ack_delivery", {"delivery_token": seen["delivery_token"]})
    assert not ack.is_error, ack.content
    async with c.listen(resource_subscriptions=[a, churn]) as sub:
        assert sub.honored.resource_subscriptions == [a, churn], sub.honored
        # 304s (a) and new bytes with the same items (b): no word.
        assert await quiet_for(sub, 2.5) == []
        # (The read, then at least one check of the listen's, came before the change.)
        assert await count("a") >= 2
        await bump("a")
        bumped = time.monotonic()
        ev = await next_event(sub)
        latency = time.monotonic() - bumped
        assert ev == ResourceUpdated(uri=a), ev
        new = await fetch(c, a, reader="r", unseen=True)
        titles = [i["title"] for i in new["feeds"][0]["items"]]
        assert titles == ["item 3"], new
        assert await quiet_for(sub, 2.5) == []
    result("notify", {"latency": latency})


async def three(clients):
    c = CONFIG["feeds"]["c"]
    async with clients[0].listen(resource_subscriptions=[c]) as s1, clients[1].listen(
        resource_subscriptions=[c]
    ) as s2, clients[2].listen(resource_subscriptions=[c]) as s3:
        await anyio.sleep(0.5)
        before = await count("c")
        await anyio.sleep(4)
        after = await count("c")
        await bump("c")
        for s in (s1, s2, s3):
            assert await next_event(s) == ResourceUpdated(uri=c)
    result("three", {"before": before, "after": after})


async def declared(c):
    feeds = CONFIG["feeds"]
    subs = [feeds["t"], feeds["s"], feeds["m"]]
    async with c.listen(resource_subscriptions=subs) as sub:
        assert await quiet_for(sub, 5) == []
    result("declared", {})


async def retry_after(c):
    async with c.listen(resource_subscriptions=[CONFIG["feeds"]["r"]]) as sub:
        assert await quiet_for(sub, 7) == []
    result("retry_after", {})


async def stop(c1, c2):
    d = CONFIG["feeds"]["d"]
    async with c2.listen(resource_subscriptions=[d]):
        async with c1.listen(resource_subscriptions=[d]):
            await anyio.sleep(2)
        one_left = await count("d")
        await anyio.sleep(2.5)
        still = await count("d")
        assert still > one_left, (one_left, still)
    await anyio.sleep(0.5)
    none_left = await count("d")
    await anyio.sleep(3)
    later = await count("d")
    assert later == none_left, (none_left, later)
    result("stop", {"one_left": one_left, "still": still, "none_left": none_left})


async def strict(c):
    async with c.listen(resource_subscriptions=CONFIG["feeds"]["strict"]) as sub:
        assert await quiet_for(sub, 9) == []
    result("strict", {})


async def session():
    http = CONFIG["transport"] == "http"
    async with contextlib.AsyncExitStack() as stack:
        c = await stack.enter_async_context(client())
        if http:
            others = [await stack.enter_async_context(client()) for _ in range(3)]
        else:
            others = [c, c, c]
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(notify, c)
                tg.start_soon(three, others)
                tg.start_soon(declared, c)
                tg.start_soon(retry_after, c)
                tg.start_soon(stop, c, others[0])
                tg.start_soon(strict, c)
        except BaseExceptionGroup as group:
            # The first failure, plainly: the group's traceback hides it.
            traceback.print_exception(group.exceptions[0])
            raise


async def caps():
    feeds = CONFIG["feeds"]
    e = [feeds[f"e{i}"] for i in range(1, 6)]
    logs = []

    async def log(params):
        logs.append(params.data)

    async with client(logging_callback=log, log_level="warning") as c, client(
        logging_callback=log, log_level="warning"
    ) as other:
        # Over stdio, another client is another server: the second listener shares the first's.
        c2 = other if CONFIG["transport"] == "http" else c
        async with c.listen(resource_subscriptions=e[:3]) as first:
            assert first.honored.resource_subscriptions == e[:2], first.honored
            async with c2.listen(resource_subscriptions=[e[2], e[3]]) as second:
                assert second.honored.resource_subscriptions == [e[2]], second.honored
                expected = [(e[2], "listener_cap"), (e[3], "server_cap")]
                # The warning follows each acknowledgement on its stream.
                with anyio.fail_after(NOTIFIED_WITHIN):
                    while len(logs) < len(expected):
                        await anyio.sleep(0.05)
                # Each listen's warning, in whichever order the two came.
                named = sorted((x["uri"], x["reason"]) for d in logs for x in d["left_out"])
                assert named == expected, logs
                try:
                    async with c.listen(resource_subscriptions=[e[4]]) as third:
                        async for _ in third:
                            pass
                    raise AssertionError("a listen past the server's cap was served")
                except Exception as err:
                    cause = err if isinstance(err, MCPError) else err.__cause__
                    assert isinstance(cause, MCPError), repr(err)
                    assert cause.error.code == -32602, cause.error
                    assert e[4] in cause.error.message and "cap" in cause.error.message, cause
                # Nothing else broke: the listens go on, and calls are answered. (The feed is
                # changed once its first check has read it: a request counted at the origin
                # was answered with what the feed was then.)
                with anyio.fail_after(NOTIFIED_WITHIN):
                    while await count("e1") < 1:
                        await anyio.sleep(0.05)
                await bump("e1")
                assert await next_event(first) == ResourceUpdated(uri=e[0])
                assert (await fetch(c, e[4]))["total_items"] == 2
            # The second listen is gone (once the server has seen it go): room for one more.
            with anyio.fail_after(NOTIFIED_WITHIN):
                while True:
                    try:
                        async with c2.listen(resource_subscriptions=[e[3]]) as again:
                            if again.honored.resource_subscriptions == [e[3]]:
                                break
                    except Exception:
                        pass
                    await anyio.sleep(0.1)
    result("caps", {"logs": logs})


async def fleet():
    # Two servers: over HTTP two nodes' URLs; over stdio two processes of one machine.
    f = CONFIG["feeds"]["f"]
    async with client(0) as c1, client(1) as c2:
        async with c1.listen(resource_subscriptions=[f]) as s1:
            await anyio.sleep(1)
            async with c2.listen(resource_subscriptions=[f]) as s2:
                await anyio.sleep(0.5)
                before = await count("f")
                await anyio.sleep(5)
                after = await count("f")
                await bump("f")
                assert await next_event(s1) == ResourceUpdated(uri=f)
                assert await next_event(s2) == ResourceUpdated(uri=f)
    result("fleet", {"before": before, "after": after})


async def main():
    scenario = CONFIG["scenario"]
    await {"session": session, "caps": caps, "fleet": fleet}[scenario]()
    print("OK", scenario, flush=True)


anyio.run(main)
