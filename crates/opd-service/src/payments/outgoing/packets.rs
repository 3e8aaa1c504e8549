//! One round of STREAM packets for a remote payment: sized from the probed
//! path and the quote's rate, recorded before they go, sent up to four at
//! once, and each settled once by its answer, which is trusted only as far
//! as it proves (see `super::remote` for the rules).

use opd_core::outgoing_payment::OutgoingPayment;
use opd_core::quote::Quote;
use opd_ilp::stream::sender::{self, Answer, Delivery, Ratio};
use opd_store::PaymentPacket;

use super::lifecycle::{self, Step};
use crate::interledger::paths::IlpDestination;
use crate::interledger::paths::{self, PathProbe};
use crate::{ServiceError, Services};

/// Packets of one payment in flight at once.
const PACKETS_IN_FLIGHT: usize = 4;
/// Most times one step makes packets smaller (F08, or the receiver
/// refusing more than it still takes).
const MAX_SHRINKS: u32 = 8;

/// What a step starts from: the path as probed, the quote's rate, what the
/// receiver still expects and how many packets the step may send.
pub(super) struct Plan {
    pub(super) probe: PathProbe,
    pub(super) rate: Ratio,
    pub(super) left: u64,
    pub(super) allowance: usize,
}

/// What one packet's answer means for the step.
enum Outcome {
    /// `delivered` arrived.
    Delivered(u64),
    /// The packet was fulfilled, but the receiver claims less than the
    /// request's minimum: `delivered` (its clamped claim) is counted and
    /// the payment stops.
    Short(u64),
    /// Try a smaller packet.
    Smaller,
    /// Pause the payment (within its stall bounds), for this reason.
    Pause(String),
    /// Fail it, for this reason.
    Fail(String),
}

/// How a round ends the step, once all its packets are settled: a failure
/// wins over a pause.
enum End {
    Pause(String),
    Fail(String),
}

/// One packet of a round: its record, its Prepare and its STREAM sequence.
struct Planned {
    packet: PaymentPacket,
    prepare: opd_ilp::packet::Prepare,
    sequence: u64,
}

/// The sending state of one step.
struct Sending<'a> {
    services: &'a Services,
    p: &'a OutgoingPayment,
    receiver: &'a IlpDestination,
    peer: opd_core::peer::Peer,
    probe: PathProbe,
    rate: Ratio,
    /// What the receiver still expects, and what may still be sent.
    left: u64,
    budget: u64,
    /// The largest packet the receiver took lately (after it refused more
    /// than it still expects).
    cap: u64,
    shrinks: u32,
    sequence: u64,
}

