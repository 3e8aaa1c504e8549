//! The queue alone, in front of a stand-in for the store: which packets
//! share a transaction, what each caller is answered, and how long a
//! queued packet waits. Time is tokio's paused clock and a manual one, so
//! nothing here sleeps.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opd_core::clock::ManualClock;
use opd_core::ledger::Receipts;
use opd_core::money::Asset;
use opd_core::peer::{Peer, PeerOrigin};
use opd_core::tenant::TenantId;
use opd_core::wallet_address::{WalletAddress, WalletAddressPath};
use opd_core::{IncomingPaymentId, PeerId, Timestamp, WalletAddressId};
use opd_store::{CreditTo, IlpCredit, IlpReceive};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use super::{CreditQueue, Groups, MAX_GROUP};
use crate::ServiceError;

const START: i64 = 1_800_000_000_000;

/// How the stand-in answers a group.
#[derive(Clone, Copy)]
enum Answer {
    /// One credit per packet, naming the packet's amount.
    Each,
    /// One credit fewer than packets.
    Short,
    /// The transaction fails.
    Fail,
}

/// Records each group it is given (as the packets' amounts) and answers
/// once the test lets it through its gate.
struct Fake {
    groups: Mutex<Vec<Vec<u64>>>,
    gate: Semaphore,
    answer: Answer,
}

#[async_trait::async_trait]
impl Groups for Arc<Fake> {
    async fn credit_group(
        &self,
        _peer: &Peer,
        receives: &[IlpReceive],
        _wallet: &WalletAddress,
    ) -> Result<Vec<IlpCredit>, ServiceError> {
        let amounts: Vec<u64> = receives.iter().map(|r| r.amount).collect();
        self.groups.lock().unwrap().push(amounts.clone());
        self.gate.acquire().await.expect("gate open").forget();
        let credits = amounts.iter().map(|a| IlpCredit::ToWallet {
            receipt_total: Some(u128::from(*a)),
        });
        match self.answer {
            Answer::Each => Ok(credits.collect()),
            Answer::Short => Ok(credits.skip(1).collect()),
            Answer::Fail => Err(ServiceError::Unavailable("the database went away".into())),
        }
    }
}

struct Setup {
    queue: Arc<CreditQueue>,
    fake: Arc<Fake>,
}

/// A queue whose stand-in answers `answer`, letting `open` groups
/// through at once.
fn setup(answer: Answer, open: usize) -> Setup {
    let fake = Arc::new(Fake {
        groups: Mutex::default(),
        gate: Semaphore::new(open),
        answer,
    });
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(START)));
    let queue = CreditQueue::with_groups(Box::new(fake.clone()), clock);
    Setup {
        queue: Arc::new(queue),
        fake,
    }
}

impl Setup {
    /// A packet of `amount` to the one incoming payment, due `millis`
    /// after the start, credited in a task of its own.
    fn send(&self, amount: u64, millis: i64) -> JoinHandle<Result<IlpCredit, ServiceError>> {
        let queue = self.queue.clone();
        tokio::spawn(async move {
            let receive = IlpReceive {
                to: CreditTo::Incoming(id(IncomingPaymentId::parse)),
                amount,
                deliver: amount,
                receipts: Receipts::ToWallet,
                receipt_connection: None,
                at: Timestamp::from_unix_millis(START),
                deadline: Timestamp::from_unix_millis(START + millis),
            };
            queue.credit(&peer(), receive, &wallet()).await
        })
    }

    fn groups(&self) -> Vec<Vec<u64>> {
        self.fake.groups.lock().unwrap().clone()
    }

