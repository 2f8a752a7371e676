#!/usr/bin/env python3
"""Compares `rss` with feedparser on feedparser's own test corpus.

feedparser (PyPI, 6.x) is the oracle: every test feed of its source distribution is served
from one loopback HTTP server (with the `Header:` lines each file declares, as feedparser's
own test server does), read by feedparser and by `rss fetch --content html`, and every field
that maps onto our contract is compared. Prints the agreement per field, the overall
agreement over the fields where either side has a value, the items feedparser reads that
`rss` does not, and every difference (or the first N with --show).

The corpus is read from the source distribution, never copied into this repository:

    pip download --no-binary :all: --no-deps feedparser==6.0.14 -d /tmp/fp
    tar xzf /tmp/fp/feedparser-6.0.14.tar.gz -C /tmp/fp
    python3 -m venv /tmp/fpvenv && /tmp/fpvenv/bin/pip install feedparser==6.0.14
    cargo build --release
    /tmp/fpvenv/bin/python benches/feedparser_compare.py /tmp/fp/feedparser-6.0.14/tests

Where feedparser keeps a quirk that `rss` deliberately does not follow, the difference is
counted under that quirk's name (listed in QUIRKS below, each with its reason) and left out
of the agreement; the quirks' counts are printed too.
"""

import argparse
import calendar
import html
import html.parser
import http.server
import json
import os
import re
import subprocess
import sys
import threading
from collections import Counter, defaultdict
from urllib.parse import urljoin as _urljoin


def urljoin(base, ref):
    try:
        return _urljoin(base, ref)
    except ValueError:
        return ref

try:
    import feedparser
except ImportError:
    sys.exit("feedparser is not installed: see this script's docstring")

# Files that test HTTP handling (status codes, compression), not what a feed says.
SKIP_DIRS = ("http", "compression")

# feedparser's behaviours we do not follow, and why. A difference explained by one of them is
# counted under its name, not as a disagreement.
QUIRKS = {
    "summary_from_content": "feedparser copies an entry's content into `summary` when the "
    "entry has no summary; our `summary` is only what the feed gives as one (the body is in "
    "`content`), so an agent never reads the same text twice",
    "description_as_content": "after `content:encoded`, feedparser reads an RSS "
    "`<description>` as a second content; we keep it as the summary it is",
    "relative_left_relative": "feedparser leaves some relative links relative (an "
    "RSS `<link>` when the base is the document's URL); the contract's links are absolute",
    "unsafe_link_kept": "feedparser keeps a link of any scheme (`javascript:`, `data:`) in "
    "`link`/`href`; ours are http(s) or nothing (the project's rule for every link)",
    "atom_id_as_link": "feedparser makes an Atom `id` the entry's (or feed's) `link` when it "
    "has none, as if it were an RSS permalink guid; an Atom id is a name, not an address "
    "(RFC 4287 §4.2.6), so our `url` stays null",
    "id_resolved": "feedparser resolves an Atom `id` against the base and normalises it; our "
    "`guid` is what the feed says, verbatim (the contract's rule)",
    "content_location_base": "feedparser resolves relative links against the response's "
    "`Content-Location`, as RFC 2616 had it; RFC 7231 §3.1.4.2 and RFC 3986 §5.1.3 make the "
    "URL the document was retrieved from the base, as we do",
    "item_date_as_feed_date": "feedparser gives a feed the date of one of its items (an "
    "item's `dc:date` overwrites the channel's) where the channel states its own",
    "sanitizer_keeps_content": "feedparser's sanitizer keeps the text inside SVG, MathML, "
    "`<object>`, `<iframe>` and a page's `<head>` (its `<title>`), and the text of a script cut "
    "by broken markup; our renderings leave those out with their element, as a browser shows "
    "no `<head>` or `<iframe>` text (the README's allowlist)",
    "owner_as_author": "feedparser lists a podcast's `itunes:owner` among the feed's authors "
    "(its own tests expect it as the publisher); the owner manages the feed and is not its "
    "author: ours is `podcast.owner_name`",
    "dates_one_field_apart": "the same date, read by feedparser as `updated` and by us as "
    "`published` (`dc:date`, `dcterms:created` of an item: its only date is when it "
    "was published, and `published` is what orders and filters items)",
}


