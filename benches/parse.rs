//! Parse + render benchmark: a 10,000-item, ~34 MB RSS 2.0 feed with ~3 KB HTML bodies,
//! through the whole per-feed pipeline of `rss fetch` (parse, ids, select, markdown, JSON),
//! beside a bare feed-rs parse of the same bytes. Prints figures; asserts nothing.
//!
//! Run: `cargo bench --bench parse`

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use rss::{ContentFormat, RenderOptions, Selection};

struct Counting;

/// Bytes allocated less bytes freed since counting began (frees of what was allocated
/// before count against it).
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
/// Whether allocations are counted: only while a peak is measured (two threads adding to
/// one counter on every allocation would slow a parallel parse's timing by the counter's
/// contention, not its own work).
static COUNTING: AtomicBool = AtomicBool::new(false);

// SAFETY: forwards to the system allocator and only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            let size = layout.size() as isize;
            let now = CURRENT.fetch_add(size, Ordering::Relaxed) + size;
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        if COUNTING.load(Ordering::Relaxed) {
            CURRENT.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            let grown = new_size as isize - layout.size() as isize;
            let now = CURRENT.fetch_add(grown, Ordering::Relaxed) + grown;
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const PARAGRAPHS: [&str; 6] = [
    "<p>Rate limiting is how a host tells a client to slow down. A polite client listens: it keeps one request in flight per host, waits out the <code>Retry-After</code> it was given, and never turns a refusal into a burst of retries.</p>\n",
    "<p>We measured the effect on <a href=\"/blog/pacing\">our own crawler</a> and found that <strong>fewer</strong> requests got <em>more</em> feeds through: refusals fell from 31% to 0.4%, and the median feed arrived 2.3&nbsp;s sooner.</p>\n",
    "<ul><li>One permit per host</li><li>Cooldowns learned from <code>429</code> and <code>403</code></li><li>Spacing while the host is warm</li></ul>\n",
    "<blockquote><p>Be conservative in what you send, liberal in what you accept.</p></blockquote>\n",
    "<p><img src=\"/images/chart-1.png\" alt=\"Requests per second, before and after\" width=\"640\" height=\"360\"></p>\n",
    "<pre><code>let permit = gate.acquire(&amp;host, deadline).await?;\nlet resp = client.get(url).send().await?;\npermit.record(outcome_of(&amp;resp));</code></pre>\n",
];

fn article(i: usize) -> String {
    let mut s = format!("<h2>Part {i}: notes from the field</h2>\n");
    let mut k = i;
    while s.len() < 3000 {
        s.push_str(PARAGRAPHS[k % PARAGRAPHS.len()]);
        k += 1;
    }
    s
}

fn feed(n: usize) -> Vec<u8> {
    let mut x = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\" xmlns:content=\"http://purl.org/rss/1.0/modules/content/\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><channel><title>Bench</title><link>https://bench.example.com/</link><description>A large feed</description>\n",
    );
    for i in 0..n {
        let date = httpdate::fmt_http_date(
            std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + i as u64 * 97),
        );
        x.push_str(&format!(
            "<item><title>Post number {i} &amp; friends</title><link>https://bench.example.com/posts/{i}</link><guid isPermaLink=\"true\">https://bench.example.com/posts/{i}</guid><pubDate>{date}</pubDate><dc:creator>Author {}</dc:creator><category>cat{}</category><description>A teaser for post {i}, short and plain.</description><content:encoded><![CDATA[{}]]></content:encoded></item>\n",
            i % 17,
            i % 5,
            article(i)
        ));
    }
    x.push_str("</channel></rss>\n");
    x.into_bytes()
}

struct Counter(usize);
impl Write for Counter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len();
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn pipeline(body: Vec<u8>, format: ContentFormat) -> (usize, usize) {
    let p = rss::internals::process(
        "https://bench.example.com/feed.xml",
        body.into(),
        Some("application/rss+xml"),
        url::Url::parse("https://bench.example.com/feed.xml")
            .ok()
            .as_ref(),
        &Selection::default(),
        &RenderOptions {
            format,
            max_content_chars: None,
        },
    )
    .expect("the bench feed parses");
    let items = p.built.items.len();
    let mut out = std::io::BufWriter::new(Counter(0));
    serde_json::to_writer(&mut out, &p.built.items).expect("serializes");
    out.flush().unwrap();
    let bytes = out.get_ref().0;
    (items, bytes)
}

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed());
        last = Some(r);
    }
    (best, last.unwrap())
}

