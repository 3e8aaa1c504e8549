//! The small piece of OER (ITU-T X.696, as Interledger RFC 30 uses it) that
//! ILP packets, STREAM packets and STREAM connection tokens need: one-byte
//! and eight-byte integers, fixed-size byte runs, variable-length octet
//! strings and variable-length unsigned integers.
//!
//! A var-octet-string is a length prefix followed by that many bytes:
//!
//! - a length below 128 is a single byte (`0x05` for 5 bytes);
//! - otherwise the first byte is `0x80 | n` and the next `n` bytes hold the
//!   length big-endian, in as few bytes as possible (`0x81 0x80` for 128,
//!   `0x82 0x01 0x01` for 257).
//!
//! The writer always emits the canonical (shortest) form and the [`Reader`]
//! accepts only that form, as `oer-utils` does. The reader never allocates
//! and never trusts a length beyond the bytes actually present.
//!
//! A var-uint (RFC 30's "VarUInt") is a var-octet-string whose payload is
//! the integer big-endian: 99 is `01 63`, 0 is `01 00`. The writer uses as
//! few bytes as possible. The reader, like `oer-utils`, also accepts leading
//! zero bytes (a payload longer than needed), because nothing is gained by
//! refusing a peer's packet over it; it refuses an empty payload and one
//! longer than 8 bytes, except in [`Reader::read_var_uint_saturating`].

use thiserror::Error;

/// Why OER input could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum OerError {
    /// The input ended before the value did.
    #[error("unexpected end of OER input")]
    UnexpectedEof,
    /// The length prefix was `0x80`, which announces zero length bytes.
    #[error("OER length prefix announces zero length bytes")]
    EmptyLengthPrefix,
    /// The length needs more bytes than fit in a `usize`.
    #[error("OER length prefix of {0} bytes is too long")]
    LengthPrefixTooLong(u8),
    /// The length was not written in its shortest form (a long form for a
    /// length below 128, or a leading zero byte).
    #[error("OER length prefix is not canonical")]
    NonCanonicalLength,
    /// A var-uint had an empty payload.
    #[error("OER var-uint is empty")]
    EmptyVarUint,
    /// A var-uint had more than 8 payload bytes, so it does not fit in a
    /// `u64`.
    #[error("OER var-uint of {0} bytes does not fit in 64 bits")]
    VarUintTooLong(usize),
}

/// Appends the canonical OER length prefix for `len`.
pub fn write_length_prefix(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        // Cannot truncate: len < 128.
        out.push(len as u8);
        return;
    }
    let be = len.to_be_bytes();
    let skip = be.iter().take_while(|b| **b == 0).count();
    let significant = &be[skip..];
    // At most size_of::<usize>() (8) bytes, so it fits in the low 7 bits.
    out.push(0x80 | significant.len() as u8);
    out.extend_from_slice(significant);
}

