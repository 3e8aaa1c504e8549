//! The documentation's walkthroughs, run verbatim as a person would: the
//! README's quickstart (one server, a payment approved on its consent
//! page) and the peering of two servers in `docs/peering.md` (a payment
//! across them, in another currency). [`person`] reads the commands from
//! the documents and plays the person. [`links`] keeps the README short
//! and every relative link of the documentation leading somewhere.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly by design"
)]

mod links;
mod peering;
mod person;
mod quickstart;
