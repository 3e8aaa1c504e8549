//! STREAM packets (RFC 29) and their encryption.
//!
//! A STREAM packet travels encrypted in the `data` of an ILP packet. Its
//! plaintext is
//!
//! ```text
//! version (u8, 1) ‖ ilpPacketType (u8: 12, 13 or 14) ‖ sequence (var-uint)
//! ‖ prepareAmount (var-uint) ‖ frame count (var-uint) ‖ frames
//! ```
//!
//! with each frame as a type byte plus a var-octet-string (see [`frame`]).
//! In a request, `prepareAmount` is the least the receiver must get; in a
//! reply, it is the amount that actually arrived, which is how senders
//! measure the exchange rate.
//!
//! As RFC 29 asks, and as `ilp-protocol-stream` does, the decoder ignores
//! bytes after the announced number of frames (senders may pad packets to
//! hide their size) and skips frames of unknown types. The ILP packet type
//! must be 12, 13 or 14.
//!
//! Encryption is AES-256-GCM under
//! `HMAC-SHA256(sharedSecret, "ilp_stream_encryption")` with a 12-byte IV
//! the caller supplies (fresh and random for every packet in production,
//! fixed in tests), laid out as `IV ‖ tag ‖ ciphertext`.

pub mod frame;
pub mod receipt;
pub mod receiver;
pub mod sender;

pub use frame::{Frame, FrameType, StreamErrorCode};

use crate::crypto::{self, stream_encryption_key, IV_LEN, OVERHEAD};
use crate::error::PacketError;
use crate::oer::{self, Reader};
use crate::packet::{PacketType, MAX_DATA_LEN};

/// The only STREAM version.
pub const STREAM_VERSION: u8 = 1;

/// Longest STREAM plaintext whose ciphertext still fits in an ILP packet's
/// `data` (32767 - 28 bytes).
pub const MAX_PLAINTEXT_LEN: usize = MAX_DATA_LEN - OVERHEAD;

/// A decrypted STREAM packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamPacket {
    /// Number of the request this packet is (or answers).
    pub sequence: u64,
    /// The ILP packet this STREAM packet rides in (a reply echoes the
    /// request's sequence with type 13 or 14).
    pub ilp_packet_type: PacketType,
    /// Request: least the receiver must get. Reply: what arrived.
    pub prepare_amount: u64,
    /// The frames, in order.
    pub frames: Vec<Frame>,
}

impl StreamPacket {
    /// The plaintext bytes.
    pub fn encode(&self) -> Vec<u8> {
        let len = 2
            + oer::var_uint_size(self.sequence)
            + oer::var_uint_size(self.prepare_amount)
            + oer::var_uint_size(self.frames.len() as u64)
            + self.frames.iter().map(Frame::encoded_len).sum::<usize>();
        let mut out = Vec::with_capacity(len);
        out.push(STREAM_VERSION);
        out.push(self.ilp_packet_type.to_u8());
        oer::write_var_uint(&mut out, self.sequence);
        oer::write_var_uint(&mut out, self.prepare_amount);
        oer::write_var_uint(&mut out, self.frames.len() as u64);
        for frame in &self.frames {
            frame.encode_to(&mut out);
        }
        debug_assert_eq!(out.len(), len);
        out
    }

    /// Parses plaintext bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, PacketError> {
        let mut r = Reader::new(bytes);
        let version = r.read_u8()?;
        if version != STREAM_VERSION {
            return Err(PacketError::UnsupportedStreamVersion(version));
        }
        let ilp_packet_type = PacketType::try_from(r.read_u8()?)?;
        let sequence = r.read_var_uint()?;
        let prepare_amount = r.read_var_uint()?;
        let count = r.read_var_uint()?;
        // `count` comes from the peer: never allocate by it. Each frame
        // takes at least two bytes, so the loop ends with the input.
        let mut frames = Vec::new();
        for _ in 0..count {
            let frame_type = r.read_u8()?;
            let contents = r.read_var_octet_string()?;
            if let Some(frame) = Frame::decode(frame_type, contents)? {
                frames.push(frame);
            }
        }
        Ok(Self {
            sequence,
            ilp_packet_type,
            prepare_amount,
            frames,
        })
    }

    /// Encodes and encrypts the packet for an ILP packet's `data`.
    pub fn encrypt_with(
        &self,
        shared_secret: &[u8; 32],
        iv: [u8; IV_LEN],
    ) -> Result<Vec<u8>, PacketError> {
        encrypt(shared_secret, &self.encode(), iv)
    }

    /// Decrypts an ILP packet's `data` and parses the STREAM packet in it.
    pub fn decrypt_and_decode(shared_secret: &[u8; 32], data: &[u8]) -> Result<Self, PacketError> {
        Self::decode(&decrypt(shared_secret, data)?)
    }
}

