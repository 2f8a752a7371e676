//! Liberal date parsing: RFC 822/2822 with odd zones, RFC 3339 / ISO 8601 / W3C-DTF with
//! or without a zone, and the common variants feeds really contain. Anything else is
//! `None`; a date never fails a feed.

use std::time::Duration;

use chrono::{
    DateTime, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, TimeZone, Utc,
};

/// Formats a time as the contract's UTC RFC 3339 (`2026-06-01T10:00:00Z`).
pub(crate) fn format(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The longest span a server's number of seconds is taken to mean: 2^31 s, about 68
/// years (RFC 9111 §1.2.2). Every span a server or a page states (`max-age`, `Age`,
/// `Retry-After`, a quota's reset, a `Crawl-delay`) is read through [`delta_seconds`] or
/// [`span_seconds`], so no later sum or conversion of it can overflow.
pub(crate) const MAX_SPAN: Duration = Duration::from_secs(1 << 31);

/// A server's whole number of seconds (digits only, as HTTP writes delta-seconds), capped
/// at [`MAX_SPAN`]; `None` when it is not one.
pub(crate) fn delta_seconds(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Digits that do not fit a u64 are past the cap anyway.
    let secs = s.parse::<u64>().unwrap_or(u64::MAX);
    Some(Duration::from_secs(secs).min(MAX_SPAN))
}

/// A number of seconds with a fraction (`Crawl-delay: 2.5`, a quota's `1.5`), capped at
/// [`MAX_SPAN`] (a number too large for its type, read as infinity, is past any span and
/// capped too); `None` when it is not a number or below zero.
pub(crate) fn span_seconds(secs: f64) -> Option<Duration> {
    if secs.is_nan() || secs < 0.0 {
        return None;
    }
    Duration::try_from_secs_f64(secs.min(MAX_SPAN.as_secs_f64()))
        .ok()
        .map(|d| d.min(MAX_SPAN))
}

/// Parses a feed date; `None` when it cannot be read.
pub(crate) fn parse(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim().trim_matches('\u{feff}');
    if s.is_empty() || s.len() > 100 {
        return None;
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    if s.as_bytes()[0].is_ascii_digit()
        && let Some(t) = parse_iso(s)
    {
        return Some(t);
    }
    parse_rfc822(s).or_else(|| parse_loose(s))
}

/// The canonical RFC 822 form most feeds write, `[Ddd, ]D[D] Mmm YYYY HH:MM[:SS] zone` with
/// a zone of `GMT`, `UT`, `UTC`, `Z` or `±HHMM`, read without allocating; anything else
/// (and any value out of range) is left to [`parse_loose`], which reads this form the same.
fn parse_rfc822(s: &str) -> Option<DateTime<Utc>> {
    let b = s.as_bytes();
    let mut i = 0;
    if b.first()?.is_ascii_alphabetic() {
        let day = b.get(..4)?;
        if day[3] != b',' || !is_day_name(&s[..3]) {
            return None;
        }
        i = 4;
        if b.get(i) == Some(&b' ') {
            i += 1;
        }
    }
    let num = |at: usize, n: usize| -> Option<u32> {
        let part = b.get(at..at + n)?;
        part.iter().try_fold(0u32, |acc, d| {
            d.is_ascii_digit().then(|| acc * 10 + u32::from(d - b'0'))
        })
    };
    let day_len = if b.get(i + 1) == Some(&b' ') { 1 } else { 2 };
    let day = num(i, day_len)?;
    i += day_len;
    if b.get(i) != Some(&b' ') || b.get(i + 4) != Some(&b' ') {
        return None;
    }
    let month = b.get(i + 1..i + 4)?;
    if !month.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    let month = month_number(&s[i + 1..i + 4])?;
    i += 5;
    let year = num(i, 4)?;
    i += 4;
    if b.get(i) != Some(&b' ') || b.get(i + 3) != Some(&b':') {
        return None;
    }
    let (hour, minute) = (num(i + 1, 2)?, num(i + 4, 2)?);
    i += 6;
    let second = if b.get(i) == Some(&b':') {
        i += 3;
        num(i - 2, 2)?
    } else {
        0
    };
    if b.get(i) != Some(&b' ') {
        return None;
    }
    let zone = &b[i + 1..];
    let offset = match zone {
        b"GMT" | b"UT" | b"UTC" | b"Z" => 0,
        [sign @ (b'+' | b'-'), ..] if zone.len() == 5 => {
            let (h, m) = (num(i + 2, 2)? as i32, num(i + 4, 2)? as i32);
            if h > 23 || m > 59 {
                return None;
            }
            (h * 3600 + m * 60) * if *sign == b'-' { -1 } else { 1 }
        }
        _ => return None,
    };
    let date = NaiveDate::from_ymd_opt(year as i32, month, day)?;
    let time = NaiveTime::from_hms_opt(hour, minute, second)?;
    FixedOffset::east_opt(offset)?
        .from_local_datetime(&NaiveDateTime::new(date, time))
        .single()
        .map(|t| t.with_timezone(&Utc))
}

/// ISO 8601 / W3C-DTF: `YYYY[-MM[-DD]][(T| )hh:mm[:ss[.f]]][zone]`, also basic format.
fn parse_iso(s: &str) -> Option<DateTime<Utc>> {
    let b = s.as_bytes();
    let digits = |from: usize, n: usize| -> Option<u32> {
        let part = b.get(from..from + n)?;
        if part.iter().all(u8::is_ascii_digit) {
            std::str::from_utf8(part).ok()?.parse().ok()
        } else {
            None
        }
    };
    let year = digits(0, 4)? as i32;
    let mut i = 4;
    let (month, day);
    if b.get(i) == Some(&b'-') || b.get(i) == Some(&b'/') {
        let sep = b[i];
        month =
            digits(i + 1, 2).or_else(|| digits(i + 1, 1).filter(|_| b.get(i + 2) == Some(&sep)))?;
        i += if month >= 10 || b.get(i + 1) == Some(&b'0') {
            3
        } else {
            2
        };
        if b.get(i) == Some(&sep) {
            let d2 = digits(i + 1, 2);
            day = match d2 {
                Some(d) => {
                    i += 3;
                    d
                }
                None => {
                    let d = digits(i + 1, 1)?;
                    i += 2;
                    d
                }
            };
        } else {
            day = 1;
        }
    } else if let (Some(m), Some(d)) = (digits(4, 2), digits(6, 2)) {
        month = m;
        day = d;
        i = 8;
    } else if b.len() == 4 {
        month = 1;
        day = 1;
    } else {
        return None;
    }
    let date = NaiveDate::from_ymd_opt(year, month, day)?;
    let rest = &s[i..];
    if rest.trim().is_empty() {
        return Some(Utc.from_utc_datetime(&date.and_time(NaiveTime::MIN)));
    }
    let rest = rest
        .strip_prefix(['T', 't', ' '])
        .unwrap_or(rest)
        .trim_start();
    let (time, zone) = split_time_zone(rest)?;
    let naive = NaiveDateTime::new(date, time);
    with_zone(naive, zone.trim())
}

/// Splits `hh:mm[:ss[.f]]` (or `hhmmss`) from what follows.
fn split_time_zone(s: &str) -> Option<(NaiveTime, &str)> {
    let b = s.as_bytes();
    let mut nums = [0u32; 3];
    let mut i = 0;
    let mut n = 0;
    while n < 3 {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() && i - start < 2 {
            i += 1;
        }
        if i == start {
            break;
        }
        nums[n] = s[start..i].parse().ok()?;
        n += 1;
        if b.get(i) == Some(&b':') {
            i += 1;
        } else if !(b.get(i).is_some_and(u8::is_ascii_digit) && n < 3) {
            break;
        }
    }
    if n < 2 {
        return None;
    }
    let mut nanos = 0;
    if matches!(b.get(i), Some(b'.') | Some(b',')) {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let frac = &s[start..i.min(start + 9)];
        if !frac.is_empty() {
            nanos = frac.parse::<u32>().ok()? * 10u32.pow(9 - frac.len() as u32);
        }
    }
    let (h, m, sec) = (nums[0], nums[1], nums[2]);
    // 24:00 and leap seconds are folded into the nearest valid time.
    let time = NaiveTime::from_hms_nano_opt(h.min(23), m, sec.min(59), nanos)?;
    Some((time, &s[i..]))
}

fn with_zone(naive: NaiveDateTime, zone: &str) -> Option<DateTime<Utc>> {
    let offset = if zone.is_empty() {
        0
    } else {
        zone_offset(zone)?
    };
    let tz = FixedOffset::east_opt(offset)?;
    tz.from_local_datetime(&naive)
        .single()
        .map(|t| t.with_timezone(&Utc))
}

/// The offset in seconds east of UTC for a zone written any common way.
fn zone_offset(zone: &str) -> Option<i32> {
    let z = zone.trim().trim_matches(|c| c == '(' || c == ')');
    let upper = z.to_ascii_uppercase();
    for prefix in ["GMT", "UTC", "UT"] {
        if let Some(rest) = upper.strip_prefix(prefix)
            && (rest.starts_with('+') || rest.starts_with('-'))
        {
            return numeric_offset(rest);
        }
    }
    if z.starts_with('+') || z.starts_with('-') {
        return numeric_offset(z);
    }
    let hours = match upper.as_str() {
        "Z" | "GMT" | "UT" | "UTC" | "WET" | "Z UTC" => 0.0,
        "EST" => -5.0,
        "EDT" => -4.0,
        "CST" => -6.0,
        "CDT" => -5.0,
        "MST" => -7.0,
        "MDT" => -6.0,
        "PST" => -8.0,
        "PDT" => -7.0,
        "AKST" => -9.0,
        "AKDT" => -8.0,
        "HST" => -10.0,
        "AST" => -4.0,
        "ADT" => -3.0,
        "NST" => -3.5,
        "NDT" => -2.5,
        "BST" | "CET" | "WEST" | "MET" => 1.0,
        "CEST" | "EET" | "MEST" | "SAST" => 2.0,
        "EEST" | "MSK" => 3.0,
        "IST" => 5.5,
        "SGT" | "HKT" | "AWST" => 8.0,
        "JST" | "KST" => 9.0,
        "ACST" => 9.5,
        "AEST" => 10.0,
        "ACDT" => 10.5,
        "AEDT" => 11.0,
        "NZST" => 12.0,
        "NZDT" => 13.0,
        _ => {
            // RFC 822 military zones; their signs were specified backwards and are
            // ambiguous in practice, so all of them except Z are read as unknown (UTC).
            if upper.len() == 1 && upper.as_bytes()[0].is_ascii_alphabetic() {
                0.0
            } else {
                return None;
            }
        }
    };
    Some((hours * 3600.0) as i32)
}

fn numeric_offset(s: &str) -> Option<i32> {
    let sign = if s.starts_with('-') { -1 } else { 1 };
    let digits: String = s[1..].chars().filter(|c| *c != ':').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        1 | 2 => (digits.parse::<i32>().ok()?, 0),
        3 => (
            digits[..1].parse::<i32>().ok()?,
            digits[1..].parse::<i32>().ok()?,
        ),
        4 => (
            digits[..2].parse::<i32>().ok()?,
            digits[2..].parse::<i32>().ok()?,
        ),
        _ => return None,
    };
    if h > 23 || m > 59 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60))
}

