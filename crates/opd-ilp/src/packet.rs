//! ILPv4 packets (RFC 27): Prepare, Fulfill and Reject.
//!
//! Every packet is an envelope: one type byte (12, 13 or 14) followed by
//! the contents as an OER var-octet-string. The contents are
//!
//! - Prepare: `amount` (u64 big-endian), `expiresAt` (17 ASCII digits, see
//!   [`Timestamp`]), `executionCondition` (32 bytes), `destination`
//!   (var-octet-string, ILP address), `data` (var-octet-string);
//! - Fulfill: `fulfillment` (32 bytes), `data`;
//! - Reject: `code` (3 ASCII bytes, see [`ErrorCode`]), `triggeredBy`
//!   (var-octet-string, ILP address or empty), `message` (var-octet-string,
//!   UTF-8), `data`.
//!
//! Decoders never panic and refuse, with a [`PacketError`], anything a
//! conforming writer would not produce: trailing bytes after the contents
//! or the envelope, `data` over [`MAX_DATA_LEN`] bytes, a bad timestamp,
//! address or reject code. Two things are lenient, as in `ilp-packet`: a
//! reject `message` that is not UTF-8 is decoded lossily (the code matters,
//! the text does not), and the 8191-byte limit RFC 27 puts on it is not
//! enforced.
//!
//! Encoders do not check [`MAX_DATA_LEN`]: keep `data` within it, or
//! decoders (ours included) will refuse the packet.

use crate::address::IlpAddress;
use crate::crypto::condition_of;
use crate::error::PacketError;
use crate::error_code::ErrorCode;
use crate::oer::{self, Reader};
use crate::timestamp::{Timestamp, TIMESTAMP_LEN};

/// Longest `data` field an ILP packet may carry (RFC 27).
pub const MAX_DATA_LEN: usize = 32_767;

/// The three ILPv4 packet types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PacketType {
    /// ILP Prepare, type 12.
    Prepare = 12,
    /// ILP Fulfill, type 13.
    Fulfill = 13,
    /// ILP Reject, type 14.
    Reject = 14,
}

impl PacketType {
    /// The type byte.
    pub fn to_u8(self) -> u8 {
        self as u8
    }
}

impl TryFrom<u8> for PacketType {
    type Error = PacketError;

    fn try_from(b: u8) -> Result<Self, Self::Error> {
        match b {
            12 => Ok(Self::Prepare),
            13 => Ok(Self::Fulfill),
            14 => Ok(Self::Reject),
            other => Err(PacketError::UnknownPacketType(other)),
        }
    }
}

/// An ILP Prepare: a conditional transfer offered to the next hop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepare {
    /// Amount in the units of the bilateral relationship.
    pub amount: u64,
    /// When the offer lapses.
    pub expires_at: Timestamp,
    /// SHA-256 of the fulfillment that executes the transfer.
    pub execution_condition: [u8; 32],
    /// Final receiver's address.
    pub destination: IlpAddress,
    /// End-to-end data (for STREAM, the encrypted STREAM packet).
    pub data: Vec<u8>,
}

/// An ILP Fulfill: the preimage of the Prepare's condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fulfill {
    /// The preimage; its SHA-256 must equal the Prepare's condition.
    pub fulfillment: [u8; 32],
    /// End-to-end data for the sender.
    pub data: Vec<u8>,
}

/// An ILP Reject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reject {
    /// Why the packet was rejected.
    pub code: ErrorCode,
    /// Who rejected it; `None` is the empty address on the wire.
    pub triggered_by: Option<IlpAddress>,
    /// Human-readable detail (decoded lossily if not UTF-8).
    pub message: String,
    /// Machine-readable detail, e.g. [`AmountTooLarge`] for F08, or an
    /// encrypted STREAM reply.
    pub data: Vec<u8>,
}

/// Any ILPv4 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet {
    /// Type 12.
    Prepare(Prepare),
    /// Type 13.
    Fulfill(Fulfill),
    /// Type 14.
    Reject(Reject),
}

/// The data of an F08 Amount Too Large reject: what arrived and the most
/// the rejecting hop accepts, both in that hop's units. Senders use the
/// ratio to find the path's maximum packet amount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AmountTooLarge {
    /// Amount of the rejected Prepare as the rejecting hop received it.
    pub received_amount: u64,
    /// Largest amount the rejecting hop accepts.
    pub maximum_amount: u64,
}

