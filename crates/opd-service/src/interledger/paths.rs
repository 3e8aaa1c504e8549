//! Sending over Interledger to receivers on other servers: the I/O side of
//! `opd_ilp::stream::sender`. Packets go to the peer whose route matches
//! the receiver's ILP address, converted from the sender's asset to the
//! peer's at this server's rates (rounded down, as the connector does).
//!
//! [`probe`] learns the path before a quote: unfulfillable packets of
//! 10¹² down to 1 source units, all in flight at once, whose answers give
//! the exchange rate from the sender's units to the receiver's, the
//! largest packet the path carries and the receiver's asset.
//!
//! What probing found is kept for [`PATH_TTL`] per path: the peer, the
//! receiver's server (its address less the last segment, which names the
//! payment) and the asset pair (one server may receive in several
//! assets, each at its own rate). Quotes and payment steps to the same
//! server in that time use it instead of probing again. That never weakens
//! what a payment promises: each packet still asks the receiver (STREAM
//! `prepareAmount`) for at least its amount at the quote's rate, and a
//! payment step that learns the path changed (an F08, a refusal for the
//! rate) forgets it (`forget_path`).

use std::time::Duration;

use opd_core::peer::Peer;
use opd_core::Asset;
use opd_ilp::packet::{Packet, Prepare};
use opd_ilp::stream::sender::{self, Answer, MaxPacket, RateBounds};
use opd_ilp::{Frame, IlpAddress, StreamPacket};

use crate::{interledger::connector, ServiceError, Services};

/// An incoming payment's ILP address and STREAM secret.
#[derive(Clone, PartialEq, Eq)]
pub struct IlpDestination {
    pub address: IlpAddress,
    pub shared_secret: [u8; 32],
}

impl std::fmt::Debug for IlpDestination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IlpDestination")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// How long a probe may take.
const PROBE_TTL_MS: i64 = 10_000;

/// How long what a probe found is used for other quotes and payments on
/// the same path (by the server's clock).
pub const PATH_TTL: Duration = Duration::from_secs(5);

/// What a probe found, and when.
#[derive(Debug, Clone)]
pub struct KeptPath {
    at: opd_core::Timestamp,
    probe: PathProbe,
}

/// A path: the peer, the receiver's server, the sender's asset and the
/// receiver's.
pub type PathKey = (opd_core::PeerId, String, Asset, Asset);

fn path_key(
    peer: opd_core::PeerId,
    source: &Asset,
    receiving: &Asset,
    receiver: &IlpDestination,
) -> PathKey {
    let address = receiver.address.as_str();
    let server = address
        .rsplit_once('.')
        .map_or(address, |(server, _)| server);
    (peer, server.to_owned(), source.clone(), receiving.clone())
}

/// Forgets what was found on the path to `receiver` (receiving in
/// `receiving`): the next quote or payment step probes it again.
pub(crate) fn forget_path(
    services: &Services,
    peer: &Peer,
    source: &Asset,
    receiving: &Asset,
    receiver: &IlpDestination,
) {
    let key = path_key(peer.id, source, receiving, receiver);
    services.interledger.paths.remove(&key);
}

/// What probing found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathProbe {
    /// Receiver units per sender unit, end to end.
    pub rate: RateBounds,
    /// The largest packet the path carries, in sender units.
    pub max_packet: MaxPacket,
    /// The receiver's asset as its STREAM receiver states it, if it did.
    pub receiver_asset: Option<(String, u8)>,
}

/// The peer packets to `destination` go to.
pub async fn next_peer(services: &Services, destination: &str) -> Result<Peer, ServiceError> {
    connector::route_except(services, destination, None)
        .await?
        .ok_or_else(|| ServiceError::InvalidReceiver("no Interledger route to the receiver".into()))
}

/// `amount` of `from` in the peer's asset, rounded down.
pub(crate) async fn to_peer_units(
    services: &Services,
    from: &Asset,
    peer: &Peer,
    amount: u64,
) -> Result<Option<u64>, ServiceError> {
    if *from == peer.asset {
        return Ok(Some(amount));
    }
    let rate = services.pricing.rate(from, &peer.asset).await?;
    Ok(rate
        .convert_floor(amount, from.scale, peer.asset.scale)
        .ok())
}