impl Sending<'_> {
    /// The packets of the next round: up to [`PACKETS_IN_FLIGHT`], each
    /// within the path's largest packet, together expected (at the probed
    /// rate's low bound) to deliver what is left and no more.
    async fn plan(&mut self) -> Result<Vec<Planned>, ServiceError> {
        let (mut left, mut budget) = (self.left, self.budget);
        let mut round = Vec::new();
        while left > 0 && round.len() < PACKETS_IN_FLIGHT {
            let finishing = self.probe.rate.low.ceil_div(left).unwrap_or(u64::MAX);
            let amount = finishing
                .min(self.probe.max_packet.limit())
                .min(budget)
                .min(self.cap);
            // The packet that finishes goes alone: sized by the rate's low
            // bound, it may deliver a unit more than planned, which the
            // receiver may refuse; full packets beside it cannot overshoot.
            if amount == 0 || (amount == finishing && !round.is_empty()) {
                break;
            }
            let min_delivery = sender::min_delivery(amount, self.rate)
                .unwrap_or(u64::MAX)
                .min(left);
            let Some(peer_amount) =
                paths::to_peer_units(self.services, &self.p.debit.asset, &self.peer, amount)
                    .await?
            else {
                break;
            };
            self.sequence += 1;
            let request = sender::money_request(self.sequence, min_delivery);
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
                min_delivery,
                expires_at: now.plus_millis(ttl_ms),
                created_at: now,
            };
            let expected = self.probe.rate.low.floor_mul(amount).unwrap_or(left);
            left = left.saturating_sub(expected.max(1));
            budget -= amount;
            round.push(Planned {
                packet,
                prepare,
                sequence: self.sequence,
            });
        }
        Ok(round)
    }

    /// The most a packet of `amount` source units can have delivered: its
    /// amount at the probed rate's high bound, and no more than the payment
    /// still expects.
    fn most(&self, amount: u64) -> u64 {
        let at_rate = self.probe.rate.high.ceil_mul(amount).unwrap_or(u64::MAX);
        at_rate.min(self.left)
    }

    /// Posts a fulfilled packet that counts `delivered`.
    async fn fulfilled(
        &mut self,
        planned: &Planned,
        delivered: u64,
        at: opd_core::Timestamp,
    ) -> Result<(), ServiceError> {
        self.services
            .store
            .packet_fulfilled(&planned.packet, delivered, at)
            .await?;
        self.left = self.left.saturating_sub(delivered);
        self.budget = self.budget.saturating_sub(planned.packet.source_amount);
        Ok(())
    }

    /// What was kept of the path no longer holds: the next quote or step
    /// probes it again.
    fn path_changed(&self) {
        let (source, receiving) = (&self.p.debit.asset, &self.p.receive.asset);
        paths::forget_path(self.services, &self.peer, source, receiving, self.receiver);
    }

    /// Whether the largest packet the path carries can deliver anything.
    fn path_too_narrow(&self) -> bool {
        let limit = self.probe.max_packet.limit();
        limit == 0 || self.probe.rate.low.floor_mul(limit) == Some(0)
    }

    /// What one answer means.
    fn outcome(&mut self, planned: &Planned, answer: Answer) -> Outcome {
        let amount = planned.packet.source_amount;
        match answer {
            Answer::Fulfilled { claimed, .. } => {
                let minimum = planned.packet.min_delivery;
                match sender::delivery(claimed, minimum, self.most(amount)) {
                    Delivery::Counted(delivered) => Outcome::Delivered(delivered),
                    Delivery::Short(delivered) => Outcome::Short(delivered),
                }
            }
            Answer::Forged => Outcome::Fail(
                "the next hop answered with a fulfillment that does not match the condition".into(),
            ),
            Answer::Refused { frames, .. }
                if frames
                    .iter()
                    .any(|f| matches!(f, opd_ilp::Frame::ConnectionClose { .. })) =>
            {
                // The receiver closed the connection (completed, expired):
                // the next step reads it again and ends the payment.
                Outcome::Pause("the receiver closed the connection".into())
            }
            Answer::Refused { received, .. } if received >= planned.packet.min_delivery => {
                // Enough arrived, yet the receiver refused: more than it
                // still takes. Smaller packets, a few times.
                self.cap = self.cap.min(amount.saturating_sub(1));
                self.shrinks += 1;
                if self.shrinks > MAX_SHRINKS {
                    Outcome::Fail("the receiver refuses what is left to deliver".into())
                } else {
                    Outcome::Smaller
                }
            }
            Answer::Refused { .. } => {
                self.path_changed();
                Outcome::Fail("the exchange rate to the receiver fell below the quoted rate".into())
            }
            Answer::TooLarge(data) => {
                self.path_changed();
                self.probe.max_packet = self.probe.max_packet.learn(amount, data.as_ref());
                self.shrinks += 1;
                if self.path_too_narrow() {
                    Outcome::Fail(
                        "the path's largest packet (F08) is too small to deliver anything".into(),
                    )
                } else if self.shrinks > MAX_SHRINKS {
                    // Packets made smaller each time, and the path still
                    // refuses them: no later step would do better.
                    Outcome::Fail("the path rejects every packet as too large".into())
                } else {
                    Outcome::Smaller
                }
            }
            Answer::Temporary(code) => Outcome::Pause(format!(
                "packets were rejected with {} (temporary)",
                code.as_str()
            )),
            Answer::Failed(code) => {
                Outcome::Fail(format!("the packet was rejected with {}", code.as_str()))
            }
        }
    }
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
    let mut s = Sending {
        services,
        p,
        receiver,
        peer: paths::next_peer(services, receiver.address.as_str()).await?,
        probe: plan.probe,
        rate: plan.rate,
        left: plan.left,
        budget: quote.debit_minus_fees.saturating_sub(p.sent),
        cap: u64::MAX,
        shrinks: 0,
        sequence: 100,
    };
    let mut sent = 0;
    let mut progress = false;
    while s.left > 0 && sent < plan.allowance {
        if s.path_too_narrow() {
            let reason = "the path's largest packet is too small to deliver anything";
            return lifecycle::fail_as_sent(services, p, reason.into()).await;
        }
        let mut round = s.plan().await?;
        round.truncate(plan.allowance - sent);
        if round.is_empty() {
            let reason = "the quoted amount cannot be delivered within the quoted debit";
            return lifecycle::fail_as_sent(services, p, reason.into()).await;
        }
        for planned in &round {
            if !services.store.packet_sending(&planned.packet).await? {
                // Ended meanwhile (cancelled by the operator); what was
                // recorded is settled as its answers come.
                return Ok(Step::Idle);
            }
        }
        sent += round.len();
        let wait = services.config.ilp.packet_timeout;
        // Each answer with the time it arrived: one that comes after its
        // packet expired proves nothing the sender must pay for.
        let answers = futures_util::future::join_all(round.iter().map(|planned| async {
            let answer = paths::send(services, &s.peer, &planned.prepare, wait).await;
            (answer, services.clock.now())
        }))
        .await;
        // Every packet of the round is settled before the step decides.
        let mut end = None;
        for (planned, (answer, arrived)) in round.iter().zip(answers) {
            let answer = answer?;
            let at = services.clock.now();
            let read = if arrived >= planned.packet.expires_at && answer.is_ok() {
                // Fulfilled too late: the packet had expired, so the
                // sender owes nothing for it (ILP's rule; the hop that
                // answered late bears it).
                Answer::Temporary(opd_ilp::ErrorCode::R00_TRANSFER_TIMED_OUT)
            } else {
                sender::read_answer(
                    &receiver.shared_secret,
                    planned.sequence,
                    &planned.prepare.execution_condition,
                    answer.as_ref(),
                )
            };
            match s.outcome(planned, read) {
                Outcome::Delivered(delivered) => {
                    s.fulfilled(planned, delivered, at).await?;
                    progress |= delivered > 0;
                }
                Outcome::Short(delivered) => {
                    s.fulfilled(planned, delivered, at).await?;
                    let reason = "the receiver accepted a packet while reporting less than its \
                                  minimum delivery";
                    end = Some(End::Fail(reason.into()));
                }
                Outcome::Smaller => {
                    services
                        .store
                        .packet_rejected(&planned.packet.id, at)
                        .await?;
                }
                Outcome::Pause(why) => {
                    services
                        .store
                        .packet_rejected(&planned.packet.id, at)
                        .await?;
                    end.get_or_insert(End::Pause(why));
                }
                Outcome::Fail(reason) => {
                    services
                        .store
                        .packet_rejected(&planned.packet.id, at)
                        .await?;
                    end = Some(End::Fail(reason));
                }
            }
        }
        match end {
            Some(End::Fail(reason)) => return lifecycle::fail_as_sent(services, p, reason).await,
            Some(End::Pause(why)) => return lifecycle::pause(services, p, &why).await,
            None => {}
        }
    }
    if s.left == 0 {
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