fn month_number(word: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let w = word.to_ascii_lowercase();
    let w = w.trim_end_matches('.');
    if w.len() < 3 {
        return None;
    }
    let idx = MONTHS.iter().position(|m| w.starts_with(m))?;
    Some(idx as u32 + 1)
}

fn is_day_name(word: &str) -> bool {
    const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
    let w = word.to_ascii_lowercase();
    w.len() >= 3 && DAYS.iter().any(|d| w.starts_with(d))
}

/// RFC 822 and its relatives, read token by token: day names ignored, a month name,
/// day and year numbers in either order, a time, and a zone.
fn parse_loose(s: &str) -> Option<DateTime<Utc>> {
    let mut month = None;
    let mut numbers: Vec<u32> = Vec::new();
    let mut year_token = None;
    let mut time = None;
    let mut zone: Option<String> = None;
    let mut pm = None;
    let cleaned = s.replace([',', '\u{a0}'], " ");
    let mut tokens: Vec<&str> = cleaned.split_whitespace().collect();
    // "10-Jun-2003" and "2003/06/10" style single tokens are split on their separators.
    let mut expanded: Vec<String> = Vec::new();
    for t in tokens.drain(..) {
        if !t.contains(':') && t.contains(['-', '/', '.']) && !t.starts_with(['+', '-']) {
            expanded.extend(
                t.split(['-', '/', '.'])
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned),
            );
        } else {
            expanded.push(t.to_owned());
        }
    }
    for tok in &expanded {
        let tok = tok.as_str();
        if tok.contains(':') && tok.as_bytes()[0].is_ascii_digit() {
            let (t, rest) = split_time_zone(tok)?;
            time = Some(t);
            let rest = rest.trim();
            if !rest.is_empty() {
                zone = Some(rest.to_owned());
            }
        } else if tok.bytes().all(|b| b.is_ascii_digit()) {
            if tok.len() == 4 {
                year_token = Some(tok.parse::<i32>().ok()?);
            } else {
                numbers.push(tok.parse().ok()?);
            }
        } else if let Some(m) = month_number(tok).filter(|_| month.is_none() && !is_day_name(tok)) {
            month = Some(m);
        } else if is_day_name(tok) {
            continue;
        } else if tok.eq_ignore_ascii_case("am") || tok.eq_ignore_ascii_case("pm") {
            pm = Some(tok.eq_ignore_ascii_case("pm"));
        } else if zone.is_none() && zone_offset(tok).is_some() {
            zone = Some(tok.to_owned());
        } else if tok.chars().all(|c| c.is_ascii_alphabetic()) && time.is_some() {
            // An unknown zone name after the time: read as UTC rather than reject.
            zone = Some("UTC".to_owned());
        } else {
            return None;
        }
    }
    let (year, month, day) = match (year_token, month) {
        (Some(y), Some(m)) => (y, m, *numbers.first()?),
        (None, Some(m)) => {
            // "10 Jun 03": the last number is a two-digit year.
            let (d, y) = (*numbers.first()?, *numbers.get(1)?);
            (two_digit_year(y), m, d)
        }
        (Some(y), None) if numbers.len() >= 2 => {
            // Numeric dates: year first or last; month before day.
            (y, numbers[0], numbers[1])
        }
        _ => return None,
    };
    let date = NaiveDate::from_ymd_opt(year, month, day)?;
    let mut t = time.unwrap_or(NaiveTime::MIN);
    if let Some(pm) = pm {
        use chrono::Timelike;
        let h = t.hour() % 12 + if pm { 12 } else { 0 };
        t = t.with_hour(h)?;
    }
    with_zone(NaiveDateTime::new(date, t), zone.as_deref().unwrap_or(""))
}

