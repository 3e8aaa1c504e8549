//! STREAM frames (RFC 29 §5.3) and STREAM's connection and stream close
//! codes.
//!
//! On the wire a frame is its type byte followed by its contents as a
//! var-octet-string, so a reader can skip a frame it does not know. The
//! contents are var-uints (stream ids, amounts, offsets), one-byte fields
//! (codes, asset scale) and var-octet-strings (text, data).
//!
//! Decoding follows `ilp-protocol-stream`:
//!
//! - an unknown frame type is skipped ([`Frame::decode`] returns `None`);
//! - bytes after a known frame's fields are ignored, so a later revision may
//!   add fields;
//! - text (close messages, the source address, the asset code) is decoded
//!   lossily if it is not UTF-8, and the source address is not validated:
//!   `@interledger/pay` sends an empty ConnectionNewAddress to ask for the
//!   receiver's asset details;
//! - StreamMaxMoney's `receive_max` and StreamMoneyBlocked's `send_max`
//!   saturate to `u64::MAX` when the sender wrote a number above 2^64 - 1
//!   (an unlimited maximum); every other var-uint must fit in 64 bits.

use crate::error::PacketError;
use crate::oer::{self, Reader};

/// Why a connection or stream was closed (RFC 29 §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamErrorCode {
    /// 0x01: closed normally.
    NoError,
    /// 0x02: the endpoint hit an internal error.
    InternalError,
    /// 0x03: the endpoint is too busy.
    EndpointBusy,
    /// 0x04: a flow-control limit was exceeded.
    FlowControlError,
    /// 0x05: a stream id was invalid or over the limit.
    StreamIdError,
    /// 0x06: a frame arrived for a stream in the wrong state.
    StreamStateError,
    /// 0x07: a frame could not be parsed.
    FrameFormatError,
    /// 0x08: the peer broke the protocol.
    ProtocolViolation,
    /// 0x09: the application closed it.
    ApplicationError,
    /// Any other byte. Use the named variants for 0x01 to 0x09.
    Unknown(u8),
}

impl From<u8> for StreamErrorCode {
    fn from(b: u8) -> Self {
        match b {
            0x01 => Self::NoError,
            0x02 => Self::InternalError,
            0x03 => Self::EndpointBusy,
            0x04 => Self::FlowControlError,
            0x05 => Self::StreamIdError,
            0x06 => Self::StreamStateError,
            0x07 => Self::FrameFormatError,
            0x08 => Self::ProtocolViolation,
            0x09 => Self::ApplicationError,
            other => Self::Unknown(other),
        }
    }
}

impl From<StreamErrorCode> for u8 {
    fn from(c: StreamErrorCode) -> u8 {
        match c {
            StreamErrorCode::NoError => 0x01,
            StreamErrorCode::InternalError => 0x02,
            StreamErrorCode::EndpointBusy => 0x03,
            StreamErrorCode::FlowControlError => 0x04,
            StreamErrorCode::StreamIdError => 0x05,
            StreamErrorCode::StreamStateError => 0x06,
            StreamErrorCode::FrameFormatError => 0x07,
            StreamErrorCode::ProtocolViolation => 0x08,
            StreamErrorCode::ApplicationError => 0x09,
            StreamErrorCode::Unknown(other) => other,
        }
    }
}

/// The frame types this crate reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FrameType {
    /// 0x01
    ConnectionClose = 0x01,
    /// 0x02
    ConnectionNewAddress = 0x02,
    /// 0x03
    ConnectionMaxData = 0x03,
    /// 0x04
    ConnectionDataBlocked = 0x04,
    /// 0x05
    ConnectionMaxStreamId = 0x05,
    /// 0x06
    ConnectionStreamIdBlocked = 0x06,
    /// 0x07
    ConnectionAssetDetails = 0x07,
    /// 0x10
    StreamClose = 0x10,
    /// 0x11
    StreamMoney = 0x11,
    /// 0x12
    StreamMaxMoney = 0x12,
    /// 0x13
    StreamMoneyBlocked = 0x13,
    /// 0x14
    StreamData = 0x14,
    /// 0x15
    StreamMaxData = 0x15,
    /// 0x16
    StreamDataBlocked = 0x16,
    /// 0x17
    StreamReceipt = 0x17,
}

