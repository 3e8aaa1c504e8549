//! A connection's proof that its client holds the admin credential.
//!
//! The admin listener (`opd::admin_listener`) puts a [`Proof`] of the
//! connection in every request's extensions; the checks here set it once a
//! request carries the admin token (the API's bearer token, or the
//! dashboard's sign-in form) or a live dashboard session. On loopback every
//! local process has the operator's address, so this proof, not the
//! address, is what tells the operator's connections from a flood: the
//! listener never closes a proven connection to make room for another.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::http::Extensions;

/// Whether a request on one connection carried a valid admin credential.
#[derive(Clone, Debug, Default)]
pub struct Proof(Arc<AtomicBool>);

impl Proof {
    /// A connection nothing has proven yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a request on the connection carried a valid credential.
    #[must_use]
    pub fn is_proven(&self) -> bool {
        // A flag read on its own, guarding no other data: relaxed suffices.
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn prove(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Marks the connection of the request with these `extensions` as proven
/// (when its listener keeps a [`Proof`]; tests' routers do not).
pub(crate) fn prove(extensions: &Extensions) {
    if let Some(proof) = extensions.get::<Proof>() {
        proof.prove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_is_shared_by_the_clones_a_connection_hands_its_requests() {
        let proof = Proof::new();
        let mut extensions = Extensions::new();
        extensions.insert(proof.clone());
        assert!(!proof.is_proven());
        prove(&extensions);
        assert!(proof.is_proven());
        // Requests without a proof (routers served elsewhere) are untouched.
        prove(&Extensions::new());
    }
}
