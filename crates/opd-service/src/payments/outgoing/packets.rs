//! One round of STREAM packets for a remote payment: sized from the probed
//! path and the quote's rate, recorded before they go, sent up to four at
//! once, and each settled once by its answer, which is trusted only as far
//! as it proves (see `super::remote` for the rules). What the sizes are and
//! what each answer means is decided in `super::sizing`; this file reads
//! rates, records, sends and settles.

use opd_core::outgoing_payment::OutgoingPayment;
use opd_core::quote::Quote;
use opd_core::Timestamp;
use opd_ilp::packet::{Fulfill, Prepare, Reject};
use opd_ilp::stream::sender::{self, Answer, Ratio};
use opd_store::PaymentPacket;

use super::lifecycle::{self, Step};
use super::sizing::{end_after, End, Outcome, Size, Sizing, UNDELIVERABLE};
use crate::interledger::paths::IlpDestination;
use crate::interledger::paths::{self, PathProbe};
use crate::{ServiceError, Services};

/// What a step starts from: the path as probed, the quote's rate, what the
/// receiver still expects and how many packets the step may send.
pub(super) struct Plan {
    pub(super) probe: PathProbe,
    pub(super) rate: Ratio,
    pub(super) left: u64,
    pub(super) allowance: usize,
}

/// One packet of a round: its size, its record, its Prepare and its
/// STREAM sequence.
struct Planned {
    size: Size,
    packet: PaymentPacket,
    prepare: Prepare,
    sequence: u64,
}

/// A packet's answer (or its failure to arrive), and when it came.
type Arrived = (Result<Result<Fulfill, Reject>, ServiceError>, Timestamp);

/// The sending state of one step: what it sends through, and its
/// [`Sizing`].
struct Sending<'a> {
    services: &'a Services,
    p: &'a OutgoingPayment,
    receiver: &'a IlpDestination,
    peer: opd_core::peer::Peer,
    sizing: Sizing,
    sequence: u64,
}

