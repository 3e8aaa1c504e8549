//! Identifiers. Resource ids are UUIDv7 built from the injected clock and
//! random source: unique, unguessable (74 random bits) and ordered by
//! creation time, which makes them usable directly as pagination cursors.

use std::fmt;

use uuid::Uuid;

use crate::clock::Random;
use crate::time::Timestamp;

/// Makes a new time-ordered id.
pub fn new_uuid_v7(now: Timestamp, random: &dyn Random) -> Uuid {
    let mut bytes = [0u8; 10];
    random.fill(&mut bytes);
    let millis = u64::try_from(now.unix_millis()).unwrap_or(0);
    uuid::Builder::from_unix_timestamp_millis(millis, &bytes).into_uuid()
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
    }
}