/// Appends `bytes` as an OER var-octet-string (length prefix, then bytes).
pub fn write_var_octet_string(out: &mut Vec<u8>, bytes: &[u8]) {
    write_length_prefix(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// Appends `value` as an OER var-uint: a length byte, then the value
/// big-endian in as few bytes as possible (at least one, so 0 is `01 00`).
pub fn write_var_uint(out: &mut Vec<u8>, value: u64) {
    let be = value.to_be_bytes();
    // Keep at least the last byte, so zero is written as one 0x00 byte.
    let skip = be[..7].iter().take_while(|b| **b == 0).count();
    write_var_octet_string(out, &be[skip..]);
}

/// Number of bytes [`write_var_uint`] writes for `value`.
pub fn var_uint_size(value: u64) -> usize {
    let significant = (u64::BITS - value.leading_zeros()).div_ceil(8).max(1);
    1 + significant as usize
}

/// Number of bytes a var-octet-string with a `len`-byte payload occupies.
pub fn var_octet_string_size(len: usize) -> usize {
    if len < 0x80 {
        1 + len
    } else {
        let significant = usize::BITS - len.leading_zeros();
        1 + significant.div_ceil(8) as usize + len
    }
}

/// A cursor over borrowed OER input.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    /// The bytes not read yet.
    pub fn remaining(&self) -> &'a [u8] {
        self.buf
    }

    /// Whether everything has been read.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Reads one byte.
    pub fn read_u8(&mut self) -> Result<u8, OerError> {
        let (first, rest) = self.buf.split_first().ok_or(OerError::UnexpectedEof)?;
        self.buf = rest;
        Ok(*first)
    }

    /// Reads exactly `n` bytes.
    pub fn read_bytes(&mut self, n: usize) -> Result<&'a [u8], OerError> {
        let (head, rest) = self
            .buf
            .split_at_checked(n)
            .ok_or(OerError::UnexpectedEof)?;
        self.buf = rest;
        Ok(head)
    }

    /// Reads exactly `N` bytes into an array.
    pub fn read_array<const N: usize>(&mut self) -> Result<[u8; N], OerError> {
        let bytes = self.read_bytes(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// Reads a canonical OER length prefix.
    pub fn read_length_prefix(&mut self) -> Result<usize, OerError> {
        let first = self.read_u8()?;
        if first & 0x80 == 0 {
            return Ok(usize::from(first));
        }
        let n = first & 0x7f;
        if n == 0 {
            return Err(OerError::EmptyLengthPrefix);
        }
        let bytes = self.read_bytes(usize::from(n))?;
        if bytes.first() == Some(&0) {
            return Err(OerError::NonCanonicalLength);
        }
        if usize::from(n) > size_of::<usize>() {
            return Err(OerError::LengthPrefixTooLong(n));
        }
        let len = bytes
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        if len < 0x80 {
            return Err(OerError::NonCanonicalLength);
        }
        Ok(len)
    }

    /// Reads a var-octet-string and returns its payload.
    pub fn read_var_octet_string(&mut self) -> Result<&'a [u8], OerError> {
        let len = self.read_length_prefix()?;
        self.read_bytes(len)
    }

    /// Reads a fixed 8-byte big-endian unsigned integer (RFC 27's UInt64).
    pub fn read_u64(&mut self) -> Result<u64, OerError> {
        self.read_array::<8>().map(u64::from_be_bytes)
    }

    /// Reads a var-uint of at most 8 payload bytes.
    pub fn read_var_uint(&mut self) -> Result<u64, OerError> {
        let bytes = self.read_var_octet_string()?;
        if bytes.len() > 8 {
            return Err(OerError::VarUintTooLong(bytes.len()));
        }
        be_to_u64(bytes)
    }

    /// Reads a var-uint, but returns `u64::MAX` for a payload longer than 8
    /// bytes instead of failing.
    ///
    /// `ilp-protocol-stream` reads StreamMaxMoney's `receiveMax` and
    /// StreamMoneyBlocked's `sendMax` this way: other implementations may
    /// announce "no limit" with a number above 2^64, and any such limit is
    /// effectively unlimited for a `u64` amount.
    pub fn read_var_uint_saturating(&mut self) -> Result<u64, OerError> {
        let bytes = self.read_var_octet_string()?;
        if bytes.len() > 8 {
            return Ok(u64::MAX);
        }
        be_to_u64(bytes)
    }
}

