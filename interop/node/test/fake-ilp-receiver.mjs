// A stand-in for another server's ILP side, so the fetch plugin and the
// Node senders can be checked without opd: an ILP-over-HTTP listener that
// checks the bearer token, answers IL-DCP (`peer.config`) and otherwise
// hands each Prepare to @interledger/stream-receiver's stateless
// StreamServer (which answers probes with F99, like opd must).

import crypto from 'node:crypto'
import http from 'node:http'

import {
  Errors,
  IlpError,
  deserializeIlpPrepare,
  serializeIlpFulfill,
  serializeIlpReject,
  serializeIlpReply
} from 'ilp-packet'
import { serializeIldcpResponse } from 'ilp-protocol-ildcp'
import { StreamServer } from '@interledger/stream-receiver'

/**
 * Starts the receiver on 127.0.0.1 (a free port).
 *   token            the bearer token the sender must present
 *   peerAddress      the address IL-DCP hands the sender (its staticIlpAddress)
 *   asset            { code, scale } of the peering and of the receiver
 *   serverAddress    the receiver's own ILP address
 *   maxPacketAmount  optional: larger Prepares get F08 with the amounts
 *   liquidity        optional: how much the sender may still send; checked,
 *                    as Rafiki does, only for Prepares about to be fulfilled
 *                    (probes never see T04), debited on fulfil
 *   closedTags       payment tags that no longer accept money (an expired
 *                    incoming payment): their Prepares get `closedCode`
 *   closedCode       default F02
 *   StreamServerClass  the stream-receiver's StreamServer to use (default
 *                    0.3.3-alpha.3's, which answers probes F99; 0.3.3-alpha.4's
 *                    answers F05)
 * Returns { endpoint, server, credentials(paymentTag), received(paymentTag), requests, close() }.
 */
export async function startFakeIlpReceiver({
  token = 'node-to-fake',
  peerAddress = 'test.node',
  asset = { code: 'USD', scale: 2 },
  serverAddress = 'test.fake',
  maxPacketAmount,
  liquidity,
  closedTags = new Set(),
  closedCode = IlpError.F02_UNREACHABLE,
  StreamServerClass = StreamServer
} = {}) {
  let remaining = liquidity === undefined ? undefined : BigInt(liquidity)
  const stream = new StreamServerClass({ serverSecret: crypto.randomBytes(32), serverAddress })
  const received = new Map()
  const requests = []
  // The code of every Reject the STREAM receiver itself sent.
  const rejectCodes = []

  const reject = (code, message, data = Buffer.alloc(0)) =>
    serializeIlpReject({ code, message, triggeredBy: serverAddress, data })

  const handle = (body) => {
    let prepare
    try {
      prepare = deserializeIlpPrepare(body)
    } catch (err) {
      return reject(IlpError.F01_INVALID_PACKET, `not an ILP Prepare: ${err.message}`)
    }
    if (prepare.destination === 'peer.config') {
      // A whole Fulfill (zero fulfillment, OER address/scale/code data).
      return serializeIldcpResponse({ clientAddress: peerAddress, assetCode: asset.code, assetScale: asset.scale })
    }
    if (maxPacketAmount !== undefined && BigInt(prepare.amount) > BigInt(maxPacketAmount)) {
      const err = new Errors.AmountTooLargeError('packet amount too large', {
        receivedAmount: prepare.amount,
        maximumAmount: String(maxPacketAmount)
      })
      return reject(IlpError.F08_AMOUNT_TOO_LARGE, err.message, err.ilpErrorData)
    }
    const tag = stream.decodePaymentTag(prepare.destination)
    if (tag !== undefined && closedTags.has(tag)) return reject(closedCode, 'payment no longer accepts money')
    const reply = stream.createReply(prepare)
    if (typeof reply.accept === 'function') {
      if (remaining !== undefined) {
        if (BigInt(prepare.amount) > remaining) return reject(IlpError.T04_INSUFFICIENT_LIQUIDITY, 'insufficient liquidity')
        remaining -= BigInt(prepare.amount)
      }
      const total = (received.get(tag) ?? 0n) + BigInt(prepare.amount)
      received.set(tag, total)
      reply.setTotalReceived(total.toString())
      return serializeIlpFulfill(reply.accept())
    }
    if (reply.code) rejectCodes.push(reply.code)
    return serializeIlpReply(reply)
  }

  const server = http.createServer((req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      const auth = req.headers.authorization || ''
      requests.push({ method: req.method, url: req.url, contentType: req.headers['content-type'], authorization: auth })
      if (auth !== `Bearer ${token}`) {
        res.writeHead(401, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { code: 'invalid_peer_token', description: 'unknown bearer token' } }))
        return
      }
      if (req.method !== 'POST' || req.headers['content-type'] !== 'application/octet-stream') {
        res.writeHead(400, { 'content-type': 'text/plain' })
        res.end('POST application/octet-stream expected')
        return
      }
      let out
      try {
        out = handle(Buffer.concat(chunks))
      } catch (err) {
        out = reject(IlpError.T00_INTERNAL_ERROR, String(err?.message ?? err))
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' })
      res.end(out)
    })
  })
  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const { port } = server.address()
  return {
    endpoint: `http://127.0.0.1:${port}/ilp`,
    server,
    requests,
    rejectCodes,
    /** STREAM credentials of one payment (its tag), in the receiver's asset. */
    credentials: (paymentTag) => stream.generateCredentials({ paymentTag, asset }),
    /** What has been fulfilled for one payment tag. */
    received: (paymentTag) => received.get(paymentTag) ?? 0n,
    /** What the sender may still send (undefined: no limit). */
    liquidity: () => remaining,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.()
        server.close(() => resolve())
      })
  }
}
