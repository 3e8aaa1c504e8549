//! Cursor pagination as Open Payments lists use it: `first` items after a
//! cursor, or `last` items before it. Lists are ordered newest first, and a
//! cursor is the id of an item (ids are time ordered).

use uuid::Uuid;

/// The page size when neither `first` nor `last` is given.
pub const DEFAULT_PAGE_SIZE: u32 = 20;
/// The largest page the spec allows.
pub const MAX_PAGE_SIZE: u32 = 100;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    #[error("first and last cannot both be given")]
    FirstAndLast,
    #[error("{0} must be an integer from 1 to 100")]
    Size(&'static str),
    #[error("cursor must be the id of an item of this list")]
    Cursor,
}

/// Which way a page is read from its cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Items after the cursor (older ones), or from the newest.
    Forward,
    /// Items before the cursor (newer ones), or the oldest page.
    Backward,
}

/// A validated page request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    pub cursor: Option<Uuid>,
    pub size: u32,
    pub direction: Direction,
}

impl PageRequest {
    /// Parses the raw query values.
    pub fn parse(
        first: Option<&str>,
        last: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<Self, PageError> {
        let size = |name: &'static str, v: &str| -> Result<u32, PageError> {
            match v.parse::<u32>() {
                Ok(n) if (1..=MAX_PAGE_SIZE).contains(&n) => Ok(n),
                _ => Err(PageError::Size(name)),
            }
        };
        let cursor = match cursor {
            Some(c) => Some(
                Uuid::try_parse(c)
                    .ok()
                    .filter(|_| c.len() == 36)
                    .ok_or(PageError::Cursor)?,
            ),
            None => None,
        };
        let (size, direction) = match (first, last) {
            (Some(_), Some(_)) => return Err(PageError::FirstAndLast),
            (Some(f), None) => (size("first", f)?, Direction::Forward),
            (None, Some(l)) => (size("last", l)?, Direction::Backward),
            (None, None) => (DEFAULT_PAGE_SIZE, Direction::Forward),
        };
        Ok(Self {
            cursor,
            size,
            direction,
        })
    }
}

/// One page of results, newest first, with what lies on either side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub has_next_page: bool,
    pub has_previous_page: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let p = PageRequest::parse(None, None, None).unwrap();
        assert_eq!(
            (p.size, p.direction, p.cursor),
            (20, Direction::Forward, None)
        );
        let p = PageRequest::parse(
            None,
            Some("5"),
            Some("0190a1b2-0000-7000-8000-000000000000"),
        )
        .unwrap();
        assert_eq!((p.size, p.direction), (5, Direction::Backward));
        assert_eq!(
            PageRequest::parse(Some("1"), Some("1"), None),
            Err(PageError::FirstAndLast)
        );
        assert_eq!(
            PageRequest::parse(Some("0"), None, None),
            Err(PageError::Size("first"))
        );
        assert_eq!(
            PageRequest::parse(Some("101"), None, None),
            Err(PageError::Size("first"))
        );
        assert_eq!(
            PageRequest::parse(None, Some("x"), None),
            Err(PageError::Size("last"))
        );
        assert_eq!(
            PageRequest::parse(None, None, Some("nope")),
            Err(PageError::Cursor)
        );
    }
}