/// The renderer alone on one thread: every item's body as markdown, as the pipeline
/// renders it (absolute links against the item's base). Returns the best wall time and the
/// bytes of markdown written. `PARSE_BENCH_RENDER_ONLY=N` renders only N bodies, once (for
/// instruction counts under valgrind), and skips the rest of the benchmark.
fn render_alone() -> (Duration, usize, usize) {
    let only: Option<usize> = std::env::var("PARSE_BENCH_RENDER_ONLY")
        .ok()
        .and_then(|n| n.parse().ok());
    let bodies: Vec<String> = (0..only.unwrap_or(10_000)).map(article).collect();
    let html_bytes = bodies.iter().map(String::len).sum();
    let base = url::Url::parse("https://bench.example.com/posts/1").unwrap();
    let (d, md) = best_of(if only.is_some() { 1 } else { 5 }, || {
        bodies
            .iter()
            .map(|b| {
                rss::internals::html_to_markdown(b, Some(&base))
                    .expect("renders")
                    .len()
            })
            .sum::<usize>()
    });
    (d, html_bytes, md)
}

fn main() {
    // `PARSE_BENCH_PARSE_ONLY=N`: only N parses of the feed, all items held (for a profiler);
    // `=0`: only parsing side by side with the anchor.
    if let Some(n) = std::env::var("PARSE_BENCH_PARSE_ONLY")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
    {
        let body = feed(10_000);
        if n == 0 {
            // `=0`: the side-by-side with the anchor alone.
            parsing_side_by_side(&body, Duration::ZERO);
        }
        for _ in 0..n {
            rss::internals::parse_kept(body.clone(), Some("application/rss+xml")).expect("parses");
        }
        return;
    }
    let (render, html_bytes, md_bytes) = render_alone();
    println!(
        "markdown renderer alone, one thread: {:.0} ms for {:.1} MB of HTML ({:.0} MB/s), {:.1} MB of markdown",
        render.as_secs_f64() * 1e3,
        html_bytes as f64 / 1e6,
        html_bytes as f64 / 1e6 / render.as_secs_f64(),
        md_bytes as f64 / 1e6
    );
    if std::env::var_os("PARSE_BENCH_RENDER_ONLY").is_some() {
        return;
    }
    let body = feed(10_000);
    let mb = body.len() as f64 / 1e6;
    println!(
        "feed: 10000 items, {:.1} MB, {} cores",
        mb,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    let (bare, entries) = best_of(3, || {
        feed_rs::parser::parse(body.as_slice())
            .expect("feed-rs parses")
            .entries
            .len()
    });
    assert_eq!(entries, 10_000);

    parsing_side_by_side(&body, bare);

    let (ours, (items, json_bytes)) =
        best_of(3, || pipeline(body.clone(), ContentFormat::Markdown));
    assert_eq!(items, 10_000);
    // Where the time goes: the parse alone, the pipeline without rendering (content none),
    // and the JSON of the items alone.
    let (parse_only, n) = best_of(3, || {
        rss::internals::parse_only(body.clone(), Some("application/rss+xml")).expect("parses")
    });
    assert_eq!(n, 10_000);
    let (no_render, _) = best_of(3, || pipeline(body.clone(), ContentFormat::None));
    let rendered = rss::internals::process(
        "https://bench.example.com/feed.xml",
        body.clone().into(),
        Some("application/rss+xml"),
        None,
        &Selection::default(),
        &RenderOptions {
            format: ContentFormat::Markdown,
            max_content_chars: None,
        },
    )
    .expect("parses");
    let (serialise, _) = best_of(3, || {
        let mut out = std::io::BufWriter::new(Counter(0));
        serde_json::to_writer(&mut out, &rendered.built.items).expect("serializes");
        out.flush().unwrap();
    });
    drop(rendered);

    // The input counts: the pipeline is handed the body and holds it while it starts.
    let input = body.clone();
    let (peak, _) = peak_of(|| pipeline(input, ContentFormat::Markdown));
    let peak = peak + body.len();

    let rate = |d: Duration| (mb / d.as_secs_f64(), 10_000.0 / d.as_secs_f64());
    let (b_mbs, b_ips) = rate(bare);
    let (o_mbs, o_ips) = rate(ours);
    println!(
        "{:<38} {:>9} {:>9} {:>11}",
        "", "wall ms", "MB/s", "items/s"
    );
    println!(
        "{:<38} {:>9.0} {:>9.1} {:>11.0}",
        "feed-rs 3 bare parse (baseline)",
        bare.as_secs_f64() * 1e3,
        b_mbs,
        b_ips
    );
    println!(
        "{:<38} {:>9.0} {:>9.1} {:>11.0}",
        "rss pipeline (parse+markdown+JSON)",
        ours.as_secs_f64() * 1e3,
        o_mbs,
        o_ips
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "profile (wall, 2 threads render while one parses): parse alone {:.0} ms; pipeline with --content none {:.0} ms; with markdown {:.0} ms (markdown adds {:.0} ms); JSON of the items alone {:.0} ms",
        ms(parse_only),
        ms(no_render),
        ms(ours),
        ms(ours.saturating_sub(no_render)),
        ms(serialise)
    );
    println!(
        "pipeline / bare parse: {:.2}x (target <= 3x)",
        ours.as_secs_f64() / bare.as_secs_f64()
    );
    println!(
        "peak heap during the pipeline: {:.1} MB = {:.2}x the body (target <= 3x); JSON out {:.1} MB",
        peak as f64 / 1e6,
        peak as f64 / body.len() as f64,
        json_bytes as f64 / 1e6
    );
    let (html, _) = best_of(3, || pipeline(body.clone(), ContentFormat::Html));
    println!(
        "sanitized html (ammonia) instead of markdown: {:.0} ms, {:.0} us per ~3 KB body on {} threads",
        html.as_secs_f64() * 1e3,
        html.as_secs_f64() * 1e6 / 10_000.0
            * std::thread::available_parallelism().map_or(1, |n| n.get()) as f64,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    end_to_end(&body);
}

/// The peak heap, above what was allocated before, while `f` runs.
fn peak_of<T>(f: impl FnOnce() -> T) -> (usize, T) {
    CURRENT.store(0, Ordering::SeqCst);
    PEAK.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    let r = f();
    COUNTING.store(false, Ordering::SeqCst);
    (PEAK.load(Ordering::SeqCst).max(0) as usize, r)
}

/// Parsing alone, side by side with the anchor (a bare feed-rs parse of the same bytes):
/// wall time (best of 5) and peak heap, each parser holding every item it read when it
/// returns, as a feed library hands them back. The time is taken when the parsed feed is
/// in hand, and again once it has been freed (the caller's work, timed apart). The body is
/// allocated before either is measured.
fn parsing_side_by_side(body: &[u8], _bare: Duration) {
    let (mut anchor, mut anchor_freed) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        let t = Instant::now();
        let feed = feed_rs::parser::parse(body).expect("feed-rs parses");
        anchor = anchor.min(t.elapsed());
        assert_eq!(feed.entries.len(), 10_000);
        drop(feed);
        anchor_freed = anchor_freed.min(t.elapsed());
    }
    // The copy handed to rss is made before its clock starts (feed-rs reads a borrowed
    // slice).
    let (mut ours, mut ours_freed) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        let input = body.to_vec();
        let t = Instant::now();
        let feed = rss::internals::parse_kept(input, Some("application/rss+xml")).expect("parses");
        ours = ours.min(t.elapsed());
        assert_eq!(feed.items(), 10_000);
        drop(feed);
        ours_freed = ours_freed.min(t.elapsed());
    }
    // The same parse with each item dropped once read (how `rss fetch` streams them).
    let mut streamed = Duration::MAX;
    for _ in 0..5 {
        let input = body.to_vec();
        let t = Instant::now();
        let n = rss::internals::parse_only(input, Some("application/rss+xml")).expect("parses");
        streamed = streamed.min(t.elapsed());
        assert_eq!(n, 10_000);
    }
    // The floor under any parser built on quick-xml's reader: its tokenizer alone over the
    // same bytes (events read and dropped), and with every text kept as an owned string (what
    // a parser that hands back whole items must at least allocate).
    let (tokenizer, _) = best_of(5, || tokenize(body, false));
    let (texts_kept, _) = best_of(5, || tokenize(body, true));
    let (anchor_peak, _) = peak_of(|| feed_rs::parser::parse(body).map(|f| f.entries.len()));
    let input = body.to_vec();
    let (ours_peak, _) = peak_of(move || {
        rss::internals::parse_kept(input, Some("application/rss+xml")).map(|f| f.items())
    });
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "parsing alone, all items held ({} MB): feed-rs 3 (the anchor) {:.0} ms ({:.0} ms with freeing them), peak heap {:.1} MB; rss {:.0} ms ({:.0} ms with freeing them), peak heap {:.1} MB (its input, moved in, not counted)",
        body.len() / 1_000_000,
        ms(anchor),
        ms(anchor_freed),
        anchor_peak as f64 / 1e6,
        ms(ours),
        ms(ours_freed),
        ours_peak as f64 / 1e6
    );
    println!(
        "parsing alone: rss / anchor wall {:.2}x (target <= 0.30x), {:.2}x counting the freeing; peak heap {:.2}x (target <= 0.60x); on {} threads",
        ours.as_secs_f64() / anchor.as_secs_f64(),
        ours_freed.as_secs_f64() / anchor_freed.as_secs_f64(),
        ours_peak as f64 / anchor_peak.max(1) as f64,
        rayon::current_num_threads()
    );
    println!(
        "parsing alone, each item dropped once read: rss {:.0} ms = {:.2}x the anchor",
        ms(streamed),
        streamed.as_secs_f64() / anchor.as_secs_f64()
    );
    println!(
        "the floor: quick-xml's tokenizer alone {:.0} ms = {:.2}x the anchor; with every text kept as an owned string {:.0} ms = {:.2}x",
        ms(tokenizer),
        tokenizer.as_secs_f64() / anchor.as_secs_f64(),
        ms(texts_kept),
        texts_kept.as_secs_f64() / anchor.as_secs_f64()
    );
}

