//! Client networks: what every per-address limit counts by (connections
//! per address, grant requests, the consent lockout, key-only incoming
//! payments, auto-peering requests).
//!
//! An exact address is a poor key: one IPv6 customer holds a whole /64
//! (2^64 addresses to rotate through), and every address of loopback or of
//! a private range belongs to the same operator-side network. So
//! [`ClientNetwork`] groups:
//! - IPv6 by its first [`Ipv6PrefixLen`] bits (64 by default);
//! - IPv4 (and IPv4-mapped IPv6) by the address itself;
//! - loopback (127/8, ::1) as one group, and each private range (10/8,
//!   172.16/12, 192.168/16, 100.64/10, fc00::/7, 169.254/16, fe80::/10) as
//!   one group each.
//!
//! Behind a reverse proxy every connection comes from the proxy. The
//! operator names its proxies ([`TrustedProxies`]); for a connection from
//! one, the client is read from `X-Forwarded-For` instead
//! ([`NetworkPolicy::client_network`]). Nobody else's `X-Forwarded-For` is
//! believed: a direct client cannot leave its group by sending one.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// How many leading bits of an IPv6 address name one client network:
/// 32 to 128 (a /32 is a whole provider, a /128 one address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6PrefixLen(u8);

impl Ipv6PrefixLen {
    /// The shortest prefix accepted: shorter ones would put whole
    /// providers' customers in one group.
    pub const MIN: u8 = 32;
    /// What one customer is usually given (RFC 6177 recommends /48 to /64
    /// for a site; a /64 is one subnet).
    pub const DEFAULT: Self = Self(64);

    /// `bits`, when between [`Self::MIN`] and 128.
    pub fn new(bits: u8) -> Result<Self, String> {
        if (Self::MIN..=128).contains(&bits) {
            Ok(Self(bits))
        } else {
            Err(format!(
                "an IPv6 prefix length must be {} to 128, not {bits}",
                Self::MIN
            ))
        }
    }

    // `const`, so that `--ipv6-prefix-len` can take its default from
    // `Self::DEFAULT`.
    pub const fn bits(self) -> u8 {
        self.0
    }
}

impl Default for Ipv6PrefixLen {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A range whose addresses are all one client network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SharedRange {
    /// 127/8 and ::1.
    Loopback,
    /// 10/8.
    Private10,
    /// 172.16/12.
    Private172,
    /// 192.168/16.
    Private192,
    /// 100.64/10, carrier-grade NAT.
    SharedAddressSpace,
    /// 169.254/16.
    LinkLocal4,
    /// fc00::/7, unique local.
    UniqueLocal,
    /// fe80::/10.
    LinkLocal6,
}

impl SharedRange {
    /// The range `ip` (canonical: IPv4-mapped already made IPv4) is in.
    fn of(ip: IpAddr) -> Option<Self> {
        match ip {
            IpAddr::V4(v4) => {
                let [a, b, ..] = v4.octets();
                match (a, b) {
                    (127, _) => Some(Self::Loopback),
                    (10, _) => Some(Self::Private10),
                    (172, 16..=31) => Some(Self::Private172),
                    (192, 168) => Some(Self::Private192),
                    (100, 64..=127) => Some(Self::SharedAddressSpace),
                    (169, 254) => Some(Self::LinkLocal4),
                    _ => None,
                }
            }
            IpAddr::V6(v6) => {
                let first = v6.segments()[0];
                if v6 == Ipv6Addr::LOCALHOST {
                    Some(Self::Loopback)
                } else if first & 0xfe00 == 0xfc00 {
                    Some(Self::UniqueLocal)
                } else if first & 0xffc0 == 0xfe80 {
                    Some(Self::LinkLocal6)
                } else {
                    None
                }
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Loopback => "loopback",
            Self::Private10 => "private:10/8",
            Self::Private172 => "private:172.16/12",
            Self::Private192 => "private:192.168/16",
            Self::SharedAddressSpace => "private:100.64/10",
            Self::LinkLocal4 => "private:169.254/16",
            Self::UniqueLocal => "private:fc00::/7",
            Self::LinkLocal6 => "private:fe80::/10",
        }
    }
}

/// The network a client is counted by. Made only from an address and the
/// grouping ([`ClientNetwork::of`]); its `Display` is the stable key the
/// limits store (`203.0.113.7`, `2001:db8:1:2::/64`, `loopback`,
/// `private:10/8`), also what the database keeps with a key-only client's
/// incoming payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientNetwork(Group);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Group {
    Ipv4(Ipv4Addr),
    /// The address with the bits past the prefix cleared, and the prefix.
    Ipv6(Ipv6Addr, u8),
    Shared(SharedRange),
}

impl ClientNetwork {
    /// The network of `ip`, IPv6 grouped by `prefix`.
    pub fn of(ip: IpAddr, prefix: Ipv6PrefixLen) -> Self {
        let ip = ip.to_canonical();
        if let Some(range) = SharedRange::of(ip) {
            return Self(Group::Shared(range));
        }
        match ip {
            IpAddr::V4(v4) => Self(Group::Ipv4(v4)),
            IpAddr::V6(v6) => {
                let bits = prefix.bits();
                let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
                Self(Group::Ipv6(Ipv6Addr::from(u128::from(v6) & mask), bits))
            }
        }
    }