impl Sending<'_> {
    /// The packets of `sizes`, in the peer's units, each with its record
    /// and Prepare; fewer when an amount has no value in the peer's asset.
    async fn prepare(&mut self, sizes: Vec<Size>) -> Result<Vec<Planned>, ServiceError> {
        let mut round = Vec::new();
        for size in sizes {
            let (asset, amount) = (&self.p.debit.asset, size.amount);
            let Some(peer_amount) =
                paths::to_peer_units(self.services, asset, &self.peer, amount).await?
            else {
                break;
            };
            self.sequence += 1;
            let request = sender::money_request(self.sequence, size.min_delivery);
            let ttl_ms = packet_ttl_ms(self.services);
            let prepare = paths::stream_prepare(
                self.services,
                self.receiver,
                peer_amount,
                &request,
                true,
                ttl_ms,
            )?;
            let now = self.services.clock.now();
            let packet = PaymentPacket {
                id: opd_core::ids::new_uuid_v7(now, self.services.random.as_ref()).to_string(),
                payment: self.p.id,
                peer: self.peer.id,
                source_asset: self.p.debit.asset.clone(),
                source_amount: amount,
                peer_asset: self.peer.asset.clone(),
                peer_amount,
                min_delivery: size.min_delivery,
                expires_at: now.plus_millis(ttl_ms),
                created_at: now,
            };
            round.push(Planned {
                size,
                packet,
                prepare,
                sequence: self.sequence,
            });
        }
        Ok(round)
    }

    /// Records the round's packets before they go; `false` when the
    /// payment ended meanwhile (cancelled by the operator: what was
    /// recorded is settled as its answers come).
    async fn record(&self, round: &[Planned]) -> Result<bool, ServiceError> {
        for planned in round {
            if !self.services.store.packet_sending(&planned.packet).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Sends the round's packets at once; each answer with the time it
    /// arrived: one that comes after its packet expired proves nothing the
    /// sender must pay for.
    async fn send(&self, round: &[Planned]) -> Vec<Arrived> {
        let wait = self.services.config.ilp.packet_timeout;
        futures_util::future::join_all(round.iter().map(|planned| async {
            let answer = paths::send(self.services, &self.peer, &planned.prepare, wait).await;
            (answer, self.services.clock.now())
        }))
        .await
    }

    /// Settles every packet of the round by its answer, before the step
    /// decides; how the round ends the step, and whether it moved money.
    async fn settle(
        &mut self,
        round: &[Planned],
        answers: Vec<Arrived>,
    ) -> Result<(Option<End>, bool), ServiceError> {
        let (mut end, mut progress) = (None, false);
        for (planned, (answer, arrived)) in round.iter().zip(answers) {
            let read = read_in_time(self.receiver, planned, &answer?, arrived);
            let at = self.services.clock.now();
            let outcome = self.sizing.outcome(planned.size, read);
            if std::mem::take(&mut self.sizing.path_changed) {
                let (source, receiving) = (&self.p.debit.asset, &self.p.receive.asset);
                paths::forget_path(self.services, &self.peer, source, receiving, self.receiver);
            }
            match outcome {
                Outcome::Delivered(delivered) | Outcome::Short(delivered) => {
                    self.services
                        .store
                        .packet_fulfilled(&planned.packet, delivered, at)
                        .await?;
                    self.sizing.count(planned.size.amount, delivered);
                }
                Outcome::Smaller | Outcome::Pause(_) | Outcome::Fail(_) => {
                    let id = &planned.packet.id;
                    self.services.store.packet_rejected(id, at).await?;
                }
            }
            progress |= matches!(outcome, Outcome::Delivered(d) if d > 0);
            end = end_after(end, outcome);
        }
        Ok((end, progress))
    }
}

/// What an answer proves: a fulfillment that came after its packet
/// expired is read as a timeout, since the sender owes nothing for it
/// (ILP's rule; the hop that answered late bears it).
fn read_in_time(
    receiver: &IlpDestination,
    planned: &Planned,
    answer: &Result<Fulfill, Reject>,
    arrived: Timestamp,
) -> Answer {
    if arrived >= planned.packet.expires_at && answer.is_ok() {
        return Answer::Temporary(opd_ilp::ErrorCode::R00_TRANSFER_TIMED_OUT);
    }
    sender::read_answer(
        &receiver.shared_secret,
        planned.sequence,
        &planned.prepare.execution_condition,
        answer.as_ref(),
    )
}

/// How long a packet of this server's may take, in milliseconds.
fn packet_ttl_ms(services: &Services) -> i64 {
    opd_core::time::millis(services.config.ilp.packet_timeout)
}

/// Sends rounds of packets until the receiver has what it expects, or the
/// step must end (see the module documentation).
pub(super) async fn send(
    services: &Services,
    p: &OutgoingPayment,
    quote: &Quote,
    receiver: &IlpDestination,
    plan: Plan,
) -> Result<Step, ServiceError> {
    let budget = quote.debit_minus_fees.saturating_sub(p.sent);
    let mut s = Sending {
        services,
        p,
        receiver,
        peer: paths::next_peer(services, receiver.address.as_str()).await?,
        sizing: Sizing::new(plan.probe, plan.rate, plan.left, budget),
        sequence: 100,
    };
    let (mut sent, mut progress) = (0, false);
    while s.sizing.left > 0 && sent < plan.allowance {
        let sizes = match s.sizing.round(plan.allowance - sent) {
            Ok(sizes) => sizes,
            Err(reason) => return lifecycle::fail_as_sent(services, p, reason.into()).await,
        };
        let round = s.prepare(sizes).await?;
        if round.is_empty() {
            return lifecycle::fail_as_sent(services, p, UNDELIVERABLE.into()).await;
        }
        if !s.record(&round).await? {
            return Ok(Step::Idle);
        }
        sent += round.len();
        let answers = s.send(&round).await;
        let (end, moved) = s.settle(&round, answers).await?;
        progress |= moved;
        match end {
            Some(End::Fail(reason)) => return lifecycle::fail_as_sent(services, p, reason).await,
            Some(End::Pause(why)) => return lifecycle::pause(services, p, &why).await,
            None => {}
        }
    }
    if s.sizing.left == 0 {
        return lifecycle::complete_as_sent(services, p, quote).await;
    }
    if !progress {
        // Nothing arrived this step: wait as after a temporary error,
        // rather than spin on a path that takes packets but moves nothing.
        return lifecycle::pause(services, p, "nothing was delivered").await;
    }
    // Other payments get their turn; this one is due again at once.
    services
        .store
        .release_outgoing_payment(p.id, services.clock.now())
        .await?;
    Ok(Step::Again(p.id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::{Asset, OutgoingPaymentId, PeerId, SeededRandom};
    use opd_ilp::{ErrorCode, IlpAddress};

    const EXPIRES: Timestamp = Timestamp::from_unix_millis(1_000_000);

    /// A packet expiring at [`EXPIRES`] whose condition `[7; 32]` fulfils.
    fn planned() -> Planned {
        let usd = Asset::parse("USD", 2).unwrap();
        let random = SeededRandom::new(1);
        let packet = PaymentPacket {
            id: "p1".into(),
            payment: OutgoingPaymentId::new(EXPIRES, &random),
            peer: PeerId::new(EXPIRES, &random),
            source_asset: usd.clone(),
            source_amount: 10,
            peer_asset: usd,
            peer_amount: 10,
            min_delivery: 10,
            expires_at: EXPIRES,
            created_at: EXPIRES.plus_millis(-30_000),
        };
        let prepare = Prepare {
            amount: 10,
            expires_at: opd_ilp::Timestamp::from_unix_millis(EXPIRES.unix_millis()).unwrap(),
            execution_condition: opd_ilp::condition_of(&[7; 32]),
            destination: IlpAddress::new("test.b.x").unwrap(),
            data: Vec::new(),
        };
        let size = Size {
            amount: 10,
            min_delivery: 10,
        };
        Planned {
            size,
            packet,
            prepare,
            sequence: 101,
        }
    }

    #[test]
    fn a_fulfillment_after_the_packets_expiry_proves_nothing() {
        let receiver = IlpDestination {
            address: IlpAddress::new("test.b.x").unwrap(),
            shared_secret: [1; 32],
        };
        let p = planned();
        let fulfill = Ok(Fulfill {
            fulfillment: [7; 32],
            data: Vec::new(),
        });
        let just_in_time = read_in_time(&receiver, &p, &fulfill, EXPIRES.plus_millis(-1));
        let counted = Answer::Fulfilled {
            claimed: None,
            frames: Vec::new(),
        };
        assert_eq!(just_in_time, counted);
        let late = read_in_time(&receiver, &p, &fulfill, EXPIRES);
        assert_eq!(late, Answer::Temporary(ErrorCode::R00_TRANSFER_TIMED_OUT));
        // A reject is read as it is, late or not.
        let reject = Err(Reject {
            code: ErrorCode::F02_UNREACHABLE,
            triggered_by: None,
            message: String::new(),
            data: Vec::new(),
        });
        let late = read_in_time(&receiver, &p, &reject, EXPIRES.plus_millis(5));
        assert_eq!(late, Answer::Failed(ErrorCode::F02_UNREACHABLE));
    }
}
