//! The opt-in private-network guard (`--deny-private-networks`): for a server that reads
//! untrusted prompts, no request may reach loopback, private, link-local (cloud metadata at
//! 169.254.169.254 included), unique-local or unspecified addresses.
//!
//! The check is made on the addresses a name resolves to, inside the HTTP client's own
//! resolver, so the address connected to is the one checked (a name that resolves to a
//! public address for a check and to a private one for the connection — DNS rebinding —
//! cannot get through), and on IP literals before each send. Every redirect hop goes through
//! both. The configured proxy (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`) is trusted: its
//! name may resolve to a private address. Through it, the proxy resolves the feed's host
//! name, so only a feed URL's IP literal can be checked there.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why `ip` is not a public address, or `None` when it is. An IPv4 address carried inside
/// an IPv6 one (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
/// `2002::/16`) is judged as the IPv4 address it carries.
pub(crate) fn private_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            if v4.is_loopback() {
                Some("loopback")
            } else if v4.is_unspecified() || o[0] == 0 {
                Some("unspecified")
            } else if v4.is_private() {
                Some("private")
            } else if v4.is_link_local() {
                Some("link-local")
            } else if o[0] == 100 && (64..128).contains(&o[1]) {
                Some("shared (carrier-grade NAT)")
            } else if o[0] == 192 && o[1] == 0 && o[2] == 0 {
                Some("IETF protocol assignment (192.0.0.0/24)")
            } else if o[0] == 198 && (o[1] == 18 || o[1] == 19) {
                Some("benchmarking (198.18.0.0/15)")
            } else if v4.is_multicast() {
                Some("multicast")
            } else if o[0] >= 240 {
                Some("reserved (240.0.0.0/4)")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_ipv4(v6) {
                return private_kind(IpAddr::V4(v4));
            }
            let seg = v6.segments();
            let first = seg[0];
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if first & 0xfe00 == 0xfc00 {
                Some("unique-local")
            } else if first & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else if first & 0xffc0 == 0xfec0 {
                Some("site-local (fec0::/10)")
            } else if first & 0xff00 == 0xff00 {
                Some("multicast")
            } else if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2] == 1 {
                Some("local-use NAT64 (64:ff9b:1::/48)")
            } else {
                None
            }
        }
    }
}

/// The IPv4 address an IPv6 address carries, in the forms that route to it: mapped
/// (`::ffff:0:0/96`), compatible (`::/96`, but `::` and `::1`), NAT64's well-known prefix
/// (`64:ff9b::/96`) and 6to4 (`2002::/16`, the next 32 bits).
fn embedded_ipv4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let seg = v6.segments();
    let low = |a: u16, b: u16| Ipv4Addr::new((a >> 8) as u8, a as u8, (b >> 8) as u8, b as u8);
    if seg[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified() {
        return Some(low(seg[6], seg[7]));
    }
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low(seg[6], seg[7]));
    }
    if seg[0] == 0x2002 {
        return Some(low(seg[1], seg[2]));
    }
    None
}

/// Refuses a URL whose host is a non-public IP address literal (a name is checked as it
/// resolves, by [`PublicOnly`]).
pub(crate) fn refuse_literal(url: &url::Url) -> crate::error::Result<()> {
    let ip = match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
        _ => return Ok(()),
    };
    match private_kind(ip) {
        Some(kind) => Err(crate::error::Error::PrivateNetwork {
            input: url.to_string(),
            reason: format!("{ip} is a {kind} address, and private networks are refused"),
        }),
        None => Ok(()),
    }
}

/// A refused address, carried through the HTTP client's error chain.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves to {addr}, a {kind} address, and private networks are refused")]
pub(crate) struct PrivateAddress {
    pub host: String,
    pub addr: IpAddr,
    pub kind: &'static str,
}

/// A resolver that drops non-public addresses, and fails when none is left; the names of
/// the configured proxies are trusted (an egress proxy usually sits on a private address).
#[derive(Debug, Default)]
pub(crate) struct PublicOnly {
    /// Lowercased host names of the configured proxies.
    pub trusted: std::sync::Arc<[String]>,
}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let trusted = self
            .trusted
            .iter()
            .any(|t| t.eq_ignore_ascii_case(host.trim_end_matches('.')));
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if trusted {
                return Ok(Box::new(found.into_iter()) as Addrs);
            }
            let mut refused = None;
            let public: Vec<SocketAddr> = found
                .into_iter()
                .filter(|a| match private_kind(a.ip()) {
                    Some(kind) => {
                        refused.get_or_insert((a.ip(), kind));
                        false
                    }
                    None => true,
                })
                .collect();
            match (public.is_empty(), refused) {
                (true, Some((addr, kind))) => {
                    Err(Box::new(PrivateAddress { host, addr, kind }) as _)
                }
                _ => Ok(Box::new(public.into_iter()) as Addrs),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_public_addresses_are_named() {
        for (ip, kind) in [
            ("127.0.0.1", "loopback"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("0.0.0.0", "unspecified"),
            ("100.64.0.1", "shared (carrier-grade NAT)"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fd00::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::127.0.0.1", "loopback"),
            ("::10.0.0.1", "private"),
            ("64:ff9b::127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("64:ff9b:1::1", "local-use NAT64 (64:ff9b:1::/48)"),
            ("2002:7f00:1::1", "loopback"),
            ("2002:c0a8:101::", "private"),
            ("192.0.0.8", "IETF protocol assignment (192.0.0.0/24)"),
            ("198.18.0.1", "benchmarking (198.18.0.0/15)"),
            ("198.19.255.255", "benchmarking (198.18.0.0/15)"),
            ("240.0.0.1", "reserved (240.0.0.0/4)"),
            ("255.255.255.255", "reserved (240.0.0.0/4)"),
            ("224.0.0.251", "multicast"),
            ("fec0::1", "site-local (fec0::/10)"),
            ("ff02::1", "multicast"),
        ] {
            assert_eq!(private_kind(ip.parse().unwrap()), Some(kind), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "2606:4700::1111",
            "8.8.8.8",
            // A public IPv4 address through NAT64 or 6to4 is public.
            "64:ff9b::5db8:d822",
            "2002:5db8:d822::1",
            "198.20.0.1",
            "192.0.1.1",
        ] {
            assert_eq!(private_kind(ip.parse().unwrap()), None, "{ip}");
        }
    }
}
