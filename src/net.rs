//! IP address ranges, as `--trusted-proxies` names them: one address (`203.0.113.7`, `::1`) or a
//! CIDR network (`10.0.0.0/8`, `fd00::/8`, RFC 4632 §3.1 notation).

use std::net::IpAddr;
use std::str::FromStr;

/// One trusted address or network: `203.0.113.7`, `10.0.0.0/8`, `::1`, `fd00::/8`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpRange {
    base: IpAddr,
    prefix: u8,
}

impl IpRange {
    /// Whether `ip` is in this range (an IPv4-mapped IPv6 address counts as its IPv4 form).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (self.base, ip) {
            (IpAddr::V4(base), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(base) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(base), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(base) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// `ip` with an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) turned into its IPv4 form.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 @ IpAddr::V4(_) => v4,
    }
}

/// Parses `ADDRESS` or `ADDRESS/PREFIX` (CIDR).
///
/// Errors: the address does not parse, or the prefix is over 32 (IPv4) or 128 (IPv6).
impl FromStr for IpRange {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let base = canonical(
            addr.parse::<IpAddr>()
                .map_err(|e| format!("{addr:?} is not an IP address: {e}"))?,
        );
        let max = if base.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{p:?} is not a prefix length from 0 to {max}"))?,
            None => max,
        };
        Ok(Self { base, prefix })
    }
}