impl Prepare {
    /// The packet's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let destination = self.destination.as_str().as_bytes();
        let len = 8
            + TIMESTAMP_LEN
            + 32
            + oer::var_octet_string_size(destination.len())
            + oer::var_octet_string_size(self.data.len());
        envelope(PacketType::Prepare, len, |out| {
            out.extend_from_slice(&self.amount.to_be_bytes());
            out.extend_from_slice(&self.expires_at.to_ilp_bytes());
            out.extend_from_slice(&self.execution_condition);
            oer::write_var_octet_string(out, destination);
            oer::write_var_octet_string(out, &self.data);
        })
    }

    /// Parses a Prepare (type 12).
    pub fn decode(bytes: &[u8]) -> Result<Self, PacketError> {
        let mut r = open_envelope(bytes, PacketType::Prepare)?;
        let amount = r.read_u64()?;
        let expires_at = Timestamp::from_ilp_bytes(r.read_bytes(TIMESTAMP_LEN)?)?;
        let execution_condition = r.read_array::<32>()?;
        let destination = read_address(&mut r)?.ok_or(PacketError::InvalidAddress)?;
        let data = read_data(&mut r)?;
        finish(&r)?;
        Ok(Self {
            amount,
            expires_at,
            execution_condition,
            destination,
            data,
        })
    }

    /// Whether `fulfillment` hashes to this Prepare's condition. A
    /// connector rejects a Fulfill that does not with F05.
    pub fn is_fulfilled_by(&self, fulfillment: &[u8; 32]) -> bool {
        condition_of(fulfillment) == self.execution_condition
    }
}

impl Fulfill {
    /// The packet's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let len = 32 + oer::var_octet_string_size(self.data.len());
        envelope(PacketType::Fulfill, len, |out| {
            out.extend_from_slice(&self.fulfillment);
            oer::write_var_octet_string(out, &self.data);
        })
    }

    /// Parses a Fulfill (type 13).
    pub fn decode(bytes: &[u8]) -> Result<Self, PacketError> {
        let mut r = open_envelope(bytes, PacketType::Fulfill)?;
        let fulfillment = r.read_array::<32>()?;
        let data = read_data(&mut r)?;
        finish(&r)?;
        Ok(Self { fulfillment, data })
    }
}

impl Reject {
    /// The packet's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let triggered_by = self
            .triggered_by
            .as_ref()
            .map_or(&b""[..], |a| a.as_str().as_bytes());
        let message = self.message.as_bytes();
        let len = 3
            + oer::var_octet_string_size(triggered_by.len())
            + oer::var_octet_string_size(message.len())
            + oer::var_octet_string_size(self.data.len());
        envelope(PacketType::Reject, len, |out| {
            out.extend_from_slice(&self.code.to_bytes());
            oer::write_var_octet_string(out, triggered_by);
            oer::write_var_octet_string(out, message);
            oer::write_var_octet_string(out, &self.data);
        })
    }

    /// Parses a Reject (type 14).
    pub fn decode(bytes: &[u8]) -> Result<Self, PacketError> {
        let mut r = open_envelope(bytes, PacketType::Reject)?;
        let code = ErrorCode::from_bytes(r.read_array::<3>()?)?;
        let triggered_by = read_address(&mut r)?;
        let message = String::from_utf8_lossy(r.read_var_octet_string()?).into_owned();
        let data = read_data(&mut r)?;
        finish(&r)?;
        Ok(Self {
            code,
            triggered_by,
            message,
            data,
        })
    }

    /// The F08 details, if this is an F08 reject whose data is the 16-byte
    /// [`AmountTooLarge`] structure.
    pub fn amount_too_large(&self) -> Option<AmountTooLarge> {
        if self.code != ErrorCode::F08_AMOUNT_TOO_LARGE {
            return None;
        }
        AmountTooLarge::decode(&self.data).ok()
    }
}

impl Packet {
    /// The packet's type.
    pub fn packet_type(&self) -> PacketType {
        match self {
            Self::Prepare(_) => PacketType::Prepare,
            Self::Fulfill(_) => PacketType::Fulfill,
            Self::Reject(_) => PacketType::Reject,
        }
    }

    /// The packet's bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Self::Prepare(p) => p.encode(),
            Self::Fulfill(f) => f.encode(),
            Self::Reject(r) => r.encode(),
        }
    }

    /// Parses any ILPv4 packet.
    pub fn decode(bytes: &[u8]) -> Result<Self, PacketError> {
        Ok(match peek_type(bytes)? {
            PacketType::Prepare => Self::Prepare(Prepare::decode(bytes)?),
            PacketType::Fulfill => Self::Fulfill(Fulfill::decode(bytes)?),
            PacketType::Reject => Self::Reject(Reject::decode(bytes)?),
        })
    }
}

impl From<Prepare> for Packet {
    fn from(p: Prepare) -> Self {
        Self::Prepare(p)
    }
}

impl From<Fulfill> for Packet {
    fn from(f: Fulfill) -> Self {
        Self::Fulfill(f)
    }
}

impl From<Reject> for Packet {
    fn from(r: Reject) -> Self {
        Self::Reject(r)
    }
}

impl AmountTooLarge {
    /// Wire length of the F08 data.
    pub const LEN: usize = 16;