def headers_of(blob):
    """The `Header: Name: value` lines of a test file, as feedparser's test server reads them."""
    out = {}
    for m in re.finditer(rb"^Header:\s+([^:]+):(.+)$", blob, re.MULTILINE):
        out[m.group(1).decode().strip()] = m.group(2).decode().strip()
    return out


class Handler(http.server.BaseHTTPRequestHandler):
    root = "."

    def do_GET(self):
        path = os.path.join(self.root, self.path.lstrip("/").split("?")[0])
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except OSError:
            self.send_response(404)
            self.end_headers()
            return
        headers = headers_of(blob)
        status = int(headers.pop("Status", "200"))
        ctype = headers.pop("Content-type", None) or headers.pop("Content-Type", None)
        if ctype is None:
            ctype = "application/xml"
        self.send_response(status if status == 200 else 200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(blob)))
        for k, v in headers.items():
            if k.lower() not in ("content-length", "content-encoding", "transfer-encoding"):
                self.send_header(k, v)
        self.end_headers()
        self.wfile.write(blob)

    def log_message(self, *args):
        pass


def skipped_by_feedparser(path):
    """Whether feedparser's own suite skips this file here (its `SkipUnless:` line, such as a
    codec this Python lacks, is false): then feedparser has no answer to compare with."""
    with open(path, "rb") as f:
        m = re.search(rb"^SkipUnless:\s*(.+)$", f.read(), re.MULTILINE)
    if not m:
        return False
    try:
        return not eval(m.group(1).decode())
    except Exception:
        return True


def serve(root):
    Handler.root = root
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


class Words(html.parser.HTMLParser):
    """The words of an HTML fragment, outside `<script>` and `<style>`."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip:
            self.out.append(data)


def words(s, is_html=True):
    if not s:
        return ""
    if is_html:
        p = Words()
        p.feed(s)
        p.close()
        s = " ".join(p.out)
    return " ".join(re.findall(r"\w+", s))


def is_subsequence(short, long):
    it = iter(long)
    return all(w in it for w in short)


def plain(s):
    return " ".join((s or "").split())


def fp_text(d, key):
    """A feedparser text value as plain text: markup removed when its type is HTML."""
    v = d.get(key)
    if not v:
        return ""
    detail = d.get(key + "_detail") or {}
    if detail.get("type") in ("text/html", "application/xhtml+xml"):
        return words(v)
    return words(v, is_html=False)


def fp_date(d, key):
    # The stored value: feedparser's `updated` falls back to `published` when read by key.
    t = dict.get(d, key + "_parsed")
    if not t:
        return ""
    try:
        return "%04d-%02d-%02dT%02d:%02d:%02dZ" % tuple(
            __import__("time").gmtime(calendar.timegm(t))[:6]
        )
    except (OverflowError, ValueError):
        return ""


def fp_people(d):
    out = []
    for a in d.get("authors") or []:
        v = plain(a.get("name") or a.get("email") or "")
        if v and v not in out:
            out.append(v)
    return out


def fp_tags(d):
    out = []
    for t in d.get("tags") or []:
        v = plain(t.get("term") or t.get("label") or "")
        if v and v not in out:
            out.append(v)
    return out


def duration_seconds(s):
    if not s:
        return ""
    total = 0
    parts = str(s).strip().split(":")
    if len(parts) > 3:
        return ""
    for p in parts:
        p = p.strip().split(".")[0]
        if not p.isdigit():
            return ""
        total = total * 60 + int(p)
    return str(total)


def absolute(u):
    return u if re.match(r"(?i)^https?://", u or "") else ""


def compare_feed(fp, ours, rec):
    f = fp.feed
    rec("feed.title", fp_text(f, "title"), words(ours.get("title"), False))
    rec.link("feed.site_url", f.get("link") or "", ours.get("site_url") or "", f.get("id") if not ours.get("site_url") else None)
    # feedparser keeps a feed's `itunes:summary` as `summary`, its subtitle as `subtitle`.
    desc = fp_text(f, "subtitle") or fp_text(f, "summary")
    rec("feed.description", desc, words(ours.get("description"), False))
    rec("feed.language", plain(f.get("language")), plain(ours.get("language")))
    # The contract has one date for a feed: when it last changed, else when it was published.
    fp_updated = fp_date(f, "updated") or fp_date(f, "published")
    item_dates = {fp_date(e, k) for e in fp.entries for k in ("updated", "published")}
    if fp_updated != (ours.get("updated") or "") and ours.get("updated") and fp_updated in item_dates:
        rec.quirk("feed.updated", "item_date_as_feed_date", fp_updated, ours.get("updated"))
    else:
        rec("feed.updated", fp_updated, ours.get("updated") or "")
    owner = (ours.get("podcast") or {}).get("owner_name")
    if not ours.get("authors") and owner and fp_people(f) == [owner]:
        rec.quirk("feed.authors", "owner_as_author", fp_people(f), [])
    else:
        rec("feed.authors", fp_people(f), ours.get("authors") or [])
    rec("feed.categories", fp_tags(f), ours.get("categories") or [])
    icons = [
        x
        for x in (f.get("icon"), (f.get("image") or {}).get("href"), f.get("logo"))
        if x
    ]
    our_icon = ours.get("icon") or ""
    rec("feed.icon", icons[0] if icons and our_icon not in icons else our_icon if icons else "", our_icon)


def pair(entries, items):
    """Pairs feedparser's entries with our items (ours are ordered newest first)."""
    left = list(range(len(items)))
    pairs = []
    for e in entries:
        best = None
        for key_fp, key_ours in (("id", "guid"), ("link", "url"), ("title", "title")):
            v = e.get(key_fp)
            if not v:
                continue
            for i in left:
                if items[i].get(key_ours) == v or (
                    key_fp == "title" and plain(items[i].get("title")) == plain(v)
                ):
                    best = i
                    break
            if best is not None:
                break
        if best is None and left:
            best = left[0]
        if best is not None:
            left.remove(best)
            pairs.append((e, items[best]))
        else:
            pairs.append((e, None))
    return pairs