    /// Lets the tasks run until the stand-in holds `n` groups.
    async fn until_groups(&self, n: usize) {
        for _ in 0..1000 {
            if self.groups().len() >= n {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("{n} groups never came: {:?}", self.groups());
    }
}

fn id<T>(parse: fn(&str) -> Option<T>) -> T {
    parse("01900000-0000-7000-8000-000000000001").expect("an id")
}

fn usd() -> Asset {
    Asset::parse("USD", 2).expect("asset")
}

fn peer() -> Peer {
    let at = Timestamp::from_unix_millis(START);
    Peer {
        id: id(PeerId::parse),
        name: "upstream".into(),
        static_ilp_address: "test.upstream".into(),
        asset: usd(),
        max_packet_amount: None,
        routes: Vec::new(),
        outgoing: None,
        liquidity_low: None,
        liquidity_high: None,
        incoming_tokens: 1,
        created_by: PeerOrigin::Operator,
        created_at: at,
        updated_at: at,
    }
}

fn wallet() -> WalletAddress {
    WalletAddress {
        id: id(WalletAddressId::parse),
        tenant: TenantId::operator(),
        path: WalletAddressPath::parse("bob").expect("path"),
        asset: usd(),
        public_name: None,
        created_at: Timestamp::from_unix_millis(START),
        deactivated_at: None,
    }
}

fn to_wallet(amount: u64) -> IlpCredit {
    IlpCredit::ToWallet {
        receipt_total: Some(u128::from(amount)),
    }
}

async fn answers(tasks: Vec<JoinHandle<Result<IlpCredit, ServiceError>>>) -> Vec<String> {
    let mut out = Vec::new();
    for task in tasks {
        out.push(match task.await.expect("no panic") {
            Ok(credit) => format!("{credit:?}"),
            Err(e) => format!("error: {e}"),
        });
    }
    out
}

#[tokio::test(start_paused = true)]
async fn packets_arriving_together_share_one_transaction_and_get_their_own_answers() {
    let s = setup(Answer::Each, 100);
    let tasks: Vec<_> = (1..=5).map(|a| s.send(a, 60_000)).collect();
    let got = answers(tasks).await;
    let want: Vec<String> = (1..=5).map(|a| format!("{:?}", to_wallet(a))).collect();
    assert_eq!(got, want);
    assert_eq!(s.groups(), vec![vec![1, 2, 3, 4, 5]]);
    assert_eq!(s.queue.waiting(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_transaction_carries_at_most_max_group_packets() {
    let s = setup(Answer::Each, 100);
    let count = MAX_GROUP as u64 + 6;
    let tasks: Vec<_> = (1..=count).map(|a| s.send(a, 60_000)).collect();
    let got = answers(tasks).await;
    assert!(got.iter().all(|a| a.starts_with("ToWallet")), "{got:?}");
    let sizes: Vec<usize> = s.groups().iter().map(Vec::len).collect();
    assert_eq!(sizes, vec![MAX_GROUP, 6]);
}

#[tokio::test(start_paused = true)]
async fn packets_arriving_during_a_transaction_wait_and_then_go_together() {
    let s = setup(Answer::Each, 0);
    let first = s.send(1, 60_000);
    s.until_groups(1).await;
    let later: Vec<_> = (2..=4).map(|a| s.send(a, 60_000)).collect();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(s.queue.waiting(), 3);
    assert!(format!("{:?}", s.queue).contains("waiting: 3"));
    s.fake.gate.add_permits(2);
    assert_eq!(answers(vec![first]).await, [format!("{:?}", to_wallet(1))]);
    assert_eq!(answers(later).await.len(), 3);
    assert_eq!(s.groups(), vec![vec![1], vec![2, 3, 4]]);
    assert_eq!(s.queue.waiting(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_short_answer_from_the_store_fails_every_packet_of_the_group() {
    let s = setup(Answer::Short, 100);
    let tasks: Vec<_> = (1..=3).map(|a| s.send(a, 60_000)).collect();
    let got = answers(tasks).await;
    assert_eq!(s.groups(), vec![vec![1, 2, 3]]);
    for answer in &got {
        assert!(answer.contains("another number of packets"), "{got:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_transaction_fails_every_packet_of_the_group_with_its_reason() {
    let s = setup(Answer::Fail, 100);
    let tasks: Vec<_> = (1..=3).map(|a| s.send(a, 60_000)).collect();
    let got = answers(tasks).await;
    assert_eq!(s.groups(), vec![vec![1, 2, 3]]);
    for answer in &got {
        assert!(answer.contains("the database went away"), "{got:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_packet_whose_deadline_passes_in_the_queue_leaves_it_expired_and_alone() {
    let s = setup(Answer::Each, 0);
    let first = s.send(1, 60_000);
    s.until_groups(1).await;
    let started = tokio::time::Instant::now();
    let hurried = s.send(2, 100);
    let patient = s.send(3, 60_000);
    let got = answers(vec![hurried]).await;
    assert_eq!(got, [format!("{:?}", IlpCredit::Expired)]);
    assert_eq!(started.elapsed(), Duration::from_millis(100));
    assert_eq!(s.queue.waiting(), 1, "only the expired packet left");
    s.fake.gate.add_permits(2);
    assert_eq!(answers(vec![first]).await, [format!("{:?}", to_wallet(1))]);
    assert_eq!(
        answers(vec![patient]).await,
        [format!("{:?}", to_wallet(3))]
    );
    assert_eq!(
        s.groups(),
        vec![vec![1], vec![3]],
        "the expired packet is never credited"
    );
}