impl FrameType {
    /// The type for a type byte, `None` for types this crate skips.
    pub fn from_u8(b: u8) -> Option<Self> {
        Some(match b {
            0x01 => Self::ConnectionClose,
            0x02 => Self::ConnectionNewAddress,
            0x03 => Self::ConnectionMaxData,
            0x04 => Self::ConnectionDataBlocked,
            0x05 => Self::ConnectionMaxStreamId,
            0x06 => Self::ConnectionStreamIdBlocked,
            0x07 => Self::ConnectionAssetDetails,
            0x10 => Self::StreamClose,
            0x11 => Self::StreamMoney,
            0x12 => Self::StreamMaxMoney,
            0x13 => Self::StreamMoneyBlocked,
            0x14 => Self::StreamData,
            0x15 => Self::StreamMaxData,
            0x16 => Self::StreamDataBlocked,
            0x17 => Self::StreamReceipt,
            _ => return None,
        })
    }
}

/// One STREAM frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// The sender closes the whole connection.
    ConnectionClose {
        /// Why.
        code: StreamErrorCode,
        /// Detail for humans.
        message: String,
    },
    /// The sender's ILP address, so the other side can send back; empty
    /// when the sender only asks for asset details.
    ConnectionNewAddress {
        /// The address, not validated.
        source_account: String,
    },
    /// How much data, in total bytes, the sender will accept.
    ConnectionMaxData {
        /// Highest offset across all streams.
        max_offset: u64,
    },
    /// The sender wants to send data past the peer's limit.
    ConnectionDataBlocked {
        /// The limit it is blocked at.
        max_offset: u64,
    },
    /// The highest stream id the sender allows the peer to open.
    ConnectionMaxStreamId {
        /// That id.
        max_stream_id: u64,
    },
    /// The sender wants to open streams past the peer's limit.
    ConnectionStreamIdBlocked {
        /// The limit it is blocked at.
        max_stream_id: u64,
    },
    /// The sender's asset; a receiver sends it in reply to
    /// ConnectionNewAddress.
    ConnectionAssetDetails {
        /// Asset code, e.g. `USD`.
        source_asset_code: String,
        /// Asset scale, e.g. 2.
        source_asset_scale: u8,
    },
    /// The sender closes one stream.
    StreamClose {
        /// The stream.
        stream_id: u64,
        /// Why.
        code: StreamErrorCode,
        /// Detail for humans.
        message: String,
    },
    /// Money for a stream: the packet's amount is split between the
    /// StreamMoney frames in proportion to their shares.
    StreamMoney {
        /// The stream.
        stream_id: u64,
        /// This stream's share of the amount.
        shares: u64,
    },
    /// How much the sender of this frame will accept on a stream.
    StreamMaxMoney {
        /// The stream.
        stream_id: u64,
        /// Most it will receive in total (`u64::MAX`: no limit; saturated
        /// on decode).
        receive_max: u64,
        /// What it has received so far.
        total_received: u64,
    },
    /// The sender of this frame wants to send more than the peer allows.
    StreamMoneyBlocked {
        /// The stream.
        stream_id: u64,
        /// Most it wants to send in total (saturated on decode).
        send_max: u64,
        /// What it has sent so far.
        total_sent: u64,
    },
    /// Bytes for a stream.
    StreamData {
        /// The stream.
        stream_id: u64,
        /// Position of `data` in the stream.
        offset: u64,
        /// The bytes.
        data: Vec<u8>,
    },
    /// How much data the sender of this frame accepts on a stream.
    StreamMaxData {
        /// The stream.
        stream_id: u64,
        /// Highest offset accepted.
        max_offset: u64,
    },
    /// The sender of this frame wants to send data past the peer's limit.
    StreamDataBlocked {
        /// The stream.
        stream_id: u64,
        /// The limit it is blocked at.
        max_offset: u64,
    },
    /// A STREAM receipt (RFC 39) for a stream.
    StreamReceipt {
        /// The stream.
        stream_id: u64,
        /// The receipt bytes, passed through as they are.
        receipt: Vec<u8>,
    },
}

