//! What a person typing a wallet owner's password is told, on the consent
//! page and on the owner's own page alike: the same words for a wrong
//! password, a wallet address without one, and approval paused after too
//! many wrong ones anywhere.

use axum::http::StatusCode;
use opd_core::Timestamp;
use opd_service::grants::PasswordCheck;

/// Why a password was not taken: the status, the sentence shown above the
/// form, and when to come back (`Retry-After`, seconds).
pub(crate) struct Refusal {
    pub status: StatusCode,
    pub message: String,
    pub retry_after: Option<u64>,
}

/// The refusal the in-memory slowdown gives: wait `secs`.
pub(crate) fn too_many(secs: u64) -> Refusal {
    Refusal {
        status: StatusCode::TOO_MANY_REQUESTS,
        message: format!("Too many wrong passwords. Try again in {secs} seconds."),
        retry_after: Some(secs),
    }
}

/// `Ok` for the owner's password, else what to say.
pub(crate) fn judged(check: PasswordCheck, now: Timestamp) -> Result<(), Refusal> {
    let refusal = |status, message: &str| Refusal {
        status,
        message: message.to_owned(),
        retry_after: None,
    };
    match check {
        PasswordCheck::Right => Ok(()),
        PasswordCheck::Wrong => Err(refusal(StatusCode::UNAUTHORIZED, "Wrong password.")),
        PasswordCheck::NotSet => Err(refusal(
            StatusCode::FORBIDDEN,
            "This wallet address has no owner password yet: ask your wallet provider to set one.",
        )),
        PasswordCheck::Paused(until) => {
            let ms = until.unix_millis() - now.unix_millis();
            let secs = u64::try_from(ms.saturating_add(999) / 1000)
                .unwrap_or(1)
                .max(1);
            let minutes = secs.div_ceil(60);
            Err(Refusal {
                status: StatusCode::TOO_MANY_REQUESTS,
                message: format!(
                    "Approval by password is paused for this wallet address after too many \
                     wrong passwords. Try again in {minutes} minute{}, or ask your provider to \
                     set your password again.",
                    if minutes == 1 { "" } else { "s" }
                ),
                retry_after: Some(secs),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_check_has_its_status_and_words() {
        let now = Timestamp::from_unix_millis(1_000_000);
        assert!(judged(PasswordCheck::Right, now).is_ok());
        let wrong = judged(PasswordCheck::Wrong, now).err().unwrap();
        assert_eq!(
            (wrong.status, wrong.message.as_str()),
            (StatusCode::UNAUTHORIZED, "Wrong password.")
        );
        let unset = judged(PasswordCheck::NotSet, now).err().unwrap();
        assert_eq!(unset.status, StatusCode::FORBIDDEN);
        let paused = judged(PasswordCheck::Paused(now.plus_seconds(61)), now)
            .err()
            .unwrap();
        assert_eq!(paused.retry_after, Some(61));
        assert!(
            paused.message.contains("Try again in 2 minutes"),
            "{}",
            paused.message
        );
    }
}
