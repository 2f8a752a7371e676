//! `rss hosts` at a terminal: one line per host, what the gate enforces and for how long.

use std::io::{self, Write};

use crate::model::HostsOutput;
use crate::text::counted;

/// How far ahead `at` (UTC RFC 3339) is, in words: `in 42 s`, `in 3 min`, `in 2 h`; `-`
/// for none or a time gone by.
fn ahead(at: Option<&str>, now: chrono::DateTime<chrono::Utc>) -> String {
    let Some(t) = at.and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok()) else {
        return "-".to_owned();
    };
    let secs = (t.with_timezone(&chrono::Utc) - now).num_seconds();
    match secs {
        ..=0 => "-".to_owned(),
        1..=119 => format!("in {secs} s"),
        120..=7199 => format!("in {} min", secs / 60),
        _ => format!("in {} h", secs / 3600),
    }
}

fn ms(v: Option<u64>) -> String {
    v.map_or("-".to_owned(), |ms| {
        if ms % 1000 == 0 {
            format!("{} s", ms / 1000)
        } else {
            format!("{ms} ms")
        }
    })
}

/// Writes the hosts as a table for a person, then where the state is kept and any warning.
pub fn write_hosts_table(out: &mut dyn Write, hosts: &HostsOutput) -> io::Result<()> {
    let now = chrono::Utc::now();
    let head = [
        "HOST",
        "COOLS DOWN",
        "WARM",
        "DEPTH",
        "FLOOR",
        "SPACING",
        "CRAWL DELAY",
        "QUOTA LEFT",
        "LAST STATUS",
        "FORGOTTEN",
    ];
    let rows: Vec<[String; 10]> = hosts
        .hosts
        .iter()
        .map(|h| {
            [
                h.host.clone(),
                ahead(h.cooling_down_until.as_deref(), now),
                ahead(h.warm_until.as_deref(), now),
                h.depth.to_string(),
                ms(h.floor_ms),
                ms(h.spacing_ms),
                ms(h.crawl_delay_ms),
                h.quota_remaining.map_or("-".to_owned(), |q| q.to_string()),
                h.last_status.map_or("-".to_owned(), |s| s.to_string()),
                ahead(h.lapses_at.as_deref(), now),
            ]
        })
        .collect();
    let mut widths = head.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        s.trim_end().to_owned()
    };
    if !rows.is_empty() {
        writeln!(out, "{}", line(&head))?;
        for r in &rows {
            let cells: Vec<&str> = r.iter().map(String::as_str).collect();
            writeln!(out, "{}", line(&cells))?;
        }
    }
    let store = hosts.store.as_deref().unwrap_or("this process only");
    writeln!(
        out,
        "{} with learned state (key: {}; kept in {store})",
        counted(hosts.hosts.len(), "host"),
        hosts.host_key
    )?;
    for w in &hosts.warnings {
        writeln!(out, "warning {}: {}", w.code, w.message)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::HostInfo;

    #[test]
    fn a_host_is_one_aligned_line() {
        let soon = crate::date::format(&(chrono::Utc::now() + chrono::Duration::seconds(30)));
        let out = HostsOutput {
            host_key: "host".into(),
            schema_version: "1".into(),
            store: Some("file:/tmp/hosts".into()),
            hosts: vec![HostInfo {
                host: "example.com:443".into(),
                cooling_down_until: Some(soon.clone()),
                warm_until: Some(soon.clone()),
                depth: 2,
                floor_ms: Some(1500),
                floor_until: None,
                spacing_ms: Some(2050),
                spacing_until: None,
                probe_after: Some(3),
                last_retry_after_ms: None,
                last_status: Some(429),
                crawl_delay_ms: None,
                crawl_delay_until: None,
                quota_remaining: None,
                quota_resets_at: None,
                updated_at: soon.clone(),
                lapses_at: Some(soon),
            }],
            warnings: Vec::new(),
        };
        let mut buf = Vec::new();
        write_hosts_table(&mut buf, &out).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("HOST "), "{text}");
        assert!(lines[1].starts_with("example.com:443"), "{text}");
        assert!(
            lines[1].contains("1500 ms") && lines[1].contains("429"),
            "{text}"
        );
        assert!(
            lines[1].contains("in 29 s") || lines[1].contains("in 30 s"),
            "{text}"
        );
        assert_eq!(
            lines[2],
            "1 host with learned state (key: host; kept in file:/tmp/hosts)"
        );
    }
}