/// Encrypts STREAM plaintext under the connection's shared secret with the
/// given IV: `IV ‖ tag ‖ ciphertext`. Fails with
/// [`PacketError::DataTooLong`] if the result would not fit in an ILP
/// packet (plaintext over [`MAX_PLAINTEXT_LEN`] bytes).
pub fn encrypt(
    shared_secret: &[u8; 32],
    plaintext: &[u8],
    iv: [u8; IV_LEN],
) -> Result<Vec<u8>, PacketError> {
    if plaintext.len() > MAX_PLAINTEXT_LEN {
        return Err(PacketError::DataTooLong(plaintext.len() + OVERHEAD));
    }
    crypto::encrypt(&stream_encryption_key(shared_secret), iv, plaintext)
        .ok_or(PacketError::DataTooLong(plaintext.len() + OVERHEAD))
}

/// Decrypts `IV ‖ tag ‖ ciphertext` under the connection's shared secret.
pub fn decrypt(shared_secret: &[u8; 32], data: &[u8]) -> Result<Vec<u8>, PacketError> {
    crypto::decrypt(&stream_encryption_key(shared_secret), data)
        .ok_or(PacketError::DecryptionFailed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet() -> StreamPacket {
        StreamPacket {
            sequence: 5,
            ilp_packet_type: PacketType::Reject,
            prepare_amount: 99,
            frames: vec![
                Frame::StreamMoney {
                    stream_id: 1,
                    shares: 1,
                },
                Frame::StreamMoney {
                    stream_id: 2,
                    shares: 2,
                },
            ],
        }
    }

    #[test]
    fn skips_unknown_frames_and_ignores_junk() {
        // As ilp-protocol-stream's "should skip unknown frames" and "should
        // stop reading after the number of frames specified".
        let mut bytes = packet().encode();
        let count_at = 2 + 2 + 2; // version, type, sequence, amount
        assert_eq!(&bytes[count_at..count_at + 2], &[1, 2]);
        bytes[count_at + 1] = 4;
        bytes.extend_from_slice(&[0xff, 2, 0x0f, 0x0f]); // unknown type 255
        Frame::StreamMoney {
            stream_id: 3,
            shares: 3,
        }
        .encode_to(&mut bytes);
        bytes.extend_from_slice(&[0, 0, 0, 0]); // padding
        let decoded = StreamPacket::decode(&bytes).unwrap();
        assert_eq!(decoded.frames.len(), 3);
        assert_eq!(
            decoded.frames[2],
            Frame::StreamMoney {
                stream_id: 3,
                shares: 3
            }
        );
    }

    #[test]
    fn refuses_bad_headers() {
        // ilp-protocol-stream: a version byte of 0x9c (156).
        assert_eq!(
            StreamPacket::decode(&[0x9c, 0x4f, 0x51]),
            Err(PacketError::UnsupportedStreamVersion(156))
        );
        assert_eq!(
            StreamPacket::decode(&[1, 15, 1, 0, 1, 0, 1, 0]),
            Err(PacketError::UnknownPacketType(15))
        );
        // Announces 3 frames, has none.
        assert!(StreamPacket::decode(&[1, 12, 1, 0, 1, 0, 1, 3]).is_err());
        // Announces u64::MAX frames: must fail on the input, not allocate.
        let mut huge = vec![1, 12, 1, 0, 1, 0, 8];
        huge.extend_from_slice(&[0xff; 8]);
        assert!(StreamPacket::decode(&huge).is_err());
    }

    #[test]
    fn encryption_round_trip_and_limits() {
        let secret = [3u8; 32];
        let data = packet().encrypt_with(&secret, [4; IV_LEN]).unwrap();
        assert_eq!(&data[..IV_LEN], &[4; IV_LEN]);
        assert_eq!(
            StreamPacket::decrypt_and_decode(&secret, &data),
            Ok(packet())
        );
        assert_eq!(
            StreamPacket::decrypt_and_decode(&[9u8; 32], &data),
            Err(PacketError::DecryptionFailed)
        );
        assert_eq!(
            decrypt(&secret, &data[..OVERHEAD - 1]),
            Err(PacketError::DecryptionFailed)
        );

        let max = vec![0u8; MAX_PLAINTEXT_LEN];
        assert_eq!(
            encrypt(&secret, &max, [0; IV_LEN]).unwrap().len(),
            MAX_DATA_LEN
        );
        assert_eq!(
            encrypt(&secret, &[max, vec![0]].concat(), [0; IV_LEN]),
            Err(PacketError::DataTooLong(MAX_DATA_LEN + 1))
        );
    }
}