def compare_entry(e, it, rec):
    rec("item.title", fp_text(e, "title"), words(it.get("title"), False))
    link = e.get("link") or ""
    ours_url = it.get("url") or ""
    if link and not absolute(link) and not ours_url:
        rec.quirk("item.url", "relative_left_relative" if ":" not in link else "unsafe_link_kept", link, ours_url)
    else:
        rec.link("item.url", link, ours_url, it.get("guid"))
    fp_id, our_guid = plain(e.get("id")), plain(it.get("guid"))
    if fp_id != our_guid and our_guid and fp_id.lower() in (
        urljoin(rec.url, our_guid).lower(),
        our_guid.lower(),
        urljoin(rec.url.split("://")[0] + "://x/", our_guid).lower(),
    ):
        rec.quirk("item.guid", "id_resolved", fp_id, our_guid)
    elif fp_id != our_guid and "Content-Location" in rec.headers and fp_id.endswith(our_guid):
        rec.quirk("item.guid", "id_resolved", fp_id, our_guid)
    else:
        rec("item.guid", fp_id, our_guid)
    rec("item.authors", fp_people(e), it.get("authors") or [])
    fp_pub, fp_upd = fp_date(e, "published"), fp_date(e, "updated")
    o_pub, o_upd = it.get("published") or "", it.get("updated") or ""
    fp_created = fp_date(e, "created")
    if not fp_pub and fp_created and o_upd == fp_upd:
        # feedparser keeps `dcterms:created` apart as `created`; the contract's one date of
        # creation is `published`, so that is the field it maps onto.
        rec("item.published", fp_created, o_pub)
        rec("item.updated", fp_upd, o_upd)
    elif not fp_pub and not o_upd and o_pub and o_pub in (fp_upd, fp_created):
        rec.quirk("item.published", "dates_one_field_apart", fp_pub, o_pub)
        rec.quirk("item.updated", "dates_one_field_apart", fp_upd, o_upd)
    else:
        rec("item.published", fp_pub, o_pub)
        rec("item.updated", fp_upd, o_upd)
    contents = e.get("content") or []
    content0 = contents[0].get("value") if contents else ""
    # feedparser keeps an item's `itunes:subtitle` as `subtitle`.
    summary = fp_text(e, "summary") or fp_text(e, "subtitle")
    ours_summary = words(it.get("summary"), False)
    if contents and e.get("summary") == content0 and not ours_summary:
        rec.quirk("item.summary", "summary_from_content", summary, ours_summary)
    elif contents and e.get("summary") == content0 and len(contents) > 1:
        rec.quirk("item.summary", "description_as_content", summary, ours_summary)
        rec("item.summary", words(contents[1].get("value")), ours_summary)
    else:
        rec("item.summary", summary, ours_summary)
    if contents or not e.get("summary"):
        # A value whose type is not HTML is text, not markup (a base64 media type decoded).
        content_html = contents[0].get("type") in (None, "text/html", "application/xhtml+xml") if contents else True
        rec("item.content", words(content0, content_html), words(it.get("content")))
    else:
        is_html = (e.get("summary_detail") or {}).get("type") in (None, "text/html", "application/xhtml+xml")
        rec("item.content", words(e.get("summary"), is_html), words(it.get("content")))
    rec("item.categories", fp_tags(e), it.get("categories") or [])
    fp_enc = [x.get("href") for x in e.get("enclosures") or [] if x.get("href")]
    ours_enc = [x["url"] for x in it.get("enclosures") or []]
    media = [x.get("url") for x in e.get("media_content") or [] if x.get("url")]
    rec(
        "item.enclosures",
        sorted(set(fp_enc)),
        sorted(set(u for u in ours_enc if u in fp_enc or u not in media)),
    )
    rec("item.comments", e.get("comments") or "", it.get("comments") or "")
    rec("item.duration_seconds", duration_seconds(e.get("itunes_duration")), str(it.get("duration_seconds") or ""))