impl Frame {
    /// This frame's type.
    pub fn frame_type(&self) -> FrameType {
        match self {
            Self::ConnectionClose { .. } => FrameType::ConnectionClose,
            Self::ConnectionNewAddress { .. } => FrameType::ConnectionNewAddress,
            Self::ConnectionMaxData { .. } => FrameType::ConnectionMaxData,
            Self::ConnectionDataBlocked { .. } => FrameType::ConnectionDataBlocked,
            Self::ConnectionMaxStreamId { .. } => FrameType::ConnectionMaxStreamId,
            Self::ConnectionStreamIdBlocked { .. } => FrameType::ConnectionStreamIdBlocked,
            Self::ConnectionAssetDetails { .. } => FrameType::ConnectionAssetDetails,
            Self::StreamClose { .. } => FrameType::StreamClose,
            Self::StreamMoney { .. } => FrameType::StreamMoney,
            Self::StreamMaxMoney { .. } => FrameType::StreamMaxMoney,
            Self::StreamMoneyBlocked { .. } => FrameType::StreamMoneyBlocked,
            Self::StreamData { .. } => FrameType::StreamData,
            Self::StreamMaxData { .. } => FrameType::StreamMaxData,
            Self::StreamDataBlocked { .. } => FrameType::StreamDataBlocked,
            Self::StreamReceipt { .. } => FrameType::StreamReceipt,
        }
    }