/// Big-endian bytes (1 to 8 of them) to a `u64`.
fn be_to_u64(bytes: &[u8]) -> Result<u64, OerError> {
    if bytes.is_empty() {
        return Err(OerError::EmptyVarUint);
    }
    Ok(bytes.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encode(payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_var_octet_string(&mut out, payload);
        out
    }

    #[test]
    fn short_lengths_take_one_byte() {
        assert_eq!(encode(b""), vec![0x00]);
        assert_eq!(encode(b"abc"), vec![0x03, b'a', b'b', b'c']);
        let p = vec![7u8; 127];
        let e = encode(&p);
        assert_eq!(e[0], 0x7f);
        assert_eq!(&e[1..], &p[..]);
    }

    #[test]
    fn long_lengths_use_minimal_big_endian_prefix() {
        let e = encode(&[1u8; 128]);
        assert_eq!(&e[..2], &[0x81, 0x80]);
        assert_eq!(e.len(), 130);

        let e = encode(&[1u8; 255]);
        assert_eq!(&e[..2], &[0x81, 0xff]);

        // 257 bytes: the interledger-rs fixture's 0x82 0x01 0x01 prefix.
        let e = encode(&[1u8; 257]);
        assert_eq!(&e[..3], &[0x82, 0x01, 0x01]);
        assert_eq!(e.len(), 260);

        let e = encode(&[0u8; 0x1_0000]);
        assert_eq!(&e[..4], &[0x83, 0x01, 0x00, 0x00]);
    }

    #[test]
    fn length_prefix_for_large_values() {
        let mut out = Vec::new();
        write_length_prefix(&mut out, 0x0102_0304);
        assert_eq!(out, vec![0x84, 0x01, 0x02, 0x03, 0x04]);
        let mut r = Reader::new(&out);
        assert_eq!(r.read_length_prefix(), Ok(0x0102_0304));
        assert!(r.is_empty());
    }

    #[test]
    fn size_matches_encoding() {
        for len in [0usize, 1, 127, 128, 255, 256, 257, 65_535, 65_536] {
            assert_eq!(var_octet_string_size(len), encode(&vec![0; len]).len());
        }
    }

    #[test]
    fn reads_back_and_leaves_rest() {
        let mut buf = encode(b"hello");
        buf.extend_from_slice(&[0xaa, 0xbb]);
        let mut r = Reader::new(&buf);
        assert_eq!(r.read_var_octet_string(), Ok(&b"hello"[..]));
        assert!(!r.is_empty());
        assert_eq!(r.remaining(), &[0xaa, 0xbb]);
        assert_eq!(r.read_u8(), Ok(0xaa));
        assert_eq!(r.read_array::<1>(), Ok([0xbb]));
        assert_eq!(r.read_u8(), Err(OerError::UnexpectedEof));
    }

    #[test]
    fn rejects_truncated_input() {
        assert_eq!(
            Reader::new(&[]).read_var_octet_string(),
            Err(OerError::UnexpectedEof)
        );
        assert_eq!(
            Reader::new(&[0x03, 1, 2]).read_var_octet_string(),
            Err(OerError::UnexpectedEof)
        );
        assert_eq!(
            Reader::new(&[0x82, 0x01]).read_var_octet_string(),
            Err(OerError::UnexpectedEof)
        );
        // Claims 2^32 bytes but has none: must fail without allocating.
        assert_eq!(
            Reader::new(&[0x84, 0xff, 0xff, 0xff, 0xff]).read_var_octet_string(),
            Err(OerError::UnexpectedEof)
        );
    }

    #[test]
    fn rejects_non_canonical_prefixes() {
        assert_eq!(
            Reader::new(&[0x80]).read_length_prefix(),
            Err(OerError::EmptyLengthPrefix)
        );
        // 5 written in the long form.
        assert_eq!(
            Reader::new(&[0x81, 0x05]).read_length_prefix(),
            Err(OerError::NonCanonicalLength)
        );
        // Leading zero byte.
        assert_eq!(
            Reader::new(&[0x82, 0x00, 0x80]).read_length_prefix(),
            Err(OerError::NonCanonicalLength)
        );
        let mut nine = vec![0x89];
        nine.extend_from_slice(&[0xff; 9]);
        assert_eq!(
            Reader::new(&nine).read_length_prefix(),
            Err(OerError::LengthPrefixTooLong(9))
        );
    }

    #[test]
    fn read_bytes_zero_is_ok_on_empty() {
        let mut r = Reader::new(&[]);
        assert_eq!(r.read_bytes(0), Ok(&[][..]));
    }

    fn var_uint(value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write_var_uint(&mut out, value);
        out
    }

    #[test]
    fn var_uints_use_minimal_bytes() {
        // 99 -> 01 63 is RFC 30's example.
        assert_eq!(var_uint(0), vec![0x01, 0x00]);
        assert_eq!(var_uint(99), vec![0x01, 0x63]);
        assert_eq!(var_uint(255), vec![0x01, 0xff]);
        assert_eq!(var_uint(256), vec![0x02, 0x01, 0x00]);
        assert_eq!(var_uint(u64::MAX), [&[0x08][..], &[0xff; 8]].concat());
        for v in [0, 1, 255, 256, 65_535, 1 << 56, u64::MAX] {
            assert_eq!(var_uint(v).len(), var_uint_size(v));
        }
    }

    #[test]
    fn var_uint_reader_edge_cases() {
        // Leading zeros are tolerated, as oer-utils does.
        assert_eq!(Reader::new(&[0x02, 0x00, 0x05]).read_var_uint(), Ok(5));
        assert_eq!(
            Reader::new(&[0x00]).read_var_uint(),
            Err(OerError::EmptyVarUint)
        );
        let nine = [0x09, 1, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(
            Reader::new(&nine).read_var_uint(),
            Err(OerError::VarUintTooLong(9))
        );
        let mut r = Reader::new(&nine);
        assert_eq!(r.read_var_uint_saturating(), Ok(u64::MAX));
        assert!(r.is_empty());
        assert_eq!(
            Reader::new(&[0x00]).read_var_uint_saturating(),
            Err(OerError::EmptyVarUint)
        );
        assert_eq!(
            Reader::new(&[1, 2, 3, 4, 5, 6, 7, 8]).read_u64(),
            Ok(0x0102_0304_0506_0708)
        );
        assert_eq!(
            Reader::new(&[1, 2, 3]).read_u64(),
            Err(OerError::UnexpectedEof)
        );
    }

    proptest! {
        #[test]
        fn var_uint_round_trip(v in any::<u64>()) {
            let buf = var_uint(v);
            let mut r = Reader::new(&buf);
            prop_assert_eq!(r.read_var_uint(), Ok(v));
            prop_assert!(r.is_empty());
        }

        #[test]
        fn round_trip(payload in proptest::collection::vec(any::<u8>(), 0..600), tail in proptest::collection::vec(any::<u8>(), 0..8)) {
            let mut buf = encode(&payload);
            prop_assert_eq!(buf.len(), var_octet_string_size(payload.len()));
            buf.extend_from_slice(&tail);
            let mut r = Reader::new(&buf);
            prop_assert_eq!(r.read_var_octet_string(), Ok(&payload[..]));
            prop_assert_eq!(r.remaining(), &tail[..]);
        }

        #[test]
        fn length_prefix_round_trip(len in any::<usize>()) {
            let mut buf = Vec::new();
            write_length_prefix(&mut buf, len);
            let mut r = Reader::new(&buf);
            prop_assert_eq!(r.read_length_prefix(), Ok(len));
            prop_assert!(r.is_empty());
        }

        #[test]
        fn reader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut r = Reader::new(&bytes);
            while r.read_var_octet_string().is_ok() && !r.is_empty() {}
        }
    }
}