/// A STREAM request in a Prepare to `receiver`; `fulfillable` makes its
/// condition the one the receiver can fulfill, else a random one.
pub(crate) fn stream_prepare(
    services: &Services,
    receiver: &IlpDestination,
    amount: u64,
    request: &StreamPacket,
    fulfillable: bool,
    ttl_ms: i64,
) -> Result<Prepare, ServiceError> {
    let mut iv = [0u8; 12];
    services.random.fill(&mut iv);
    let data = request
        .encrypt_with(&receiver.shared_secret, iv)
        .map_err(|e| ServiceError::Internal(format!("STREAM request: {e}")))?;
    let execution_condition = if fulfillable {
        opd_ilp::condition_for(&receiver.shared_secret, &data)
    } else {
        let mut c = [0u8; 32];
        services.random.fill(&mut c);
        c
    };
    let expires_at =
        opd_ilp::Timestamp::from_unix_millis(services.clock.now().unix_millis() + ttl_ms)
            .ok_or_else(|| ServiceError::Internal("packet expiry out of range".into()))?;
    Ok(Prepare {
        amount,
        expires_at,
        execution_condition,
        destination: receiver.address.clone(),
        data,
    })
}

/// Sends a Prepare to `peer`; its answer (a transport failure is a T01
/// from this server, as the connector reports it).
pub(crate) async fn send(
    services: &Services,
    peer: &Peer,
    prepare: &Prepare,
    wait: Duration,
) -> Result<Result<opd_ilp::packet::Fulfill, opd_ilp::packet::Reject>, ServiceError> {
    let unreachable = |message: String| {
        Err(opd_ilp::packet::Reject {
            code: opd_ilp::ErrorCode::T01_PEER_UNREACHABLE,
            triggered_by: Some(services.config.ilp_address.clone()),
            message,
            data: Vec::new(),
        })
    };
    Ok(
        match connector::send(services, peer, prepare.encode(), wait).await {
            Ok(bytes) => match Packet::decode(&bytes) {
                Ok(Packet::Fulfill(f)) => Ok(f),
                Ok(Packet::Reject(r)) => Err(r),
                _ => unreachable("the peer answered something that is no ILP reply".into()),
            },
            Err(e) => unreachable(e),
        },
    )
}

/// What the path from `source` (the sender's asset) to `receiver`
/// (receiving in `receiving`, as its incoming payment says) carries: kept
/// from a probe of the last [`PATH_TTL`], or probed now.
pub async fn probe(
    services: &Services,
    source: &Asset,
    receiving: &Asset,
    receiver: &IlpDestination,
) -> Result<PathProbe, ServiceError> {
    let peer = next_peer(services, receiver.address.as_str()).await?;
    let key = path_key(peer.id, source, receiving, receiver);
    let now = services.clock.now();
    let ttl_ms = opd_core::time::millis(PATH_TTL);
    if let Some(kept) = services.interledger.paths.get(&key) {
        let age = now.unix_millis().saturating_sub(kept.at.unix_millis());
        if (0..ttl_ms).contains(&age) {
            return Ok(kept.probe);
        }
    }
    let probe = probe_now(services, &peer, source, receiver).await?;
    let kept = KeptPath {
        at: now,
        probe: probe.clone(),
    };
    services.interledger.paths.insert(key, kept);
    Ok(probe)
}

/// Probes the path now, whatever was kept: for a caller to whom the kept
/// probe said no (a kept rate may be older than a better one).
pub async fn probe_again(
    services: &Services,
    source: &Asset,
    receiving: &Asset,
    receiver: &IlpDestination,
) -> Result<PathProbe, ServiceError> {
    let peer = next_peer(services, receiver.address.as_str()).await?;
    forget_path(services, &peer, source, receiving, receiver);
    probe(services, source, receiving, receiver).await
}