/// quick-xml's reader over `body` as `rss` drives it (a buffered reader, text decoded):
/// how many events; with `keep`, every text and CDATA section is also kept as a `String`
/// until the end.
fn tokenize(body: &[u8], keep: bool) -> usize {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(body);
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut kept: Vec<String> = Vec::new();
    let mut events = 0usize;
    loop {
        buf.clear();
        let text = match reader.read_event_into(&mut buf) {
            Ok(Event::Text(t)) => t.xml10_content().into_owned(),
            Ok(Event::CData(t)) => t.xml10_content().into_owned(),
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => String::new(),
        };
        events += 1;
        if keep && !text.is_empty() {
            kept.push(text);
        }
    }
    events + kept.len()
}

/// Serves `body` to every request on a loopback port, from a thread; stops after `n`
/// requests.
fn serve(body: Vec<u8>, n: usize) -> String {
    use std::io::{BufRead, BufReader};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(n) {
            let Ok(mut s) = stream else { continue };
            let mut reader = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
        }
    });
    format!("http://{addr}/feed.xml")
}

/// Runs of the binary per input (the machine is shared: the best run is the figure).
const RUNS: usize = 7;

/// The real binary on the same feed from a file, output discarded: wall time, and peak
/// resident memory when /usr/bin/time is there to measure it.
fn end_to_end(body: &[u8]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big.xml");
    std::fs::write(&path, body).expect("write the feed");
    let url = serve(body.to_vec(), RUNS);
    for (what, input) in [
        ("FILE", path.to_str().unwrap()),
        ("URL over loopback", url.as_str()),
    ] {
        run_binary(what, input, body.len());
    }
}