class Recorder:
    def __init__(self):
        self.compared = Counter()
        self.agreed = Counter()
        self.quirks = Counter()
        self.diffs = defaultdict(list)
        self.file = ""
        self.url = ""
        self.headers = {}
        self.hidden_markup = False

    def __call__(self, field, fp_value, ours):
        if not fp_value and not ours:
            return
        if (
            fp_value != ours
            and isinstance(fp_value, str)
            and field.split(".")[1] in ("content", "summary", "title", "description")
            and self.hidden_markup
            and is_subsequence(ours.split(), fp_value.split())
        ):
            return self.quirk(field, "sanitizer_keeps_content", fp_value, ours)
        self.compared[field] += 1
        if fp_value == ours:
            self.agreed[field] += 1
        else:
            self.diffs[field].append((self.file, fp_value, ours))

    def quirk(self, field, name, fp_value, ours):
        self.quirks[(field, name)] += 1

    def link(self, field, fp_value, ours, ours_guid):
        """A link, with the quirks that explain a difference in one."""
        if fp_value != ours and fp_value:
            if not ours and ours_guid and fp_value.lower() in (
                ours_guid.lower(),
                urljoin(self.url, ours_guid).lower(),
            ):
                return self.quirk(field, "atom_id_as_link", fp_value, ours)
            if "Content-Location" in self.headers and ours:
                return self.quirk(field, "content_location_base", fp_value, ours)
        self(field, fp_value, ours)