/// Probes the path through `peer` now: sends the probes at once, reads
/// each answer, and learns from them all ([`learned`]).
async fn probe_now(
    services: &Services,
    peer: &Peer,
    source: &Asset,
    receiver: &IlpDestination,
) -> Result<PathProbe, ServiceError> {
    let probes = probe_packets(services, peer, source, receiver).await?;
    let wait = Duration::from_millis(PROBE_TTL_MS as u64);
    let answers = futures_util::future::join_all(
        probes
            .iter()
            .map(|(_, _, prepare)| send(services, peer, prepare, wait)),
    )
    .await;
    let mut read = Vec::with_capacity(probes.len());
    for ((sequence, amount, prepare), answer) in probes.iter().zip(answers) {
        let answer = answer?;
        let condition = &prepare.execution_condition;
        let secret = &receiver.shared_secret;
        let answer = sender::read_answer(secret, *sequence, condition, answer.as_ref());
        read.push((*amount, answer));
    }
    learned(read)
}

/// The probes: each amount of [`sender::probe_amounts`] that has a value
/// in the peer's asset, with its STREAM sequence and its (unfulfillable)
/// Prepare.
async fn probe_packets(
    services: &Services,
    peer: &Peer,
    source: &Asset,
    receiver: &IlpDestination,
) -> Result<Vec<(u64, u64, Prepare)>, ServiceError> {
    let mut probes = Vec::new();
    for (i, amount) in sender::probe_amounts(MaxPacket::Unknown).enumerate() {
        let sequence = i as u64 + 1;
        let Some(units) = to_peer_units(services, source, peer, amount).await? else {
            continue;
        };
        let request = sender::probe_request(sequence);
        let prepare = stream_prepare(services, receiver, units, &request, false, PROBE_TTL_MS)?;
        probes.push((sequence, amount, prepare));
    }
    Ok(probes)
}

