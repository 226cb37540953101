//! Which addresses a link preview may connect to: public unicast addresses only, unless an
//! operator's allow-list (`--link-preview-allow-network`) names the network.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is a public unicast address: not loopback, private (RFC 1918), shared (CGNAT,
/// `100.64.0.0/10`), link-local, unspecified, multicast, broadcast, documentation, benchmarking
/// or reserved; for IPv6 also not a unique local (`fc00::/7`), link-local (`fe80::/10`) or
/// site-local (`fec0::/10`) address, and an IPv6 address that carries an IPv4 one (mapped
/// `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) only when
/// that IPv4 address is public. Teredo (`2001::/32`) is refused: its client address is hidden.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0 // "this network", 0.0.0.0 included
        || a == 10
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || a == 127
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // TEST-NET-1
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168)
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // TEST-NET-2
        || (a == 203 && b == 0 && c == 113) // TEST-NET-3
        || a >= 224) // multicast, reserved, broadcast
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    if s[..6] == [0; 6] {
        // `::`, `::1` and the IPv4-compatible `::a.b.c.d`.
        return s[6] != 0 && is_public_v4(embedded(s[6], s[7]));
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4] {
        return is_public_v4(embedded(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return is_public_v4(embedded(s[1], s[2]));
    }
    let global_unicast = (s[0] & 0xe000) == 0x2000; // 2000::/3
    global_unicast
        && !(s[0] == 0x2001 && s[1] == 0) // Teredo
        && !(s[0] == 0x2001 && s[1] == 0xdb8) // documentation
        && !(s[0] == 0x2001 && (s[1] & 0xfff0) == 0x0010) // ORCHID
}

#[cfg(test)]
mod tests {
    use super::is_public;

    fn public(s: &str) -> bool {
        is_public(s.parse().unwrap())
    }

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "198.18.0.1",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "::10.0.0.1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2001::1",
            "2001:db8::1",
        ] {
            assert!(!public(ip), "{ip} counted as public");
        }
    }

    #[test]
    fn public_addresses_are_public() {
        for ip in [
            "93.184.215.14",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(public(ip), "{ip} counted as not public");
        }
    }
}
