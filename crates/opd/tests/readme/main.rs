//! The README's walkthroughs, run verbatim as a person would: the
//! quickstart (one server, a payment approved on its consent page) and
//! the peering of two servers (a payment across them, in another
//! currency). [`person`] reads the commands from the README and plays the
//! person.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly by design"
)]

mod peering;
mod person;
mod quickstart;
