//! The client's address behind reverse proxies, after Rails' `ActionDispatch::RemoteIp`
//! (actionpack/lib/action_dispatch/middleware/remote_ip.rb): forwarding headers are believed
//! only when the TCP peer is a configured trusted proxy (`--trusted-proxies`), and then the
//! client is the rightmost address of the chain that is not itself a trusted proxy. Addresses
//! further left were written by the client and could be anything.
//!
//! Unlike Rails, no address is trusted by default (Rails trusts loopback and the private
//! ranges): a server reached directly must not let its clients pick their address.

use std::net::IpAddr;

use axum::http::HeaderMap;

use crate::net::canonical;
pub use crate::net::IpRange;

/// The client's address for a request from `peer` (see the module docs): `peer` itself unless
/// it is in `trusted`; then the rightmost untrusted address of `X-Forwarded-For` (all its
/// headers, in order), or else of the `for=` parameters of `Forwarded` (RFC 7239 §5.2);
/// the leftmost address when every one is trusted; `peer` when neither header names one.
/// Entries that are not addresses (`unknown`, obfuscated identifiers) are skipped.
pub fn resolve(peer: IpAddr, headers: &HeaderMap, trusted: &[IpRange]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|r| r.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let mut chain = forwarded_for(headers, "x-forwarded-for", parse_xff_entry);
    if chain.is_empty() {
        chain = forwarded_for(headers, "forwarded", parse_forwarded_element);
    }
    chain
        .iter()
        .rev()
        .copied()
        .find(|ip| !is_trusted(*ip))
        .or_else(|| chain.first().copied())
        .unwrap_or(peer)
}

/// Whether a request from `peer` came over TLS by its proxy's word: `X-Forwarded-Proto: https`
/// (its last value), believed only when `peer` is in `trusted`, like `X-Forwarded-For`
/// (Rails' `ActionDispatch::Request#ssl?` reads the same header; here a client reaching the
/// server directly cannot claim it).
pub fn forwarded_https(peer: IpAddr, headers: &HeaderMap, trusted: &[IpRange]) -> bool {
    trusted.iter().any(|r| r.contains(canonical(peer)))
        && headers
            .get_all("x-forwarded-proto")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .next_back()
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

fn forwarded_for(
    headers: &HeaderMap,
    name: &str,
    entry: fn(&str) -> Option<IpAddr>,
) -> Vec<IpAddr> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(entry)
        .map(canonical)
        .collect()
}

/// One `X-Forwarded-For` entry: an address, possibly with a port (`1.2.3.4:5`, `[::1]:5`).
fn parse_xff_entry(entry: &str) -> Option<IpAddr> {
    parse_node(entry.trim())
}

/// One `Forwarded` element (`for=192.0.2.60;proto=http;by=203.0.113.43`): its `for` node.
fn parse_forwarded_element(element: &str) -> Option<IpAddr> {
    element.split(';').find_map(|pair| {
        let (key, value) = pair.trim().split_once('=')?;
        if !key.trim().eq_ignore_ascii_case("for") {
            return None;
        }
        parse_node(value.trim().trim_matches('"'))
    })
}

/// A node (RFC 7239 §6): `1.2.3.4`, `1.2.3.4:80`, `[2001:db8::1]`, `[2001:db8::1]:80`, or a
/// bare IPv6 address as `X-Forwarded-For` writes it.
fn parse_node(node: &str) -> Option<IpAddr> {
    if let Ok(ip) = node.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = node.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    let (host, port) = node.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn ranges_parse_and_match() {
        let r: IpRange = "10.0.0.0/8".parse().unwrap();
        assert!(r.contains(ip("10.1.2.3")));
        assert!(r.contains(ip("::ffff:10.1.2.3")));
        assert!(!r.contains(ip("11.0.0.1")));
        let one: IpRange = "127.0.0.1".parse().unwrap();
        assert!(one.contains(ip("127.0.0.1")) && !one.contains(ip("127.0.0.2")));
        let v6: IpRange = "fd00::/8".parse().unwrap();
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        let all: IpRange = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("8.8.8.8")));
        assert!("10.0.0.0/33".parse::<IpRange>().is_err());
        assert!("nope".parse::<IpRange>().is_err());
    }

    #[test]
    fn forwarding_headers_count_only_from_trusted_peers() {
        let trusted: Vec<IpRange> =
            vec!["127.0.0.1".parse().unwrap(), "10.0.0.0/8".parse().unwrap()];
        let h = headers(&[("x-forwarded-for", "6.6.6.6, 203.0.113.9, 10.0.0.2")]);
        assert_eq!(resolve(ip("127.0.0.1"), &h, &trusted), ip("203.0.113.9"));
        assert_eq!(
            resolve(ip("198.51.100.1"), &h, &trusted),
            ip("198.51.100.1")
        );
        assert_eq!(resolve(ip("127.0.0.1"), &h, &[]), ip("127.0.0.1"));
        let all_trusted = headers(&[("x-forwarded-for", "10.0.0.3, 10.0.0.2")]);
        assert_eq!(
            resolve(ip("127.0.0.1"), &all_trusted, &trusted),
            ip("10.0.0.3")
        );
        let forwarded = headers(&[(
            "forwarded",
            "for=6.6.6.6, for=\"[2001:db8::7]:443\";proto=https, for=10.0.0.2",
        )]);
        assert_eq!(
            resolve(ip("127.0.0.1"), &forwarded, &trusted),
            ip("2001:db8::7")
        );
        let junk = headers(&[("x-forwarded-for", "unknown, 203.0.113.5:8080")]);
        assert_eq!(resolve(ip("127.0.0.1"), &junk, &trusted), ip("203.0.113.5"));
        assert_eq!(
            resolve(ip("127.0.0.1"), &HeaderMap::new(), &trusted),
            ip("127.0.0.1")
        );
    }
}
