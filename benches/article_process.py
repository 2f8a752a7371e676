#!/usr/bin/env python3
"""`rss article --content text` as a whole process (start-up, loopback fetch, extraction,
rendering, JSON) on every page of the shared article corpus, and on three pages with no
article (a line of text, a list of links, a login wall): median, p95 and max per page.

Usage: benches/article_process.py [RSS_BIN] [RUNS]  (default target/release/rss, 1 run a page;
a page's figure is the median of its runs). The corpus is $RSS_CORPORA/article-benchmark/html,
else the first shared/corpora beside an ancestor of this file. Every server is on loopback.
"""
import http.server, threading, subprocess, time, os, sys, statistics, tempfile, pathlib


def corpus():
    if os.environ.get("RSS_CORPORA"):
        return os.path.join(os.environ["RSS_CORPORA"], "article-benchmark", "html")
    for up in pathlib.Path(__file__).resolve().parents:
        c = up / "shared" / "corpora" / "article-benchmark" / "html"
        if c.is_dir():
            return str(c)
    sys.exit("no corpus: set RSS_CORPORA")


d = corpus()
extra=tempfile.mkdtemp()
open(f'{extra}/line.html','w').write('<html><head><title>x</title></head><body><p>Just one line of text.</p></body></html>')
open(f'{extra}/links.html','w').write('<html><body><ul>'+''.join(f'<li><a href="/p{i}">Link {i}</a></li>' for i in range(60))+'</ul></body></html>')
open(f'{extra}/login.html','w').write('<html><body><form><input name=u><input type=password name=p><button>Sign in</button></form><p>Please log in to continue.</p></body></html>')
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self,*a): pass
    def translate_path(self, path):
        name=path.lstrip('/')
        return os.path.join(extra if name in ('line.html','links.html','login.html') else d, name)
srv=http.server.ThreadingHTTPServer(('127.0.0.1',0),H)
threading.Thread(target=srv.serve_forever,daemon=True).start()
port=srv.server_address[1]
bin=sys.argv[1] if len(sys.argv)>1 else 'target/release/rss'; runs=int(sys.argv[2]) if len(sys.argv)>2 else 1
cache=tempfile.mkdtemp()
def t(name):
    best=[]
    for _ in range(runs):
        s=time.perf_counter()
        r=subprocess.run([bin,'article','--content','text','--no-cache','--cache-dir',cache,f'http://127.0.0.1:{port}/{name}'],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)
        best.append((time.perf_counter()-s)*1000)
    return statistics.median(best)
pages=sorted(p for p in os.listdir(d) if p.endswith('.html'))
t(pages[0])
ts=sorted(t(p) for p in pages)
print(f'pages {len(ts)}: median {statistics.median(ts):.1f} ms, p95 {ts[int(0.95*len(ts))-1]:.1f} ms, max {ts[-1]:.1f}')
for n in ('line.html','links.html','login.html'):
    print(n, f'{t(n):.1f} ms')
print('load', open('/proc/loadavg').read().split()[:3])