    /// The 16 data bytes: both amounts as u64 big-endian.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        out[..8].copy_from_slice(&self.received_amount.to_be_bytes());
        out[8..].copy_from_slice(&self.maximum_amount.to_be_bytes());
        out
    }

    /// Parses exactly 16 bytes of F08 data.
    pub fn decode(bytes: &[u8]) -> Result<Self, PacketError> {
        let mut r = Reader::new(bytes);
        let received_amount = r.read_u64()?;
        let maximum_amount = r.read_u64()?;
        finish(&r)?;
        Ok(Self {
            received_amount,
            maximum_amount,
        })
    }
}

/// The type of the packet in `bytes`, from its first byte alone.
pub fn peek_type(bytes: &[u8]) -> Result<PacketType, PacketError> {
    let first = Reader::new(bytes).read_u8()?;
    PacketType::try_from(first)
}

/// The destination of the Prepare in `bytes`, read without copying or
/// parsing the rest of the packet (for routing before a full decode). The
/// address is validated; the fields after it are not looked at.
pub fn peek_destination(bytes: &[u8]) -> Result<&str, PacketError> {
    // Bytes after the envelope do not matter here; a full decode refuses them.
    let mut r = Reader::new(split_envelope(bytes, PacketType::Prepare)?.0);
    r.read_bytes(8 + TIMESTAMP_LEN + 32)?;
    let destination = r.read_var_octet_string()?;
    std::str::from_utf8(destination)
        .ok()
        .filter(|s| IlpAddress::is_valid(s))
        .ok_or(PacketError::InvalidAddress)
}

/// Writes the type byte and the length prefix, then lets `write` append
/// exactly `len` content bytes, in one allocation.
fn envelope(ty: PacketType, len: usize, write: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + oer::var_octet_string_size(len));
    out.push(ty.to_u8());
    oer::write_length_prefix(&mut out, len);
    write(&mut out);
    debug_assert_eq!(out.len(), 1 + oer::var_octet_string_size(len));
    out
}

/// Checks the type byte and returns a reader over the contents, refusing
/// bytes after the envelope.
fn open_envelope(bytes: &[u8], expected: PacketType) -> Result<Reader<'_>, PacketError> {
    let (contents, rest) = split_envelope(bytes, expected)?;
    match rest.len() {
        0 => Ok(Reader::new(contents)),
        n => Err(PacketError::TrailingBytes(n)),
    }
}

/// Checks the type byte and splits the envelope into its contents and
/// whatever follows it.
fn split_envelope(bytes: &[u8], expected: PacketType) -> Result<(&[u8], &[u8]), PacketError> {
    let mut outer = Reader::new(bytes);
    let found = PacketType::try_from(outer.read_u8()?)?;
    if found != expected {
        return Err(PacketError::WrongPacketType {
            expected: expected.to_u8(),
            found: found.to_u8(),
        });
    }
    let contents = outer.read_var_octet_string()?;
    Ok((contents, outer.remaining()))
}

/// Reads an address var-octet-string: `None` if empty, an error if not a
/// valid ILP address.
fn read_address(r: &mut Reader<'_>) -> Result<Option<IlpAddress>, PacketError> {
    let bytes = r.read_var_octet_string()?;
    if bytes.is_empty() {
        return Ok(None);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| PacketError::InvalidAddress)?;
    IlpAddress::new(text)
        .map(Some)
        .map_err(|_| PacketError::InvalidAddress)
}

fn read_data(r: &mut Reader<'_>) -> Result<Vec<u8>, PacketError> {
    let data = r.read_var_octet_string()?;
    if data.len() > MAX_DATA_LEN {
        return Err(PacketError::DataTooLong(data.len()));
    }
    Ok(data.to_vec())
}