    /// Appends the frame: type byte, then the contents as a
    /// var-octet-string.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.push(self.frame_type() as u8);
        let len = self.contents_len();
        oer::write_length_prefix(out, len);
        let start = out.len();
        self.write_contents(out);
        debug_assert_eq!(out.len() - start, len);
    }

    /// Bytes [`Frame::encode_to`] appends.
    pub fn encoded_len(&self) -> usize {
        1 + oer::var_octet_string_size(self.contents_len())
    }

    /// Parses the contents of a frame of type `frame_type`. `Ok(None)` for
    /// a type this crate does not know, which the caller skips.
    pub fn decode(frame_type: u8, contents: &[u8]) -> Result<Option<Self>, PacketError> {
        let Some(ty) = FrameType::from_u8(frame_type) else {
            return Ok(None);
        };
        let mut r = Reader::new(contents);
        let r = &mut r;
        let frame = match ty {
            FrameType::ConnectionClose => Self::ConnectionClose {
                code: r.read_u8()?.into(),
                message: read_text(r)?,
            },
            FrameType::ConnectionNewAddress => Self::ConnectionNewAddress {
                source_account: read_text(r)?,
            },
            FrameType::ConnectionMaxData => Self::ConnectionMaxData {
                max_offset: r.read_var_uint()?,
            },
            FrameType::ConnectionDataBlocked => Self::ConnectionDataBlocked {
                max_offset: r.read_var_uint()?,
            },
            FrameType::ConnectionMaxStreamId => Self::ConnectionMaxStreamId {
                max_stream_id: r.read_var_uint()?,
            },
            FrameType::ConnectionStreamIdBlocked => Self::ConnectionStreamIdBlocked {
                max_stream_id: r.read_var_uint()?,
            },
            FrameType::ConnectionAssetDetails => Self::ConnectionAssetDetails {
                source_asset_code: read_text(r)?,
                source_asset_scale: r.read_u8()?,
            },
            FrameType::StreamClose => Self::StreamClose {
                stream_id: r.read_var_uint()?,
                code: r.read_u8()?.into(),
                message: read_text(r)?,
            },
            FrameType::StreamMoney => Self::StreamMoney {
                stream_id: r.read_var_uint()?,
                shares: r.read_var_uint()?,
            },
            FrameType::StreamMaxMoney => Self::StreamMaxMoney {
                stream_id: r.read_var_uint()?,
                receive_max: r.read_var_uint_saturating()?,
                total_received: r.read_var_uint()?,
            },
            FrameType::StreamMoneyBlocked => Self::StreamMoneyBlocked {
                stream_id: r.read_var_uint()?,
                send_max: r.read_var_uint_saturating()?,
                total_sent: r.read_var_uint()?,
            },
            FrameType::StreamData => Self::StreamData {
                stream_id: r.read_var_uint()?,
                offset: r.read_var_uint()?,
                data: r.read_var_octet_string()?.to_vec(),
            },
            FrameType::StreamMaxData => Self::StreamMaxData {
                stream_id: r.read_var_uint()?,
                max_offset: r.read_var_uint()?,
            },
            FrameType::StreamDataBlocked => Self::StreamDataBlocked {
                stream_id: r.read_var_uint()?,
                max_offset: r.read_var_uint()?,
            },
            FrameType::StreamReceipt => Self::StreamReceipt {
                stream_id: r.read_var_uint()?,
                receipt: r.read_var_octet_string()?.to_vec(),
            },
        };
        // Anything left in `contents` belongs to fields we do not know yet.
        Ok(Some(frame))
    }

    fn contents_len(&self) -> usize {
        use oer::{var_octet_string_size as bytes, var_uint_size as uint};
        match self {
            Self::ConnectionClose { message, .. } => 1 + bytes(message.len()),
            Self::ConnectionNewAddress { source_account } => bytes(source_account.len()),
            Self::ConnectionMaxData { max_offset: n }
            | Self::ConnectionDataBlocked { max_offset: n }
            | Self::ConnectionMaxStreamId { max_stream_id: n }
            | Self::ConnectionStreamIdBlocked { max_stream_id: n } => uint(*n),
            Self::ConnectionAssetDetails {
                source_asset_code, ..
            } => bytes(source_asset_code.len()) + 1,
            Self::StreamClose {
                stream_id, message, ..
            } => uint(*stream_id) + 1 + bytes(message.len()),
            Self::StreamMoney { stream_id, shares } => uint(*stream_id) + uint(*shares),
            Self::StreamMaxMoney {
                stream_id,
                receive_max: a,
                total_received: b,
            }
            | Self::StreamMoneyBlocked {
                stream_id,
                send_max: a,
                total_sent: b,
            } => uint(*stream_id) + uint(*a) + uint(*b),
            Self::StreamData {
                stream_id,
                offset,
                data,
            } => uint(*stream_id) + uint(*offset) + bytes(data.len()),
            Self::StreamMaxData {
                stream_id,
                max_offset,
            }
            | Self::StreamDataBlocked {
                stream_id,
                max_offset,
            } => uint(*stream_id) + uint(*max_offset),
            Self::StreamReceipt { stream_id, receipt } => uint(*stream_id) + bytes(receipt.len()),
        }
    }

    fn write_contents(&self, out: &mut Vec<u8>) {
        use oer::{write_var_octet_string as bytes, write_var_uint as uint};
        match self {
            Self::ConnectionClose { code, message } => {
                out.push((*code).into());
                bytes(out, message.as_bytes());
            }
            Self::ConnectionNewAddress { source_account } => {
                bytes(out, source_account.as_bytes());
            }
            Self::ConnectionMaxData { max_offset: n }
            | Self::ConnectionDataBlocked { max_offset: n }
            | Self::ConnectionMaxStreamId { max_stream_id: n }
            | Self::ConnectionStreamIdBlocked { max_stream_id: n } => uint(out, *n),
            Self::ConnectionAssetDetails {
                source_asset_code,
                source_asset_scale,
            } => {
                bytes(out, source_asset_code.as_bytes());
                out.push(*source_asset_scale);
            }
            Self::StreamClose {
                stream_id,
                code,
                message,
            } => {
                uint(out, *stream_id);
                out.push((*code).into());
                bytes(out, message.as_bytes());
            }
            Self::StreamMoney { stream_id, shares } => {
                uint(out, *stream_id);
                uint(out, *shares);
            }
            Self::StreamMaxMoney {
                stream_id,
                receive_max: a,
                total_received: b,
            }
            | Self::StreamMoneyBlocked {
                stream_id,
                send_max: a,
                total_sent: b,
            } => {
                uint(out, *stream_id);
                uint(out, *a);
                uint(out, *b);
            }
            Self::StreamData {
                stream_id,
                offset,
                data,
            } => {
                uint(out, *stream_id);
                uint(out, *offset);
                bytes(out, data);
            }
            Self::StreamMaxData {
                stream_id,
                max_offset,
            }
            | Self::StreamDataBlocked {
                stream_id,
                max_offset,
            } => {
                uint(out, *stream_id);
                uint(out, *max_offset);
            }
            Self::StreamReceipt { stream_id, receipt } => {
                uint(out, *stream_id);
                bytes(out, receipt);
            }
        }
    }
}

