//! Who a request is from: the TCP peer, or — when the peer is one of `[limits]
//! trusted_proxies` — the address that proxy says it serves, read from `X-Forwarded-For` (or
//! RFC 7239 `Forwarded`, `[limits] client_ip_header`). Every per-client rule (rate limit,
//! open registrations, streams per client, heavy-work shares) and the loopback exemption key
//! on it, so clients behind a reverse proxy are told apart and a proxy on loopback exempts
//! nobody but itself.
//!
//! The header is read right to left: each trusted proxy appends the address it received the
//! request from, so the rightmost address that is not itself a trusted proxy is the client;
//! anything left of it is what the client sent, and may be forged. A peer that is not
//! trusted is the client whatever its headers say.

use std::net::IpAddr;

use actix_web::http::header::HeaderMap;
use ipnet::IpNet;

use crate::config::ClientIpHeader;

/// The networks whose requests carry their client's address in a header.
#[derive(Debug, Clone, Default)]
pub(crate) struct TrustedProxies {
    networks: Vec<IpNet>,
    header: ClientIpHeader,
}

impl TrustedProxies {
    /// From validated config values (CIDRs or single addresses).
    pub(crate) fn new(networks: &[String], header: ClientIpHeader) -> Self {
        TrustedProxies {
            networks: networks.iter().filter_map(|n| parse_network(n)).collect(),
            header,
        }
    }

    pub(crate) fn trusts(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.networks.iter().any(|network| network.contains(&ip))
    }

    /// The client of a request that `peer` sent with `headers`.
    pub(crate) fn client(&self, peer: IpAddr, headers: &HeaderMap) -> Client {
        let peer = peer.to_canonical();
        if !self.trusts(peer) {
            return Client::direct(peer);
        }
        // Split per entry on the bytes: one entry a client filled with junk (non-ASCII,
        // say) is that entry alone, never the whole line the proxy appended to.
        let entries = |name: &'static str| {
            headers
                .get_all(name)
                .flat_map(|value| value.as_bytes().split(|b| *b == b','))
        };
        let addresses: Vec<Option<IpAddr>> = match self.header {
            ClientIpHeader::XForwardedFor => entries("x-forwarded-for").map(address).collect(),
            ClientIpHeader::Forwarded => entries("forwarded")
                .map(|element| std::str::from_utf8(element).ok().and_then(forwarded_for))
                .collect(),
        };
        // The last trusted hop seen, right to left: the client when no untrusted address
        // is left of it, or when the address left of it is not one (a proxy that names its
        // client `unknown`, or a header it did not write).
        let mut client = peer;
        let mut unusable = false;
        for address in addresses.into_iter().rev() {
            match address {
                Some(ip) => {
                    let ip = ip.to_canonical();
                    client = ip;
                    if !self.trusts(ip) {
                        break;
                    }
                }
                None => {
                    unusable = true;
                    break;
                }
            }
        }
        Client {
            ip: client,
            key: client_key(client),
            proxied: client != peer,
            // A trusted proxy standing in for a client its header failed to name is no
            // loopback client of ours: it gets no exemption.
            vouched: !(unusable && self.trusts(client)),
        }
    }
}

/// One `X-Forwarded-For` entry: an address, with a port or in brackets as some balancers
/// write it (`192.0.2.1:5678`, `[2001:db8::1]:80`, `[2001:db8::1]`).
fn address(entry: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(entry).ok()?.trim();
    text.parse::<IpAddr>()
        .ok()
        .or_else(|| text.parse::<std::net::SocketAddr>().ok().map(|a| a.ip()))
        .or_else(|| text.strip_prefix('[')?.strip_suffix(']')?.parse().ok())
}

