//! Open HTTP connections per client address (`--max-connections-per-address`): without a cap,
//! one address could hold every file descriptor of the server with idle keep-alive or
//! half-sent connections, each waiting out its header timeout.
//!
//! The accept loop asks [`PeerConnections::open`] for a [`PeerSlot`] before it reads a byte;
//! the slot is given back when dropped (the connection closed, or became a `/cable` socket).
//! The address counted is the TCP peer (not a forwarded header: nothing has been read yet),
//! and a peer in `--trusted-proxies` is not counted (it carries many clients);
//! an IPv6 peer counts by its /64 network, the block one subscriber gets, so walking the
//! addresses of one's own network does not multiply the cap.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};

/// Counts of open connections by client address, under one cap.
#[derive(Debug)]
pub struct PeerConnections {
    /// Most open connections of one address; 0: no cap (and no counting).
    cap: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One open connection's place in its address's count; dropping it gives the place back.
#[derive(Debug)]
pub struct PeerSlot {
    owner: Option<(Arc<PeerConnections>, IpAddr)>,
}

impl PeerConnections {
    /// Counts with at most `cap` open connections per address (0: no cap).
    #[must_use]
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            cap,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A place for one more connection of `peer`, or `None` when its address already holds
    /// `cap` of them.
    #[must_use]
    pub fn open(self: &Arc<Self>, peer: IpAddr) -> Option<PeerSlot> {
        if self.cap == 0 {
            return Some(PeerSlot { owner: None });
        }
        let key = client_key(peer);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(key).or_insert(0);
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            owner: Some((self.clone(), key)),
        })
    }

    /// Open connections counted for `peer`'s address (its /64 for IPv6).
    #[must_use]
    pub fn count(&self, peer: IpAddr) -> usize {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.get(&client_key(peer)).copied().unwrap_or(0)
    }

    fn close(&self, key: IpAddr) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&key);
            }
        }
    }
}

impl PeerSlot {
    /// A slot that counts nothing (a connection from a trusted proxy).
    #[must_use]
    pub fn uncounted() -> Self {
        Self { owner: None }
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        if let Some((owner, key)) = self.owner.take() {
            owner.close(key);
        }
    }
}

/// The address a connection counts under: an IPv4 address (also IPv4-mapped IPv6) as is, an
/// IPv6 address by its /64 network.
fn client_key(peer: IpAddr) -> IpAddr {
    match crate::net::canonical(peer) {
        IpAddr::V6(v6) => {
            let network = u128::from(v6) & (u128::MAX << 64);
            IpAddr::V6(Ipv6Addr::from(network))
        }
        v4 @ IpAddr::V4(_) => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_holds_at_most_the_cap_and_a_closed_connection_frees_its_place() {
        let peers = PeerConnections::new(2);
        let a: IpAddr = "203.0.113.7".parse().unwrap();
        let b: IpAddr = "203.0.113.8".parse().unwrap();
        let first = peers.open(a).unwrap();
        let _second = peers.open(a).unwrap();
        assert!(peers.open(a).is_none());
        assert!(peers.open(b).is_some(), "another address is not held back");
        drop(first);
        assert_eq!(peers.count(a), 1);
        assert!(peers.open(a).is_some());
    }

    #[test]
    fn an_ipv6_network_counts_as_one_client_and_a_mapped_ipv4_as_its_ipv4() {
        let peers = PeerConnections::new(1);
        let _one = peers.open("2001:db8:1:2::1".parse().unwrap()).unwrap();
        assert!(peers
            .open("2001:db8:1:2:ffff::9".parse().unwrap())
            .is_none());
        assert!(peers.open("2001:db8:1:3::1".parse().unwrap()).is_some());
        let _v4 = peers.open("198.51.100.1".parse().unwrap()).unwrap();
        assert!(peers.open("::ffff:198.51.100.1".parse().unwrap()).is_none());
    }

    #[test]
    fn no_cap_counts_nothing() {
        let peers = PeerConnections::new(0);
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let slots: Vec<_> = (0..1000).map(|_| peers.open(ip).unwrap()).collect();
        assert_eq!(peers.count(ip), 0);
        drop(slots);
    }
}
