//! STREAM receipts and receipt-carrying SPSP credentials against the
//! reference JavaScript packages: the vectors below were printed by
//! `interop/node/vectors/receipts.cjs` (ilp-protocol-stream 2.7.2-alpha.3's
//! `createReceipt`, @interledger/stream-receiver 0.3.3-alpha.3's
//! `generateCredentials` with a `receiptSetup`).
#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use opd_ilp::{
    create_receipt, decode_destination, generate_credentials_with_receipts, verify_receipt,
    IlpAddress, Receipt, ReceiptError, ReceiptSetup, StreamSecret,
};

fn setup() -> ReceiptSetup {
    ReceiptSetup {
        nonce: std::array::from_fn(|i| i as u8),
        secret: std::array::from_fn(|i| 0x20 + i as u8),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `createReceipt({nonce, secret, streamId: 1, totalReceived})`.
const JS_RECEIPTS: [(u64, &str); 3] = [
    (
        1,
        "01000102030405060708090a0b0c0d0e0f010000000000000001ea7e219af0bd7cc64f8be93947e0285e62d90a399cf78e7bab2a75cf8ea0196e",
    ),
    (
        1_234_567_890_123,
        "01000102030405060708090a0b0c0d0e0f010000011f71fb04cbc967d764abe4503f2d31943a8479fdbbbec9b63ed9b40e1749f9af171a55409d",
    ),
    (
        u64::MAX,
        "01000102030405060708090a0b0c0d0e0f01ffffffffffffffff6e8aeeabd97c5d589ee2ba11e71d65043c15602752547779f3645e7e6061b35e",
    ),
];

#[test]
fn receipts_are_the_reference_implementations_byte_for_byte() {
    for (total, js) in JS_RECEIPTS {
        let ours = create_receipt(&setup(), 1, total);
        assert_eq!(hex(&ours), js, "total {total}");
        let read = verify_receipt(&ours, &setup().secret).unwrap();
        assert_eq!(
            read,
            Receipt {
                nonce: setup().nonce,
                stream_id: 1,
                total_received: total
            }
        );
        assert_eq!(
            verify_receipt(&ours, &[0; 32]),
            Err(ReceiptError::Signature)
        );
    }
}

/// `generateCredentials({paymentTag, receiptSetup, asset: USD 2})` from
/// server secret 0x00..=0x1f at `test.opd`.
const JS_ADDRESS: &str = "test.opd.7maQ2-CXt6H-VfqJuj3QNXxVla-SX9dPd9hd3WGaBhsh2c49d9rgFPQVHDtBmH_ZgyEJrEtgh1rg4h2sn8Gia-Sbr8AZZ0HxUk_uQgKaaWY21gg8csvDm4Cins9fvmJwp_3VxBjNixni1xfeSTZzqpbCIa5wJeXQAg";
const JS_SHARED_SECRET: &str = "f37ac99a2cbf894963ceb7dbf8e7dc947f8e2b7bd8663551a108907beb69aa60";
const JS_TAG: &str = "w:0190f3a2-7c1e-7d0a-9a43-5b7e0f6c2d81";

fn server() -> IlpAddress {
    "test.opd".parse().unwrap()
}

fn server_secret() -> StreamSecret {
    StreamSecret::from_bytes(std::array::from_fn(|i| i as u8))
}

#[test]
fn receipt_credentials_of_the_reference_receiver_decode_with_their_receipt_setup() {
    let token = decode_destination(&server_secret(), &server(), JS_ADDRESS).unwrap();
    assert_eq!(token.payment_tag, JS_TAG);
    assert_eq!(token.asset, Some(("USD".to_owned(), 2)));
    assert_eq!(hex(&token.shared_secret), JS_SHARED_SECRET);
    let receipt = token.receipt.unwrap();
    assert_eq!(receipt.setup, setup());
    let token_bytes = URL_SAFE_NO_PAD
        .decode(JS_ADDRESS.strip_prefix("test.opd.").unwrap())
        .unwrap();
    assert_eq!(receipt.connection, opd_ilp::crypto::sha256(&token_bytes));
    // A sub-address a sender appends is the same connection.
    let longer = format!("{JS_ADDRESS}.sender-part");
    let again = decode_destination(&server_secret(), &server(), &longer).unwrap();
    assert_eq!(again.receipt.unwrap().connection, receipt.connection);
}

#[test]
fn receipt_credentials_are_the_reference_receivers_byte_for_byte() {
    // The token starts with its IV: the same IV must give the same address.
    let token = URL_SAFE_NO_PAD
        .decode(JS_ADDRESS.strip_prefix("test.opd.").unwrap())
        .unwrap();
    let iv: [u8; 12] = token[..12].try_into().unwrap();
    let ours = generate_credentials_with_receipts(
        &server_secret(),
        &server(),
        JS_TAG,
        Some(("USD", 2)),
        Some(&setup()),
        iv,
    )
    .unwrap();
    assert_eq!(ours.ilp_address.as_str(), JS_ADDRESS);
    assert_eq!(hex(&ours.shared_secret), JS_SHARED_SECRET);
}

#[test]
fn credentials_without_a_receipt_setup_decode_without_one() {
    let ours = generate_credentials_with_receipts(
        &server_secret(),
        &server(),
        JS_TAG,
        Some(("USD", 2)),
        None,
        [3; 12],
    )
    .unwrap();
    let token = decode_destination(&server_secret(), &server(), ours.ilp_address.as_str()).unwrap();
    assert_eq!(token.receipt, None);
}
