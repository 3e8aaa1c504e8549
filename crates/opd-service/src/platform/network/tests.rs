//! The grouping of addresses into client networks, and reading the client
//! from `X-Forwarded-For` behind a trusted proxy.

use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn net(s: &str) -> String {
    ClientNetwork::of(ip(s), Ipv6PrefixLen::DEFAULT).to_string()
}

#[test]
fn ipv4_is_grouped_by_its_address() {
    assert_eq!(net("203.0.113.7"), "203.0.113.7");
    assert_ne!(net("203.0.113.7"), net("203.0.113.8"));
}

#[test]
fn ipv6_is_grouped_by_its_prefix() {
    assert_eq!(net("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
    assert_eq!(net("2001:db8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::/64");
    assert_ne!(net("2001:db8:1:2::1"), net("2001:db8:1:3::1"));
    let p48 = Ipv6PrefixLen::new(48).unwrap();
    let a = ClientNetwork::of(ip("2001:db8:1:2::1"), p48);
    let b = ClientNetwork::of(ip("2001:db8:1:ffff::1"), p48);
    assert_eq!(a, b);
    assert_eq!(a.to_string(), "2001:db8:1::/48");
    let p128 = Ipv6PrefixLen::new(128).unwrap();
    assert_eq!(
        ClientNetwork::of(ip("2001:db8::1"), p128).to_string(),
        "2001:db8::1/128"
    );
}

#[test]
fn the_ipv6_prefix_has_sane_bounds() {
    assert!(Ipv6PrefixLen::new(31).is_err());
    assert!(Ipv6PrefixLen::new(129).is_err());
    assert!(Ipv6PrefixLen::new(0).is_err());
    assert_eq!(Ipv6PrefixLen::new(32).unwrap().bits(), 32);
    assert_eq!(Ipv6PrefixLen::default().bits(), 64);
}

#[test]
fn ipv4_mapped_ipv6_is_ipv4() {
    assert_eq!(net("::ffff:203.0.113.7"), "203.0.113.7");
    assert_eq!(net("::ffff:127.0.0.2"), "loopback");
    assert_eq!(net("::ffff:10.1.2.3"), "private:10/8");
}

#[test]
fn loopback_is_one_group() {
    for a in ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1"] {
        assert_eq!(net(a), "loopback", "{a}");
    }
}

#[test]
fn each_private_range_is_one_group() {
    let cases = [
        ("10.0.0.1", "10.255.1.2", "private:10/8"),
        ("172.16.0.1", "172.31.255.1", "private:172.16/12"),
        ("192.168.0.1", "192.168.99.2", "private:192.168/16"),
        ("100.64.0.1", "100.127.0.9", "private:100.64/10"),
        ("169.254.169.254", "169.254.0.1", "private:169.254/16"),
        ("fc00::1", "fdff:1:2:3::9", "private:fc00::/7"),
        ("fe80::1", "febf::2", "private:fe80::/10"),
    ];
    for (a, b, name) in cases {
        assert_eq!(net(a), name, "{a}");
        assert_eq!(net(b), name, "{b}");
    }
    // Just outside the ranges: by address.
    for a in ["172.32.0.1", "100.128.0.1", "11.0.0.1", "192.169.0.1"] {
        assert_eq!(net(a), a);
    }
}

fn policy(trusted: &[&str]) -> NetworkPolicy {
    let entries: Vec<String> = trusted.iter().map(|s| (*s).to_owned()).collect();
    NetworkPolicy {
        ipv6_prefix: Ipv6PrefixLen::DEFAULT,
        trusted_proxies: TrustedProxies::parse(&entries).unwrap(),
    }
}

fn forwarded(values: &[&str]) -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    for v in values {
        headers.append("x-forwarded-for", http::HeaderValue::from_str(v).unwrap());
    }
    headers
}

#[test]
fn trusted_proxies_parse_addresses_and_ranges() {
    let p = policy(&["10.0.0.0/8", "::1", " 192.0.2.1 ", ""]);
    assert!(p.is_trusted_proxy(ip("10.9.9.9")));
    assert!(p.is_trusted_proxy(ip("::1")));
    assert!(p.is_trusted_proxy(ip("::ffff:192.0.2.1")));
    assert!(!p.is_trusted_proxy(ip("192.0.2.2")));
    assert!(!p.is_trusted_proxy(ip("127.0.0.1")));
    assert!(TrustedProxies::parse(&["10.0.0.0/33".into()]).is_err());
    assert!(TrustedProxies::parse(&["proxy.internal".into()]).is_err());
}

#[test]
fn a_direct_client_cannot_name_itself() {
    let p = policy(&["10.0.0.0/8"]);
    let h = forwarded(&["198.51.100.1"]);
    assert_eq!(p.client_address(ip("203.0.113.7"), &h), ip("203.0.113.7"));
    // Without trusted proxies nobody is believed.
    let none = policy(&[]);
    assert_eq!(
        none.client_network(ip("127.0.0.2"), &h).to_string(),
        "loopback"
    );
}

#[test]
fn behind_a_proxy_the_rightmost_untrusted_entry_is_the_client() {
    let p = policy(&["10.0.0.0/8"]);
    let proxy = ip("10.0.0.5");
    // The client's own (forged) entries are left of what the proxies add.
    let h = forwarded(&["1.1.1.1, 203.0.113.7, 10.0.0.9"]);
    assert_eq!(p.client_address(proxy, &h), ip("203.0.113.7"));
    // Several header lines are one list, in order.
    let h = forwarded(&["1.1.1.1", "203.0.113.7", "10.0.0.9"]);
    assert_eq!(p.client_address(proxy, &h), ip("203.0.113.7"));
    // With ports, and IPv6 grouped.
    let h = forwarded(&["[2001:db8:1:2::7]:4711"]);
    assert_eq!(p.client_network(proxy, &h).to_string(), "2001:db8:1:2::/64");
    let h = forwarded(&["203.0.113.7:4711"]);
    assert_eq!(p.client_address(proxy, &h), ip("203.0.113.7"));
    // Every entry a proxy: the leftmost.
    let h = forwarded(&["10.1.1.1, 10.2.2.2"]);
    assert_eq!(p.client_address(proxy, &h), ip("10.1.1.1"));
}

#[test]
fn a_malformed_or_missing_header_is_the_proxy_itself() {
    let p = policy(&["10.0.0.0/8"]);
    let proxy = ip("10.0.0.5");
    for bad in ["unknown", "203.0.113.7, garbage", "", " , "] {
        let h = forwarded(&[bad]);
        assert_eq!(p.client_address(proxy, &h), proxy, "{bad:?}");
    }
    assert_eq!(p.client_address(proxy, &http::HeaderMap::new()), proxy);
    // Garbage left of the client is not reached.
    let h = forwarded(&["garbage, 203.0.113.7"]);
    assert_eq!(p.client_address(proxy, &h), ip("203.0.113.7"));
}
