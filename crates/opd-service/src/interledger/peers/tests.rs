//! What a peer's input may be, and whose its sealed outgoing token is.

use super::*;

#[test]
fn tokens_are_stored_as_digests_and_checked() {
    let d = token_digests(&["a-token".into(), "a-token".into()]).unwrap_or_default();
    assert_eq!(d, vec![token_digest("a-token")]);
    assert_eq!(d[0].len(), 64);
    assert!(token_digests(&[String::new()]).is_err());
    assert!(token_digests(&["has space".into()]).is_err());
    assert!(token_digests(&["has\ttab".into()]).is_err());
    assert_eq!(
        token_digests(&["t".repeat(512)]).map(|d| d.len()).ok(),
        Some(1)
    );
    assert!(token_digests(&["t".repeat(513)]).is_err());
}

fn a_peer() -> Peer {
    let at = opd_core::Timestamp::from_unix_millis(1_700_000_000_000);
    Peer {
        id: PeerId::new(at, &opd_core::SeededRandom::new(1)),
        name: "bob".into(),
        static_ilp_address: "test.bob".into(),
        asset: Asset::parse("USD", 2).unwrap_or_else(|e| panic!("{e}")),
        max_packet_amount: Some(7),
        routes: vec!["test.bob".into()],
        outgoing: None,
        liquidity_low: None,
        liquidity_high: None,
        incoming_tokens: 2,
        created_by: PeerOrigin::Operator,
        created_at: at,
        updated_at: at,
    }
}

/// `input` applied to a fresh peer: the peer, or the refusal's text.
fn applied(input: PeerInput) -> Result<(Peer, Option<Vec<String>>), String> {
    let mut peer = a_peer();
    match apply(&mut peer, &input) {
        Ok(digests) => Ok((peer, digests)),
        Err(ServiceError::InvalidRequest(m)) => Err(m),
        Err(other) => panic!("not a refusal of the input: {other:?}"),
    }
}

fn outgoing(endpoint: &str, token: &str) -> Option<Option<PeerOutgoing>> {
    Some(Some(PeerOutgoing {
        endpoint: endpoint.into(),
        auth_token: token.into(),
    }))
}

#[test]
fn names_take_1_to_100_characters() {
    let named = |n: &str| {
        applied(PeerInput {
            name: Some(n.into()),
            ..PeerInput::default()
        })
        .map(|(p, _)| p.name)
    };
    assert_eq!(named("carol"), Ok("carol".into()));
    assert_eq!(named(&"n".repeat(100)), Ok("n".repeat(100)));
    assert!(named(&"n".repeat(101)).is_err());
    assert!(named("").is_err());
    assert!(named("   ").is_err());
}

#[test]
fn what_the_input_leaves_out_is_kept_and_what_it_says_is_taken() {
    let (kept, digests) = applied(PeerInput::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        kept,
        Peer {
            id: kept.id,
            ..a_peer()
        },
        "ids are new each time"
    );
    assert_eq!(digests, None, "tokens not given: the stored ones stay");
    let (changed, digests) = applied(PeerInput {
        static_ilp_address: Some("test.carol".into()),
        max_packet_amount: Some(None),
        routes: Some(vec!["g".into(), "test.carol.eu".into()]),
        incoming_tokens: Some(vec!["x".into(), "x".into(), "y".into()]),
        outgoing: outgoing("https://carol.example/ilp", "secret"),
        liquidity_low: Some(Some(4)),
        liquidity_high: Some(Some(5)),
        ..PeerInput::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(changed.static_ilp_address, "test.carol");
    assert_eq!(changed.max_packet_amount, None, "the limit removed");
    assert_eq!(changed.routes, vec!["g".to_owned(), "test.carol.eu".into()]);
    assert_eq!(changed.incoming_tokens, 2, "the same token twice is one");
    assert_eq!(digests, Some(vec![token_digest("x"), token_digest("y")]));
    assert_eq!(
        changed.outgoing.map(|o| (o.endpoint, o.auth_token)),
        Some(("https://carol.example/ilp".into(), "secret".into()))
    );
    assert_eq!(
        (changed.liquidity_low, changed.liquidity_high),
        (Some(4), Some(5))
    );
    let (removed, _) = applied(PeerInput {
        outgoing: Some(None),
        max_packet_amount: Some(Some(1)),
        ..PeerInput::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(removed.max_packet_amount, Some(1));
    assert_eq!(removed.outgoing, None);
}

#[test]
fn bad_addresses_routes_limits_and_endpoints_are_refused() {
    let refused = |input: PeerInput| applied(input).err().unwrap_or_default();
    let route = |r: &str| PeerInput {
        routes: Some(vec!["test.bob".into(), r.into()]),
        ..PeerInput::default()
    };
    assert!(refused(route("not a prefix")).contains("route"));
    assert!(refused(route("")).contains("route"));
    assert!(refused(PeerInput {
        static_ilp_address: Some("no".into()),
        ..PeerInput::default()
    })
    .contains("staticIlpAddress"));
    assert!(refused(PeerInput {
        max_packet_amount: Some(Some(0)),
        ..PeerInput::default()
    })
    .contains("maxPacketAmount"));
    let endpoint = |e: &str, t: &str| PeerInput {
        outgoing: outgoing(e, t),
        ..PeerInput::default()
    };
    assert!(refused(endpoint("ftp://carol.example/", "t")).contains("http or https"));
    assert!(refused(endpoint("mailto:carol@example", "t")).contains("http or https"));
    assert!(refused(endpoint("/ilp", "t")).contains("absolute"));
    assert!(refused(endpoint("http://carol.example/", "")).contains("authToken"));
    assert!(refused(endpoint("http://carol.example/", &"t".repeat(513))).contains("authToken"));
    assert!(applied(endpoint("http://carol.example/", &"t".repeat(512))).is_ok());
    let thresholds = |low, high| PeerInput {
        liquidity_low: Some(low),
        liquidity_high: Some(high),
        ..PeerInput::default()
    };
    assert!(refused(thresholds(Some(5), Some(5))).contains("liquidityThreshold"));
    assert!(refused(thresholds(Some(6), Some(5))).contains("liquidityThreshold"));
    assert!(applied(thresholds(Some(5), None)).is_ok());
    assert!(applied(thresholds(None, Some(5))).is_ok());
}

#[test]
fn an_outgoing_token_opens_only_for_its_peer_and_is_sealed_again_when_due() {
    let random = opd_core::SeededRandom::new(2);
    let old = SecretsKey {
        current: [1; 32],
        previous: None,
    };
    let key = SecretsKey {
        current: [2; 32],
        previous: Some([1; 32]),
    };
    let peer = a_peer();
    let other = PeerId::new(peer.created_at, &opd_core::SeededRandom::new(3));
    let current = secrets::seal_value(&key, &outgoing_context(peer.id), b"tok", &random);
    let previous = secrets::seal_value(&old, &outgoing_context(peer.id), b"tok", &random);
    let open = |stored: &str, id| open_token(&key, id, stored).ok();
    assert_eq!(open(&current, peer.id), Some(("tok".into(), false)));
    assert_eq!(open(&previous, peer.id), Some(("tok".into(), true)));
    assert_eq!(open("clear-tok", peer.id), Some(("clear-tok".into(), true)));
    assert_eq!(open(&current, other), None, "moved to another peer");
    let unknown = SecretsKey {
        current: [3; 32],
        previous: None,
    };
    let sealed = secrets::seal_value(&unknown, &outgoing_context(peer.id), b"tok", &random);
    assert_eq!(open(&sealed, peer.id), None, "sealed under another key");
}