/// A CIDR (`10.0.0.0/8`, `fd00::/8`) or a single address.
pub(crate) fn parse_network(text: &str) -> Option<IpNet> {
    text.parse::<IpNet>()
        .ok()
        .or_else(|| text.parse::<IpAddr>().ok().map(IpNet::from))
        .map(|network| match network {
            // An IPv4-mapped IPv6 network is the IPv4 one (peers are canonical).
            IpNet::V6(v6) => match v6.addr().to_ipv4_mapped() {
                Some(v4) if v6.prefix_len() >= 96 => IpNet::V4(
                    ipnet::Ipv4Net::new(v4, v6.prefix_len() - 96).expect("a prefix of at most 32"),
                ),
                _ => IpNet::V6(v6),
            },
            v4 => v4,
        })
}

/// The `for=` address of one element of a `Forwarded` header (`for=192.0.2.60`,
/// `for="[2001:db8::1]:4711"`); `None` for `unknown`, an obfuscated name, or none.
fn forwarded_for(element: &str) -> Option<IpAddr> {
    let value = element.split(';').find_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("for")
            .then(|| value.trim().trim_matches('"'))
    })?;
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    match value.parse::<IpAddr>() {
        Ok(ip) => Some(ip),
        // `192.0.2.60:4711`
        Err(_) => value.rsplit_once(':')?.0.parse().ok(),
    }
}

/// The client of a request, kept in its extensions by the limits middleware.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Client {
    /// Its address, as the logs show it.
    pub ip: IpAddr,
    /// The address per-client rules count by ([`client_key`]).
    pub key: IpAddr,
    /// Named by a trusted proxy (not the TCP peer).
    pub proxied: bool,
    /// False when a trusted proxy's header could not name the client and the proxy stands
    /// in for it: such a client is never exempt as loopback.
    pub vouched: bool,
}

impl Client {
    pub(crate) fn direct(peer: IpAddr) -> Self {
        let ip = peer.to_canonical();
        Client {
            ip,
            key: client_key(ip),
            proxied: false,
            vouched: true,
        }
    }
}