/// What the answers to probes (each with its amount in source units) say
/// of the path: the rate from every refusal that came from the receiver,
/// the largest packet from every F08, the receiver's asset if it stated
/// it. Without any answer from the receiver, it cannot be reached (the
/// first error code says why).
fn learned(answers: Vec<(u64, Answer)>) -> Result<PathProbe, ServiceError> {
    let bounds = |amount, received| {
        RateBounds::from_probe(amount, received)
            .ok_or_else(|| ServiceError::Internal("bounds".into()))
    };
    let mut found = PathProbe {
        rate: bounds(1, 0)?,
        max_packet: MaxPacket::Unknown,
        receiver_asset: None,
    };
    let mut answered = false;
    let mut failure = None;
    for (amount, answer) in answers {
        match answer {
            // Probes are unfulfillable: only a reply that decrypts tells
            // anything, and it comes from the receiver, whose word about
            // what reached it is all a probe can learn.
            Answer::Refused {
                received, frames, ..
            } => {
                // Only the largest packets tell the rate precisely; the
                // bounds of every answer are combined.
                found.rate = if answered {
                    found.rate.narrow(amount, received)
                } else {
                    bounds(amount, received)?
                };
                answered = true;
                for f in frames {
                    if let Frame::ConnectionAssetDetails {
                        source_asset_code,
                        source_asset_scale,
                    } = f
                    {
                        found.receiver_asset = Some((source_asset_code, source_asset_scale));
                    }
                }
            }
            Answer::TooLarge(data) => {
                found.max_packet = found.max_packet.learn(amount, data.as_ref())
            }
            Answer::Temporary(code) | Answer::Failed(code) => {
                failure.get_or_insert(code);
            }
            // A Fulfill of an unfulfillable probe is no answer at all.
            Answer::Fulfilled { .. } | Answer::Forged => {
                failure.get_or_insert(opd_ilp::ErrorCode::F05_WRONG_CONDITION);
            }
        }
    }
    if !answered {
        let code = failure.map(|c| c.as_str().to_owned()).unwrap_or_default();
        return Err(ServiceError::InvalidReceiver(format!(
            "the receiver could not be reached over Interledger ({code})"
        )));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_one_peer_one_server_and_one_asset_pair() {
        let at = opd_core::Timestamp::from_unix_millis(1);
        let peer = opd_core::PeerId::new(at, &opd_core::SeededRandom::new(1));
        let other_peer = opd_core::PeerId::new(at, &opd_core::SeededRandom::new(2));
        let usd = Asset::parse("USD", 2).unwrap();
        let eur = Asset::parse("EUR", 2).unwrap();
        let key = |peer, receiving: &Asset, address: &str| {
            let to = IlpDestination {
                address: IlpAddress::new(address).unwrap(),
                shared_secret: [0; 32],
            };
            path_key(peer, &usd, receiving, &to)
        };
        // Two payments at one server, in one asset: one path.
        assert_eq!(key(peer, &eur, "test.b.abc"), key(peer, &eur, "test.b.xyz"));
        // Another asset at that server, another server, another peer:
        // another path.
        assert_ne!(key(peer, &eur, "test.b.abc"), key(peer, &usd, "test.b.abc"));
        assert_ne!(key(peer, &eur, "test.b.abc"), key(peer, &eur, "test.c.abc"));
        assert_ne!(
            key(peer, &eur, "test.b.abc"),
            key(other_peer, &eur, "test.b.abc")
        );
    }

    #[test]
    fn a_destination_shows_its_address_and_never_its_secret() {
        let to = IlpDestination {
            address: IlpAddress::new("test.b.abc").unwrap(),
            shared_secret: [0xAB; 32],
        };
        let shown = format!("{to:?}");
        assert!(shown.contains("test.b.abc"), "{shown}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(!shown.to_lowercase().contains("ab, ab"), "{shown}");
        assert!(!shown.contains("171"), "the secret's bytes: {shown}");
    }

    fn refused(received: u64, frames: Vec<Frame>) -> Answer {
        Answer::Refused {
            code: opd_ilp::ErrorCode::F99_APPLICATION_ERROR,
            received,
            frames,
        }
    }

    fn unreachable(answers: Vec<(u64, Answer)>) -> String {
        match learned(answers) {
            Err(ServiceError::InvalidReceiver(why)) => why,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn probes_give_the_rate_the_largest_packet_and_the_receivers_asset() {
        let details = Frame::ConnectionAssetDetails {
            source_asset_code: "EUR".into(),
            source_asset_scale: 2,
        };
        let too_large = opd_ilp::AmountTooLarge {
            received_amount: 1_000_000,
            maximum_amount: 1_000,
        };
        let found = learned(vec![
            (1_000_000_000, Answer::TooLarge(Some(too_large))),
            (1_000, refused(900, vec![details])),
            (100, refused(90, Vec::new())),
            (
                10,
                Answer::Temporary(opd_ilp::ErrorCode::T04_INSUFFICIENT_LIQUIDITY),
            ),
        ])
        .unwrap();
        // 900 of 1000 and 90 of 100: at least 0.9, below 0.901.
        let bounds = RateBounds::from_probe(1_000, 900).unwrap();
        assert_eq!(found.rate, bounds);
        assert_eq!(found.max_packet, MaxPacket::Precise(1_000_000));
        assert_eq!(found.receiver_asset, Some(("EUR".to_owned(), 2)));
    }

    #[test]
    fn one_refusal_is_enough_even_of_nothing() {
        let found = learned(vec![(1, refused(0, Vec::new()))]).unwrap();
        assert_eq!(found.rate, RateBounds::from_probe(1, 0).unwrap());
        assert_eq!(found.max_packet, MaxPacket::Unknown);
        assert_eq!(found.receiver_asset, None);
    }

    #[test]
    fn without_the_receivers_word_the_path_is_unreachable() {
        assert_eq!(
            unreachable(Vec::new()),
            "the receiver could not be reached over Interledger ()"
        );
        // The first error says why; a fulfilled probe is no answer (F05).
        let answers = vec![
            (1_000, Answer::Forged),
            (100, Answer::Failed(opd_ilp::ErrorCode::F02_UNREACHABLE)),
            (10, Answer::TooLarge(None)),
        ];
        assert_eq!(
            unreachable(answers),
            "the receiver could not be reached over Interledger (F05)"
        );
        let answers = vec![(1, Answer::Failed(opd_ilp::ErrorCode::F02_UNREACHABLE))];
        assert!(unreachable(answers).ends_with("(F02)"));
    }
}
