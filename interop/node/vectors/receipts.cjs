// Prints the STREAM receipt and SPSP credential vectors of
// crates/opd-ilp/tests/receipts.rs, made by the reference JavaScript
// packages (ilp-protocol-stream's createReceipt, @interledger/stream-receiver's
// generateCredentials). Run from interop/node after `npm ci`:
//   node vectors/receipts.cjs
// The credentials use a random IV each run: the Rust test takes the IV
// from the token (its first 12 bytes) and must rebuild the same address.
const { createReceipt } = require('ilp-protocol-stream/dist/src/util/receipt')
const { StreamServer } = require('@interledger/stream-receiver')

const nonce = Buffer.from([...Array(16).keys()])
const secret = Buffer.from([...Array(32).keys()].map((i) => 0x20 + i))
for (const total of ['1', '1234567890123', '18446744073709551615']) {
  const receipt = createReceipt({ nonce, secret, streamId: 1, totalReceived: total })
  console.log('receipt', total, receipt.toString('hex'))
}
const server = new StreamServer({
  serverSecret: Buffer.from([...Array(32).keys()]),
  serverAddress: 'test.opd'
})
const credentials = server.generateCredentials({
  paymentTag: 'w:0190f3a2-7c1e-7d0a-9a43-5b7e0f6c2d81',
  receiptSetup: { nonce, secret },
  asset: { code: 'USD', scale: 2 }
})
console.log('address', credentials.ilpAddress)
console.log('shared secret', credentials.sharedSecret.toString('hex'))