/// The address per-client limits count by: an IPv4 address, or the /64 of an IPv6 one (a
/// single host usually owns a whole /64 and could rotate through it).
pub(crate) fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            let mut segments = v6.segments();
            segments[4..].fill(0);
            IpAddr::V6(segments.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_bytes(value.as_bytes()).unwrap(),
            );
        }
        map
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_client_is_the_rightmost_untrusted_address_behind_trusted_proxies_only() {
        let trusted = TrustedProxies::new(
            &["127.0.0.1".into(), "10.0.0.0/8".into(), "fd00::/8".into()],
            ClientIpHeader::XForwardedFor,
        );
        // (peer, headers, the client)
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            // Not a trusted peer: its headers are ignored.
            (
                "203.0.113.9",
                &[("x-forwarded-for", "198.51.100.1")],
                "203.0.113.9",
            ),
            (
                "127.0.0.2",
                &[("x-forwarded-for", "198.51.100.1")],
                "127.0.0.2",
            ),
            // A trusted peer without the header is the client.
            ("127.0.0.1", &[], "127.0.0.1"),
            (
                "127.0.0.1",
                &[("x-forwarded-for", "198.51.100.1")],
                "198.51.100.1",
            ),
            // A forged address left of the one the proxy appended is ignored.
            (
                "127.0.0.1",
                &[("x-forwarded-for", "1.2.3.4, 198.51.100.1")],
                "198.51.100.1",
            ),
            // Through two trusted proxies; headers split over lines count as one list.
            (
                "10.1.1.1",
                &[
                    ("x-forwarded-for", "1.2.3.4, 198.51.100.7"),
                    ("x-forwarded-for", "10.2.2.2"),
                ],
                "198.51.100.7",
            ),
            // Every hop trusted: the leftmost.
            (
                "10.1.1.1",
                &[("x-forwarded-for", "10.3.3.3, 10.2.2.2")],
                "10.3.3.3",
            ),
            // Garbage where the proxy's entry should be: the proxy.
            (
                "127.0.0.1",
                &[("x-forwarded-for", "1.2.3.4, junk")],
                "127.0.0.1",
            ),
            (
                "127.0.0.1",
                &[("x-forwarded-for", " 2001:db8::5 ")],
                "2001:db8::5",
            ),
            (
                "127.0.0.1",
                &[("x-forwarded-for", "::ffff:198.51.100.2")],
                "198.51.100.2",
            ),
            (
                "::ffff:127.0.0.1",
                &[("x-forwarded-for", "198.51.100.3")],
                "198.51.100.3",
            ),
            (
                "fd00::1",
                &[("x-forwarded-for", "198.51.100.4")],
                "198.51.100.4",
            ),
            // The other header is not read.
            (
                "127.0.0.1",
                &[("forwarded", "for=198.51.100.1")],
                "127.0.0.1",
            ),
        ];
        for (peer, pairs, want) in cases {
            let client = trusted.client(ip(peer), &headers(pairs));
            assert_eq!(client.ip, ip(want), "{peer} {pairs:?}");
            assert_eq!(client.proxied, client.ip != ip(peer).to_canonical());
        }
        // A header the proxy stands in for is no loopback client's.
        let spoiled = trusted.client(ip("127.0.0.1"), &headers(&[("x-forwarded-for", "junk")]));
        assert_eq!(spoiled.ip, ip("127.0.0.1"));
        assert!(!spoiled.vouched);
        let own = trusted.client(ip("127.0.0.1"), &headers(&[]));
        assert!(own.vouched);
        // No trusted proxy: nobody's header counts.
        let none = TrustedProxies::default();
        let client = none.client(ip("127.0.0.1"), &headers(&[("x-forwarded-for", "1.2.3.4")]));
        assert_eq!(client, Client::direct(ip("127.0.0.1")));
    }

    #[test]
    fn forwarded_names_its_for_parameter() {
        let trusted = TrustedProxies::new(&["127.0.0.1/32".into()], ClientIpHeader::Forwarded);
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("forwarded", "for=198.51.100.1")], "198.51.100.1"),
            (
                &[("forwarded", "For=\"198.51.100.1:4711\";proto=https")],
                "198.51.100.1",
            ),
            (
                &[("forwarded", "for=\"[2001:db8:cafe::17]:4711\"")],
                "2001:db8:cafe::17",
            ),
            (
                &[(
                    "forwarded",
                    "for=1.2.3.4, proto=http;for=198.51.100.9;by=127.0.0.1",
                )],
                "198.51.100.9",
            ),
            (&[("forwarded", "for=unknown")], "127.0.0.1"),
            (
                &[("forwarded", "for=_hidden, for=198.51.100.1")],
                "198.51.100.1",
            ),
            (&[("x-forwarded-for", "198.51.100.1")], "127.0.0.1"),
        ];
        for (pairs, want) in cases {
            assert_eq!(
                trusted.client(ip("127.0.0.1"), &headers(pairs)).ip,
                ip(want),
                "{pairs:?}"
            );
        }
    }

    #[test]
    fn ipv6_clients_count_by_their_64() {
        let a = Client::direct(ip("2001:db8:1:2:aaaa::1"));
        let b = Client::direct(ip("2001:db8:1:2:bbbb::2"));
        let c = Client::direct(ip("2001:db8:1:3::1"));
        assert_eq!(a.key, b.key);
        assert_ne!(a.key, c.key);
        assert_eq!(Client::direct(ip("::ffff:10.0.0.1")).key, ip("10.0.0.1"));
    }

    #[test]
    fn networks_are_cidrs_or_addresses() {
        assert!(parse_network("10.0.0.0/8").is_some());
        assert!(parse_network("10.0.0.1").is_some());
        assert!(parse_network("::1").is_some());
        assert!(parse_network("fd00::/8").is_some());
        assert_eq!(
            parse_network("::ffff:10.0.0.0/104"),
            parse_network("10.0.0.0/8")
        );
        for bad in ["", "10.0.0.0/33", "example.com", "10.0.0.0/8/1"] {
            assert!(parse_network(bad).is_none(), "{bad}");
        }
    }
}