def run_rss(binary, urls):
    out = subprocess.run(
        [binary, "fetch", "-q", "--no-cache", "--no-host-state", "--content", "html", "--dedupe", "off"]
        + urls,
        capture_output=True,
    )
    doc = json.loads(out.stdout)
    warnings_of = defaultdict(list)
    for w in doc["warnings"]:
        warnings_of[w["feed_url"]].append(w)
    return doc["feeds"], warnings_of


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tests", help="feedparser's tests/ directory (from its sdist)")
    ap.add_argument("--rss", default="target/release/rss", help="the rss binary")
    ap.add_argument("--show", type=int, default=10_000, help="differences to print per field")
    ap.add_argument("--only", help="only files whose path contains this")
    args = ap.parse_args()

    files = []
    for d, _, names in os.walk(args.tests):
        rel = os.path.relpath(d, args.tests)
        if rel.split(os.sep)[0] in SKIP_DIRS:
            continue
        for n in names:
            if n.endswith((".xml", ".rdf", ".atom", ".rss")):
                p = os.path.relpath(os.path.join(d, n), args.tests)
                if (not args.only or args.only in p) and not skipped_by_feedparser(
                    os.path.join(args.tests, p)
                ):
                    files.append(p)
    files.sort()
    srv = serve(args.tests)
    port = srv.server_address[1]
    rec = Recorder()
    dropped = []
    fp_entries_total = 0
    empty_reported = 0
    ours_failed = []
    batch = 100
    for start in range(0, len(files), batch):
        chunk = files[start : start + batch]
        urls = ["http://127.0.0.1:%d/%s" % (port, p) for p in chunk]
        ours_feeds, warnings_of = run_rss(args.rss, urls)
        for path, url, ours in zip(chunk, urls, ours_feeds):
            rec.file = path
            rec.url = url
            with open(os.path.join(args.tests, path), "rb") as fh:
                raw = fh.read()
                rec.headers = headers_of(raw)
                rec.hidden_markup = bool(
                    re.search(
                        r"<(svg|math|object|applet|iframe|head)\b",
                        html.unescape(raw.decode("utf-8", "replace")),
                        re.I,
                    )
                )
            fp = feedparser.parse(url)
            fp_entries_total += len(fp.entries)
            if ours.get("status") == "error":
                ours_failed.append((path, ours["error"]["code"], ours["error"]["message"], len(fp.entries)))
                if fp.entries:
                    dropped.append((path, len(fp.entries), 0))
                ours = {}
            compare_feed(fp, ours, rec)
            items = ours.get("items") or []
            # Item elements with nothing in them are left out with a warning that counts them.
            empty = 0
            for w in warnings_of.get(url, []):
                m = re.match(r"(\d+) empty item element", w["message"])
                if w["code"] == "ELEMENT_SKIPPED" and m:
                    empty += int(m.group(1))
            empty_reported += min(empty, max(len(fp.entries) - len(items), 0))
            if len(items) + empty < len(fp.entries):
                if ours:
                    dropped.append((path, len(fp.entries), len(items)))
            for e, it in pair(fp.entries, items):
                if it is not None:
                    compare_entry(e, it, rec)
    srv.shutdown()

    print("feedparser %s corpus: %d files, %d entries" % (feedparser.__version__, len(files), fp_entries_total))
    print("%-26s %9s %9s %8s" % ("field", "compared", "agree", "%"))
    for field in sorted(rec.compared):
        c, a = rec.compared[field], rec.agreed[field]
        print("%-26s %9d %9d %7.1f%%" % (field, c, a, 100.0 * a / c))
    total_c, total_a = sum(rec.compared.values()), sum(rec.agreed.values())
    print("%-26s %9d %9d %7.1f%%" % ("ALL (either non-empty)", total_c, total_a, 100.0 * total_a / max(total_c, 1)))
    print("items feedparser reads that rss does not: %d (in %d files)" % (sum(f - o for _, f, o in dropped), len(dropped)))
    for p, f, o in dropped:
        print("  dropped: %s feedparser %d, rss %d" % (p, f, o))
    print("entries with nothing in them, left out by rss with an ELEMENT_SKIPPED warning that counts them: %d" % empty_reported)
    print("files rss refused: %d" % len(ours_failed))
    for p, code, msg, n in ours_failed:
        print("  refused: %s %s (%s) feedparser entries %d" % (p, code, msg[:100], n))
    if rec.quirks:
        print("feedparser quirks not followed (left out of the agreement):")
        for (field, name), n in sorted(rec.quirks.items()):
            print("  %-22s %-24s %d" % (field, name, n))
    print("differences:")
    for field in sorted(rec.diffs):
        for path, fpv, ov in rec.diffs[field][: args.show]:
            print("  %s %s\n      feedparser: %r\n      rss:        %r" % (field, path, fpv, ov))


if __name__ == "__main__":
    main()
