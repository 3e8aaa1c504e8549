//! Identifiers. Resource ids are UUIDv7 built from the injected clock and
//! random source: unique, unguessable (74 random bits) and ordered by
//! creation time, which makes them usable directly as pagination cursors.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use uuid::Uuid;

use crate::clock::Random;
use crate::time::Timestamp;

/// The last (milliseconds << 12 | sequence) handed out in this process.
static LAST_V7: AtomicU64 = AtomicU64::new(0);

/// Makes a new time-ordered id: UUIDv7 whose 12-bit `rand_a` field is a
/// sequence number, so ids made by one process are strictly increasing even
/// within one millisecond (or when the clock steps back); the remaining 62
/// bits are random.
pub fn new_uuid_v7(now: Timestamp, random: &dyn Random) -> Uuid {
    let now_ms = u64::try_from(now.unix_millis()).unwrap_or(0) & 0xFFFF_FFFF_FFFF;
    let mut prev = LAST_V7.load(Ordering::Relaxed);
    let next = loop {
        let candidate = (now_ms << 12).max(prev + 1);
        match LAST_V7.compare_exchange_weak(prev, candidate, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => break candidate,
            Err(actual) => prev = actual,
        }
    };
    let ms = next >> 12;
    let seq = (next & 0xFFF) as u16;
    let mut r = [0u8; 8];
    random.fill(&mut r);
    let mut b = [0u8; 16];
    b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    b[6] = 0x70 | (seq >> 8) as u8;
    b[7] = (seq & 0xFF) as u8;
    b[8] = 0x80 | (r[0] & 0x3F);
    b[9..].copy_from_slice(&r[1..]);
    Uuid::from_bytes(b)
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Uuid);

        impl $name {
            pub fn new(now: Timestamp, random: &dyn Random) -> Self {
                Self(new_uuid_v7(now, random))
            }

            /// Parses the hyphenated form; any other text is not an id.
            pub fn parse(s: &str) -> Option<Self> {
                if s.len() != 36 {
                    return None;
                }
                Uuid::try_parse(s).ok().map(Self)
            }

            pub const fn from_uuid(u: Uuid) -> Self {
                Self(u)
            }

            pub const fn as_uuid(&self) -> &Uuid {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0.hyphenated(), f)
            }
        }
    };
}

id_type!(
    /// A wallet address's internal id (used by the admin API).
    WalletAddressId
);
id_type!(
    /// An incoming payment id: the last segment of its URL.
    IncomingPaymentId
);
id_type!(
    /// A quote id: the last segment of its URL.
    QuoteId
);
id_type!(
    /// An outgoing payment id.
    OutgoingPaymentId
);
id_type!(
    /// A GNAP grant id.
    GrantId
);
id_type!(
    /// An Interledger peer's id (admin API).
    PeerId
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SeededRandom;

    #[test]
    fn ids_are_time_ordered_and_round_trip() {
        let r = SeededRandom::new(7);
        let a = QuoteId::new(Timestamp::from_unix_millis(1_000), &r);
        let b = QuoteId::new(Timestamp::from_unix_millis(2_000), &r);
        assert!(a < b);
        assert!(a.to_string() < b.to_string());
        assert_eq!(QuoteId::parse(&a.to_string()), Some(a));
        assert_eq!(QuoteId::parse("not-a-uuid"), None);
        assert_eq!(QuoteId::parse(&a.as_uuid().simple().to_string()), None);
        assert_eq!(a.as_uuid().get_version_num(), 7);
        // 600 in one millisecond cross a 256 boundary of the 12-bit
        // sequence that is not a 4096 one, so its high bits must be kept.
        let same_ms: Vec<QuoteId> = (0..600)
            .map(|_| QuoteId::new(Timestamp::from_unix_millis(3_000), &r))
            .collect();
        assert!(
            same_ms.windows(2).all(|w| w[0] < w[1]),
            "strictly increasing within one millisecond"
        );
    }

    #[test]
    fn v7_layout_carries_the_time_and_the_variant() {
        let r = SeededRandom::new(9);
        // Later than any other test's clock (the sequence is per process),
        // within the 48 bits of the time field.
        let ms: u64 = 0xF000_0000_0000;
        let at = Timestamp::from_unix_millis(ms as i64);
        for _ in 0..64 {
            let bytes = *new_uuid_v7(at, &r).as_bytes();
            let mut time = [0u8; 8];
            time[2..].copy_from_slice(&bytes[..6]);
            assert_eq!(u64::from_be_bytes(time), ms);
            assert_eq!(bytes[6] >> 4, 7, "version 7");
            assert_eq!(bytes[8] >> 6, 0b10, "RFC 9562 variant");
        }
    }
}