/// One run of the binary on `input` (a file or a URL), output discarded: wall time, and peak
/// resident memory when /usr/bin/time is there to measure it.
fn run_binary(what: &str, input: &str, body_len: usize) {
    let bin = env!("CARGO_BIN_EXE_rss");
    // The feed is larger than the default 20 MiB cap.
    let args = [
        "fetch",
        "--no-cache",
        "-q",
        "--max-body-bytes",
        "100000000",
        input,
    ];
    let timed = std::path::Path::new("/usr/bin/time").exists();
    let mut walls = Vec::with_capacity(RUNS);
    let mut peak_kb: Option<f64> = None;
    let mut json_bytes = 0;
    for _ in 0..RUNS {
        let started = Instant::now();
        let out = if timed {
            std::process::Command::new("/usr/bin/time")
                .args(["-f", "%M"])
                .arg(bin)
                .args(args)
                .output()
        } else {
            std::process::Command::new(bin).args(args).output()
        }
        .expect("run rss");
        walls.push(started.elapsed());
        json_bytes = out.stdout.len();
        let kb: Option<f64> = timed
            .then(|| {
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .and_then(|l| l.trim().parse().ok())
            })
            .flatten();
        if let Some(kb) = kb {
            peak_kb = Some(peak_kb.map_or(kb, |p| p.max(kb)));
        }
    }
    walls.sort();
    print!(
        "end to end `rss fetch {what} > /dev/null`, {RUNS} runs: best {:.0} ms, median {:.0} ms, {:.1} MB of JSON",
        walls[0].as_secs_f64() * 1e3,
        walls[RUNS / 2].as_secs_f64() * 1e3,
        json_bytes as f64 / 1e6
    );
    match peak_kb {
        Some(kb) => println!(
            ", peak RSS {:.1} MB = {:.1} MiB = {:.2}x the body",
            kb / 1e3,
            kb / 1024.0,
            kb * 1e3 / body_len as f64
        ),
        None => println!(),
    }
}