fn two_digit_year(y: u32) -> i32 {
    match y {
        0..=68 => 2000 + y as i32,
        69..=99 => 1900 + y as i32,
        _ => y as i32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<String> {
        parse(s).map(|t| format(&t))
    }

    #[test]
    fn issue_27_a_servers_spans_are_capped_and_garbage_is_none() {
        assert_eq!(delta_seconds(" 120 "), Some(Duration::from_secs(120)));
        for huge in [
            "18446744073709551615",
            "99999999999999999999999",
            "2147483649",
        ] {
            assert_eq!(delta_seconds(huge), Some(MAX_SPAN), "{huge}");
        }
        for bad in ["", "-1", "+5", "1.5", "1e3", "soon"] {
            assert_eq!(delta_seconds(bad), None, "{bad}");
        }
        assert_eq!(span_seconds(2.5), Some(Duration::from_millis(2500)));
        assert_eq!(span_seconds(1e20), Some(MAX_SPAN));
        assert_eq!(span_seconds(f64::MAX), Some(MAX_SPAN));
        assert_eq!(span_seconds(f64::INFINITY), Some(MAX_SPAN));
        for bad in [f64::NAN, f64::NEG_INFINITY, -0.5] {
            assert_eq!(span_seconds(bad), None, "{bad}");
        }
        // The largest span still adds to any instant and converts to milliseconds.
        let _ = tokio::time::Instant::now() + MAX_SPAN;
        assert!(u64::try_from(MAX_SPAN.as_millis()).is_ok());
    }

    #[test]
    fn the_rfc822_fast_path_reads_what_the_loose_reader_reads() {
        let days = ["Mon", "tue", "WED", "Thu", "Fri", "Sat", "Sun"];
        let months = [
            "Jan", "feb", "MAR", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        let zones = [
            "GMT", "UT", "UTC", "Z", "+0000", "-0500", "+0530", "+2359", "-1200",
        ];
        let mut fast = 0;
        for (k, month) in months.iter().enumerate() {
            for (d, zone) in zones.iter().enumerate() {
                let day = 1 + (k * 7 + d * 5) % 28;
                let head = if d % 3 == 0 {
                    String::new()
                } else {
                    format!(
                        "{},{}",
                        days[(k + d) % 7],
                        if d % 2 == 0 { "" } else { " " }
                    )
                };
                let secs = if d % 4 == 0 {
                    String::new()
                } else {
                    format!(":{:02}", d * 6)
                };
                for year in ["1999", "2003", "2026"] {
                    let s = format!(
                        "{head}{day} {month} {year} {:02}:{:02}{secs} {zone}",
                        (k + d) % 24,
                        (k * 11) % 60
                    );
                    let got = parse_rfc822(&s);
                    assert!(got.is_some(), "{s}");
                    assert_eq!(got, parse_loose(&s), "{s}");
                    fast += 1;
                }
            }
        }
        assert_eq!(fast, 12 * 9 * 3);
        // Out of range, or not the canonical form: left to the loose reader, which decides.
        for s in [
            "31 Feb 2003 04:00:00 GMT",
            "10 Jun 2003 24:00:00 GMT",
            "10 Jun 2003 04:60:00 GMT",
            "10 Jun 2003 04:00:00 +2400",
            "10 Jun 2003 04:00:00 EST",
            "Tuesday, 10 Jun 2003 04:00:00 GMT",
            "Xyz, 10 Jun 2003 04:00:00 GMT",
            "10 June 2003 04:00:00 GMT",
            "10 Jun 03 04:00:00 GMT",
            "10 Jun 2003 4:00:00 GMT",
            "10 Jun 2003 04:00:00 GMT extra",
            "10 Jun 2003 04:00:00 +05:30",
            "10 Jun 2003",
        ] {
            assert_eq!(parse_rfc822(s), None, "{s}");
        }
        assert_eq!(p("31 Feb 2003 04:00:00 GMT"), None);
        assert_eq!(
            p("Tuesday, 10 Jun 2003 04:00:00 GMT").as_deref(),
            Some("2003-06-10T04:00:00Z")
        );
    }

    #[test]
    fn rfc822_with_every_kind_of_zone() {
        assert_eq!(
            p("Tue, 10 Jun 2003 04:00:00 GMT").unwrap(),
            "2003-06-10T04:00:00Z"
        );
        assert_eq!(
            p("Tue, 10 Jun 2003 04:00:00 +0200").unwrap(),
            "2003-06-10T02:00:00Z"
        );
        assert_eq!(
            p("Tue, 10 Jun 2003 04:00:00 EST").unwrap(),
            "2003-06-10T09:00:00Z"
        );
        assert_eq!(
            p("Tue, 10 Jun 2003 04:00:00 PDT").unwrap(),
            "2003-06-10T11:00:00Z"
        );
        assert_eq!(
            p("10 Jun 2003 04:00 -05:30").unwrap(),
            "2003-06-10T09:30:00Z"
        );
        assert_eq!(
            p("Tue, 10 Jun 03 04:00:00 Z").unwrap(),
            "2003-06-10T04:00:00Z"
        );
        assert_eq!(
            p("Tue, 10 June 2003 04:00:00 GMT+2").unwrap(),
            "2003-06-10T02:00:00Z"
        );
        assert_eq!(
            p("Tue,10 Jun 2003 04:00:00 CEST").unwrap(),
            "2003-06-10T02:00:00Z"
        );
        assert_eq!(
            p("Wed, 9 Jun 2003 4:00:00 UT").unwrap(),
            "2003-06-09T04:00:00Z"
        );
        assert_eq!(p("Tue, 10 Jun 2003").unwrap(), "2003-06-10T00:00:00Z");
        assert_eq!(
            p("Tue, 10 Jun 2003 04:00:00 XYZT").unwrap(),
            "2003-06-10T04:00:00Z"
        );
    }

    #[test]
    fn iso_dates_with_and_without_zones() {
        assert_eq!(p("2026-06-01T10:00:00Z").unwrap(), "2026-06-01T10:00:00Z");
        assert_eq!(
            p("2026-06-01T10:00:00.123+02:00").unwrap(),
            "2026-06-01T08:00:00Z"
        );
        assert_eq!(p("2026-06-01T10:00:00").unwrap(), "2026-06-01T10:00:00Z");
        assert_eq!(p("2026-06-01 10:00").unwrap(), "2026-06-01T10:00:00Z");
        assert_eq!(
            p("2026-06-01T10:00:00+0530").unwrap(),
            "2026-06-01T04:30:00Z"
        );
        assert_eq!(p("2026-06-01").unwrap(), "2026-06-01T00:00:00Z");
        assert_eq!(p("2026-06").unwrap(), "2026-06-01T00:00:00Z");
        assert_eq!(p("20260601T101500Z").unwrap(), "2026-06-01T10:15:00Z");
        assert_eq!(p("2026-6-1").unwrap(), "2026-06-01T00:00:00Z");
    }

    #[test]
    fn other_common_shapes() {
        assert_eq!(
            p("June 1, 2026 10:00:00 PM EST").unwrap(),
            "2026-06-02T03:00:00Z"
        );
        assert_eq!(
            p("Mon Jun 01 10:00:00 2026").unwrap(),
            "2026-06-01T10:00:00Z"
        );
        assert_eq!(
            p("01-Jun-2026 10:00:00 GMT").unwrap(),
            "2026-06-01T10:00:00Z"
        );
        assert_eq!(p("2026/06/01 10:00:00").unwrap(), "2026-06-01T10:00:00Z");
    }

    #[test]
    fn garbage_is_none() {
        for s in [
            "",
            "yesterday",
            "not a date at all",
            "2026-13-45",
            "32 Jun 2026",
            "99:99",
            "Tue, 10 Foo 2003",
        ] {
            assert_eq!(p(s), None, "{s}");
        }
    }
}