fn finish(r: &Reader<'_>) -> Result<(), PacketError> {
    match r.remaining().len() {
        0 => Ok(()),
        n => Err(PacketError::TrailingBytes(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepare() -> Prepare {
        Prepare {
            amount: 107,
            expires_at: Timestamp::from_unix_millis(1_513_992_100_549).unwrap(),
            execution_condition: [7; 32],
            destination: "example.alice".parse().unwrap(),
            data: b"hello".to_vec(),
        }
    }

    #[test]
    fn round_trips_and_peeks() {
        let bytes = prepare().encode();
        assert_eq!(Prepare::decode(&bytes), Ok(prepare()));
        assert_eq!(Packet::decode(&bytes), Ok(Packet::Prepare(prepare())));
        assert_eq!(peek_type(&bytes), Ok(PacketType::Prepare));
        assert_eq!(peek_destination(&bytes), Ok("example.alice"));
    }

    #[test]
    fn wrong_and_unknown_types() {
        let bytes = prepare().encode();
        assert_eq!(
            Fulfill::decode(&bytes),
            Err(PacketError::WrongPacketType {
                expected: 13,
                found: 12
            })
        );
        assert_eq!(
            Packet::decode(&[0x99]),
            Err(PacketError::UnknownPacketType(0x99))
        );
        assert_eq!(
            peek_type(&[]),
            Err(PacketError::Oer(oer::OerError::UnexpectedEof))
        );
        let fulfill = Fulfill {
            fulfillment: [0; 32],
            data: vec![],
        }
        .encode();
        assert!(peek_destination(&fulfill).is_err());
    }

    #[test]
    fn trailing_bytes_inside_and_outside() {
        let mut outside = prepare().encode();
        outside.push(0);
        assert_eq!(
            Prepare::decode(&outside),
            Err(PacketError::TrailingBytes(1))
        );

        // interledger-rs fuzz finding: a Reject whose contents have one extra
        // byte after the data.
        let inside = [
            14, 13, b'T', b'0', b'1', 6, b't', b'e', b's', b't', b'.', b't', 0, 0, 42,
        ];
        assert_eq!(Reject::decode(&inside), Err(PacketError::TrailingBytes(1)));
    }

    #[test]
    fn refuses_bad_fields() {
        let mut p = prepare().encode();
        // Corrupt the month of the expiry (bytes 2 + 8 + 4..6).
        p[14] = b'1';
        p[15] = b'3';
        assert_eq!(Prepare::decode(&p), Err(PacketError::InvalidTimestamp));

        let mut p = prepare().encode();
        let at = p.len() - 6 - 13; // first byte of "example.alice"
        p[at] = b'X';
        assert_eq!(Prepare::decode(&p), Err(PacketError::InvalidAddress));
        assert_eq!(peek_destination(&p), Err(PacketError::InvalidAddress));

        let mut empty_destination = prepare();
        empty_destination.data.clear();
        let mut bytes = empty_destination.encode();
        // Replace "\x0dexample.alice\x00" by "\x00\x00" and fix the length.
        let at = 2 + 8 + 17 + 32;
        bytes.truncate(at);
        bytes.extend_from_slice(&[0, 0]);
        bytes[1] = (bytes.len() - 2) as u8;
        assert_eq!(Prepare::decode(&bytes), Err(PacketError::InvalidAddress));
    }

    #[test]
    fn data_limit() {
        let mut p = prepare();
        p.data = vec![1; MAX_DATA_LEN];
        assert_eq!(Prepare::decode(&p.encode()), Ok(p.clone()));
        p.data.push(1);
        assert_eq!(
            Prepare::decode(&p.encode()),
            Err(PacketError::DataTooLong(MAX_DATA_LEN + 1))
        );
    }

    #[test]
    fn reject_with_empty_triggered_by_and_lossy_message() {
        let r = Reject {
            code: ErrorCode::T04_INSUFFICIENT_LIQUIDITY,
            triggered_by: None,
            message: String::new(),
            data: vec![],
        };
        let bytes = r.encode();
        assert_eq!(bytes, b"\x0e\x06T04\x00\x00\x00");
        assert_eq!(Reject::decode(&bytes), Ok(r));

        let bad_utf8 = b"\x0e\x07F99\x00\x01\xff\x00";
        assert_eq!(Reject::decode(bad_utf8).unwrap().message, "\u{fffd}");
    }

    #[test]
    fn amount_too_large_data() {
        let d = AmountTooLarge {
            received_amount: 0x0102,
            maximum_amount: u64::MAX,
        };
        let bytes = d.encode();
        assert_eq!(
            bytes,
            *b"\0\0\0\0\0\0\x01\x02\xff\xff\xff\xff\xff\xff\xff\xff"
        );
        assert_eq!(AmountTooLarge::decode(&bytes), Ok(d));
        assert_eq!(
            AmountTooLarge::decode(&bytes[..15]),
            Err(PacketError::Oer(oer::OerError::UnexpectedEof))
        );
        assert_eq!(
            AmountTooLarge::decode(&[&bytes[..], &[0]].concat()),
            Err(PacketError::TrailingBytes(1))
        );
        let reject = Reject {
            code: ErrorCode::F08_AMOUNT_TOO_LARGE,
            triggered_by: Some("test.connector".parse().unwrap()),
            message: String::new(),
            data: bytes.to_vec(),
        };
        assert_eq!(reject.amount_too_large(), Some(d));
        let other = Reject {
            code: ErrorCode::F99_APPLICATION_ERROR,
            ..reject
        };
        assert_eq!(other.amount_too_large(), None);
    }

    #[test]
    fn fulfillment_check() {
        let fulfillment = [9u8; 32];
        let mut p = prepare();
        p.execution_condition = condition_of(&fulfillment);
        assert!(p.is_fulfilled_by(&fulfillment));
        assert!(!p.is_fulfilled_by(&[8u8; 32]));
    }
}
