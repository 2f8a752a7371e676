"""Python trafilatura over pages listed on stdin (one `PATH<TAB>URL` a line): one JSON line
each on stdout, {"text": ..., "ms": ...}, each page decoded as UTF-8 as the benchmark does."""
import json
import sys
import time

import trafilatura

for line in sys.stdin:
    path, url = line.rstrip("\n").split("\t")
    with open(path, "rb") as f:
        html = f.read().decode("utf-8", errors="replace")
    started = time.perf_counter()
    try:
        text = trafilatura.extract(html, url=url) or ""
    except Exception:
        text = ""
    ms = (time.perf_counter() - started) * 1000.0
    print(json.dumps({"text": text, "ms": ms}), flush=True)