    /// Whether this is the loopback group (127/8 and ::1): every local
    /// process, the operator's tools included.
    pub fn is_loopback(self) -> bool {
        self.0 == Group::Shared(SharedRange::Loopback)
    }
}

impl fmt::Display for ClientNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Group::Ipv4(a) => write!(f, "{a}"),
            Group::Ipv6(a, bits) => write!(f, "{a}/{bits}"),
            Group::Shared(range) => f.write_str(range.name()),
        }
    }
}

/// The networks whose connections are the operator's reverse proxies
/// (`--trusted-proxies`): addresses (`10.0.0.5`, `::1`) or ranges in CIDR
/// notation (`10.0.0.0/8`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Parses each entry; empty entries are skipped.
    pub fn parse(entries: &[String]) -> Result<Self, String> {
        let mut nets = Vec::new();
        for entry in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            let net = match entry.parse::<IpNet>() {
                Ok(net) => net.trunc(),
                Err(_) => entry
                    .parse::<IpAddr>()
                    .map(IpNet::from)
                    .map_err(|_| format!("{entry:?} is not an address or a CIDR range"))?,
            };
            nets.push(net);
        }
        Ok(Self(nets))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is one of the proxies (an IPv4-mapped address as its
    /// IPv4 one).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }
}

/// How the client network of a request is found: the grouping and the
/// trusted proxies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkPolicy {
    pub ipv6_prefix: Ipv6PrefixLen,
    pub trusted_proxies: TrustedProxies,
}

impl NetworkPolicy {
    /// The network of an address.
    pub fn group(&self, ip: IpAddr) -> ClientNetwork {
        ClientNetwork::of(ip, self.ipv6_prefix)
    }

    /// Whether a connection from `peer` is a proxy's, whose clients are
    /// named in `X-Forwarded-For`.
    pub fn is_trusted_proxy(&self, peer: IpAddr) -> bool {
        self.trusted_proxies.contains(peer)
    }

    /// The network of the client of a request that arrived from `peer`
    /// with `headers`.
    pub fn client_network(&self, peer: IpAddr, headers: &http::HeaderMap) -> ClientNetwork {
        self.group(self.client_address(peer, headers))
    }

    /// The client's address: `peer`, unless `peer` is a trusted proxy;
    /// then the rightmost `X-Forwarded-For` entry that is not itself a
    /// trusted proxy (each proxy appends the address it was reached from,
    /// so entries left of it are the client's word), or the leftmost when
    /// all are. A malformed header tells nothing: `peer` it is.
    pub fn client_address(&self, peer: IpAddr, headers: &http::HeaderMap) -> IpAddr {
        if !self.is_trusted_proxy(peer) {
            return peer;
        }
        let mut entries = Vec::new();
        for value in headers.get_all("x-forwarded-for") {
            let Ok(text) = value.to_str() else {
                return peer;
            };
            entries.extend(text.split(','));
        }
        let mut last = None;
        for entry in entries.iter().rev() {
            let Some(ip) = forwarded_address(entry) else {
                return peer;
            };
            if !self.is_trusted_proxy(ip) {
                return ip;
            }
            last = Some(ip);
        }
        last.unwrap_or(peer)
    }
}

/// One `X-Forwarded-For` entry: an address, or an address with a port
/// (`203.0.113.7:4711`, `[2001:db8::1]:4711`), as some proxies write.
fn forwarded_address(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<std::net::SocketAddr>().ok().map(|s| s.ip()))
}

#[cfg(test)]
mod tests;
