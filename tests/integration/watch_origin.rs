//! Loopback origins whose feeds change while a test watches them, and a control server
//! (another port, so its requests never count against a feed host's pacing) that changes
//! them and counts their requests: `GET /bump/PORT/NAME` adds an item to feed NAME of the
//! origin on PORT; `GET /count/PORT/NAME` answers how many requests it has had.
//!
//! A feed is `/NAME.xml`: version `v` holds items 1..=v+1, newest first, with an `ETag` of
//! its version, so an unchanged feed answers a conditional request with `304`.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::helpers::{Reply, TestServer};

/// How one feed (or every feed of a host, for `strict_gap`) behaves.
#[derive(Debug, Clone, Default)]
pub struct Flavor {
    /// `Cache-Control: max-age` in seconds.
    pub max_age: Option<u32>,
    /// RSS `<ttl>` in minutes.
    pub ttl: Option<u32>,
    /// `sy:updatePeriod` and `sy:updateFrequency`.
    pub sy: Option<(&'static str, u32)>,
    /// Every answer is new bytes (a new `lastBuildDate` and `ETag`) with the same items.
    pub churn: bool,
    /// The nth request (1-based) is answered with this status and `Retry-After`.
    pub refuse_nth: Option<(usize, u16, &'static str)>,
}

#[derive(Default)]
struct Feed {
    version: u32,
    flavor: Flavor,
    requests: usize,
}

#[derive(Default)]
struct Host {
    feeds: HashMap<String, Feed>,
    /// A host that admits one request per this gap (from the last admitted one's
    /// arrival), refusing others with `429` and no `Retry-After`.
    strict_gap: Option<Duration>,
    last_admitted: Option<Instant>,
    refused: usize,
}

type Hosts = Arc<Mutex<HashMap<u16, Host>>>;

/// The origins of one test and their control server.
pub struct Origins {
    hosts: Hosts,
    servers: Vec<TestServer>,
    pub control: TestServer,
}

fn body(name: &str, f: &Feed, nonce: usize) -> String {
    let mut s = String::from(
        "<rss version=\"2.0\" xmlns:sy=\"http://purl.org/rss/1.0/modules/syndication/\"><channel>",
    );
    s.push_str(&format!(
        "<title>{name}</title><link>http://example.com/{name}/</link>"
    ));
    if f.flavor.churn {
        s.push_str(&format!("<lastBuildDate>build {nonce}</lastBuildDate>"));
    }
    if let Some(t) = f.flavor.ttl {
        s.push_str(&format!("<ttl>{t}</ttl>"));
    }
    if let Some((period, frequency)) = f.flavor.sy {
        s.push_str(&format!(
            "<sy:updatePeriod>{period}</sy:updatePeriod><sy:updateFrequency>{frequency}</sy:updateFrequency>"
        ));
    }
    for k in (1..=f.version + 1).rev() {
        s.push_str(&format!(
            "<item><title>item {k}</title><link>http://example.com/{name}/{k}</link><description>story {k}</description></item>"
        ));
    }
    s.push_str("</channel></rss>");
    s
}

fn answer(host: &mut Host, path: &str, if_none_match: Option<&str>, arrived: Instant) -> Reply {
    if let Some(gap) = host.strict_gap {
        if host
            .last_admitted
            .is_some_and(|t| arrived.duration_since(t) < gap)
        {
            host.refused += 1;
            return Reply::status(429);
        }
        host.last_admitted = Some(arrived);
    }
    let name = path.trim_start_matches('/').trim_end_matches(".xml");
    let Some(f) = host.feeds.get_mut(name) else {
        return Reply::status(404);
    };
    f.requests += 1;
    if let Some((nth, status, retry)) = f.flavor.refuse_nth
        && f.requests == nth
    {
        return Reply::status(status).header("Retry-After", retry);
    }
    let etag = if f.flavor.churn {
        format!("\"v{}-{}\"", f.version, f.requests)
    } else {
        format!("\"v{}\"", f.version)
    };
    let mut reply = if if_none_match == Some(etag.as_str()) {
        Reply::status(304)
    } else {
        Reply::xml(body(name, f, f.requests))
    };
    reply = reply.header("ETag", &etag);
    if let Some(m) = f.flavor.max_age {
        reply = reply.header("Cache-Control", &format!("max-age={m}"));
    }
    reply
}

impl Origins {
    /// A control server and no origin yet.
    pub async fn start() -> Origins {
        let hosts: Hosts = Arc::default();
        let h = hosts.clone();
        let control = TestServer::start(move |req| {
            let parts: Vec<&str> = req.path.trim_start_matches('/').split('/').collect();
            let [what, port, name] = parts[..] else {
                return Reply::status(404);
            };
            let Ok(port) = port.parse::<u16>() else {
                return Reply::status(404);
            };
            let mut hosts = h.lock().unwrap();
            let Some(f) = hosts.get_mut(&port).and_then(|h| h.feeds.get_mut(name)) else {
                return Reply::status(404);
            };
            match what {
                "bump" => {
                    f.version += 1;
                    Reply::ok(f.version.to_string(), "text/plain")
                }
                "count" => Reply::ok(f.requests.to_string(), "text/plain"),
                _ => Reply::status(404),
            }
        })
        .await;
        Origins {
            hosts,
            servers: Vec::new(),
            control,
        }
    }

    /// A new origin (a host of its own) serving `feeds`; with `strict_gap`, it admits one
    /// request per that gap. Its index in [`Origins::server`].
    pub async fn host(&mut self, feeds: &[(&str, Flavor)], strict_gap: Option<Duration>) -> usize {
        let hosts = self.hosts.clone();
        let port_cell = Arc::new(Mutex::new(0u16));
        let port_of = port_cell.clone();
        let server = TestServer::start(move |req| {
            let port = *port_of.lock().unwrap();
            let mut hosts = hosts.lock().unwrap();
            let Some(host) = hosts.get_mut(&port) else {
                return Reply::status(503);
            };
            answer(host, &req.path, req.header("if-none-match"), req.arrived)
        })
        .await;
        let port = server.addr.port();
        *port_cell.lock().unwrap() = port;
        let host = Host {
            feeds: feeds
                .iter()
                .map(|(n, flavor)| {
                    let feed = Feed {
                        version: 1,
                        flavor: flavor.clone(),
                        requests: 0,
                    };
                    (n.to_string(), feed)
                })
                .collect(),
            strict_gap,
            ..Host::default()
        };
        self.hosts.lock().unwrap().insert(port, host);
        self.servers.push(server);
        self.servers.len() - 1
    }

    /// Origin `i`.
    pub fn server(&self, i: usize) -> &TestServer {
        &self.servers[i]
    }

    /// The URL of feed `name` on origin `i`.
    pub fn feed(&self, i: usize, name: &str) -> String {
        self.servers[i].url(&format!("/{name}.xml"))
    }

    /// The control URL that bumps (`what` = `bump`) or counts feed `name` of origin `i`.
    pub fn control_url(&self, what: &str, i: usize, name: &str) -> String {
        self.control
            .url(&format!("/{what}/{}/{name}", self.servers[i].addr.port()))
    }

    /// Requests feed `name` of origin `i` has had (refusals of a strict host not counted).
    pub fn requests(&self, i: usize, name: &str) -> usize {
        let port = self.servers[i].addr.port();
        self.hosts.lock().unwrap()[&port].feeds[name].requests
    }

    /// Requests origin `i` refused for coming too soon.
    pub fn refused(&self, i: usize) -> usize {
        let port = self.servers[i].addr.port();
        self.hosts.lock().unwrap()[&port].refused
    }

    /// Adds an item to feed `name` of origin `i`.
    pub fn bump(&self, i: usize, name: &str) {
        let port = self.servers[i].addr.port();
        self.hosts
            .lock()
            .unwrap()
            .get_mut(&port)
            .unwrap()
            .feeds
            .get_mut(name)
            .unwrap()
            .version += 1;
    }
}