fn read_text(r: &mut Reader<'_>) -> Result<String, PacketError> {
    Ok(String::from_utf8_lossy(r.read_var_octet_string()?).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_round_trip_through_bytes() {
        for b in 0..=u8::MAX {
            let code = StreamErrorCode::from(b);
            assert_eq!(u8::from(code), b);
            assert_eq!(
                matches!(code, StreamErrorCode::Unknown(_)),
                !(1..=9).contains(&b)
            );
        }
        assert_eq!(StreamErrorCode::from(9), StreamErrorCode::ApplicationError);
    }

    #[test]
    fn frame_types_round_trip() {
        for b in 0..=u8::MAX {
            if let Some(t) = FrameType::from_u8(b) {
                assert_eq!(t as u8, b);
            }
        }
    }

    #[test]
    fn saturating_and_strict_var_uints() {
        // Same shape as the ilp-protocol-stream and interledger-rs tests:
        // receive_max / send_max written with 9 bytes.
        let contents = [1, 123, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 123];
        assert_eq!(
            Frame::decode(0x12, &contents),
            Ok(Some(Frame::StreamMaxMoney {
                stream_id: 123,
                receive_max: u64::MAX,
                total_received: 123
            }))
        );
        assert_eq!(
            Frame::decode(0x13, &contents),
            Ok(Some(Frame::StreamMoneyBlocked {
                stream_id: 123,
                send_max: u64::MAX,
                total_sent: 123
            }))
        );
        // A 9-byte stream id is an error, not saturated.
        assert_eq!(
            Frame::decode(0x11, &[9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1]),
            Err(PacketError::Oer(oer::OerError::VarUintTooLong(9)))
        );
    }

    #[test]
    fn unknown_types_and_extra_fields() {
        assert_eq!(Frame::decode(0x89, b"whatever"), Ok(None));
        assert_eq!(Frame::decode(0x00, b""), Ok(None));
        // StreamMoney followed by a field from the future.
        assert_eq!(
            Frame::decode(0x11, &[1, 1, 1, 2, 0xaa, 0xbb]),
            Ok(Some(Frame::StreamMoney {
                stream_id: 1,
                shares: 2
            }))
        );
        assert!(Frame::decode(0x11, &[1, 1]).is_err());
    }

    #[test]
    fn empty_source_account_and_lossy_text() {
        assert_eq!(
            Frame::decode(0x02, &[0]),
            Ok(Some(Frame::ConnectionNewAddress {
                source_account: String::new()
            }))
        );
        assert_eq!(
            Frame::decode(0x01, &[1, 1, 0xff]),
            Ok(Some(Frame::ConnectionClose {
                code: StreamErrorCode::NoError,
                message: "\u{fffd}".into()
            }))
        );
    }
}
