//! The opt-in private-network guard (`--deny-private-networks`): for a server that reads
//! untrusted prompts, no request may reach loopback, private, link-local (cloud metadata at
//! 169.254.169.254 included), unique-local or unspecified addresses.
//!
//! The check is made on the addresses a name resolves to, inside the HTTP client's own
//! resolver, so the address connected to is the one checked (a name that resolves to a
//! public address for a check and to a private one for the connection — DNS rebinding —
//! cannot get through), and on IP literals before each send. Every redirect hop goes through
//! both.

use std::net::{IpAddr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why `ip` is not a public address, or `None` when it is.
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
            } else if v4.is_broadcast() {
                Some("broadcast")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return private_kind(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if first & 0xfe00 == 0xfc00 {
                Some("unique-local")
            } else if first & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else {
                None
            }
        }
    }
}

/// A refused address, carried through the HTTP client's error chain.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves to {addr}, a {kind} address (refused by --deny-private-networks)")]
pub(crate) struct PrivateAddress {
    pub host: String,
    pub addr: IpAddr,
    pub kind: &'static str,
}

/// A resolver that drops non-public addresses, and fails when none is left.
#[derive(Debug, Default)]
pub(crate) struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
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
        ] {
            assert_eq!(private_kind(ip.parse().unwrap()), Some(kind), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1111", "8.8.8.8"] {
            assert_eq!(private_kind(ip.parse().unwrap()), None, "{ip}");
        }
    }
}
