// Self-check of the fetch ILP plugin without opd: the Node senders
// (@interledger/pay, ilp-protocol-stream) pay a stand-in receiver
// (@interledger/stream-receiver behind a Node ILP-over-HTTP listener, see
// fake-ilp-receiver.mjs) through HttpIlpPlugin. If this passes and
// ilp.test.mjs fails, the fault is on opd's side, not in the plugin.

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { closeConnection, pay, setupPayment, startQuote } from '@interledger/pay'
import { createConnection } from 'ilp-protocol-stream'
import { IlpError, deserializeIlpReject, deserializeIlpReply, isReject, serializeIlpPrepare } from 'ilp-packet'
import { fetch as fetchIldcp } from 'ilp-protocol-ildcp'

import { startFakeIlpReceiver } from './fake-ilp-receiver.mjs'
import { HttpIlpPlugin, decodeAmountTooLarge, postIlp } from './ilp-plugin.mjs'

const USD2 = { code: 'USD', scale: 2 }

describe('fetch ILP plugin against a stream-receiver stand-in', () => {
  let rx
  let capped
  before(async () => {
    // Liquidity far below pay's largest probe (10^12): probes must still get
    // F99, as from Rafiki and as from opd (its liquidity is checked only for
    // packets it would fulfil).
    rx = await startFakeIlpReceiver({ token: 'node-to-fake', peerAddress: 'test.node', asset: USD2, liquidity: 100_000, closedTags: new Set(['closed']) })
    capped = await startFakeIlpReceiver({ token: 'node-to-capped', peerAddress: 'test.node2', asset: USD2, maxPacketAmount: 100 })
  })
  after(async () => {
    await rx?.close()
    await capped?.close()
  })

  const plugin = (r = rx, token = 'node-to-fake') => new HttpIlpPlugin({ endpoint: r.endpoint, token })

  it('implements the plugin interface the senders call', async () => {
    const p = plugin()
    for (const m of ['connect', 'disconnect', 'isConnected', 'sendData', 'sendMoney', 'registerDataHandler', 'deregisterDataHandler', 'registerMoneyHandler', 'deregisterMoneyHandler']) {
      assert.equal(typeof p[m], 'function', m)
    }
    assert.equal(p.isConnected(), false)
    await p.connect()
    assert.equal(p.isConnected(), true)
    await p.disconnect()
    assert.equal(p.isConnected(), false)
  })

  it('fetches IL-DCP over the plugin', async () => {
    const p = plugin()
    const res = await fetchIldcp(p.sendData.bind(p))
    assert.deepEqual(res, { clientAddress: 'test.node', assetCode: 'USD', assetScale: 2 })
    const req = rx.requests.at(-1)
    assert.equal(req.method, 'POST')
    assert.equal(req.contentType, 'application/octet-stream')
    assert.equal(req.authorization, 'Bearer node-to-fake')
  })

  it('@interledger/pay quotes and pays a fixed delivery of 500', async () => {
    const p = plugin()
    const { ilpAddress, sharedSecret } = rx.credentials('pay-500')
    const destination = await setupPayment({ plugin: p, destinationAddress: ilpAddress, sharedSecret, destinationAsset: USD2 })
    const quote = await startQuote({ plugin: p, destination, sourceAsset: USD2, amountToDeliver: 500n })
    assert.equal(quote.minDeliveryAmount, 500n)
    // slippage 1 % by default: at most floor(500 / 0.99) + 1 may be sent.
    assert.equal(quote.maxSourceAmount, 506n)
    assert.ok(p.rejectCodes().length > 0 && p.rejectCodes().every((c) => c === 'F99'), `probe replies: ${p.rejectCodes()}`)
    const progress = await pay({ plugin: p, destination, quote })
    assert.equal(progress.error, undefined, `pay failed: ${progress.error}`)
    assert.equal(progress.amountDelivered, 500n)
    assert.equal(progress.amountSent, 500n)
    await closeConnection(p, destination)
    assert.equal(rx.received('pay-500'), 500n)
    assert.ok(rx.liquidity() <= 100_000n - 500n)
    assert.deepEqual(p.httpErrors, [])
  })

  it('@interledger/pay learns the asset from the receiver when none is given', async () => {
    const p = plugin()
    const { ilpAddress, sharedSecret } = rx.credentials('pay-asset-probe')
    const destination = await setupPayment({ plugin: p, destinationAddress: ilpAddress, sharedSecret })
    assert.deepEqual(destination.destinationAsset, USD2)
    const quote = await startQuote({ plugin: p, destination, sourceAsset: USD2, amountToDeliver: 7 })
    const progress = await pay({ plugin: p, destination, quote })
    assert.equal(progress.error, undefined, `pay failed: ${progress.error}`)
    assert.equal(progress.amountDelivered, 7n)
    assert.equal(rx.received('pay-asset-probe'), 7n)
  })

  it('@interledger/pay discovers a max packet amount from F08 data', async () => {
    const p = plugin(capped, 'node-to-capped')
    const { ilpAddress, sharedSecret } = capped.credentials('pay-capped')
    const destination = await setupPayment({ plugin: p, destinationAddress: ilpAddress, sharedSecret, destinationAsset: USD2 })
    const quote = await startQuote({ plugin: p, destination, sourceAsset: USD2, amountToDeliver: 500 })
    assert.equal(quote.maxPacketAmount, 100n)
    assert.ok(p.rejectCodes().includes('F08'), `replies: ${p.rejectCodes()}`)
    const progress = await pay({ plugin: p, destination, quote })
    assert.equal(progress.error, undefined, `pay failed: ${progress.error}`)
    assert.equal(progress.amountDelivered, 500n)
    assert.equal(capped.received('pay-capped'), 500n)
    const fulfilled = p.exchanges.filter((e) => e.reply === 'fulfill' && e.destination !== 'peer.config')
    assert.ok(fulfilled.length >= 5 && fulfilled.every((e) => BigInt(e.amount) <= 100n), JSON.stringify(fulfilled.map((e) => e.amount)))
  })

  it('ilp-protocol-stream sends a total of 50', async () => {
    const p = plugin()
    const { ilpAddress, sharedSecret } = rx.credentials('stream-50')
    const conn = await createConnection({ plugin: p, destinationAccount: ilpAddress, sharedSecret, slippage: 0.01 })
    try {
      const s = conn.createStream()
      await s.sendTotal(50, { timeout: 10_000 })
      assert.equal(s.totalSent, '50')
    } finally {
      await conn.end()
      await p.idle()
    }
    assert.equal(rx.received('stream-50'), 50n)
    assert.equal(p.exchanges[0].destination, 'peer.config', 'createConnection asks IL-DCP first')
    assert.deepEqual(p.httpErrors, [])
  })

  it('a raw over-max Prepare gets F08 with the 16-byte amounts', async () => {
    const { ilpAddress } = capped.credentials('raw')
    const prepare = serializeIlpPrepare({
      destination: ilpAddress,
      amount: '101',
      executionCondition: Buffer.alloc(32, 1),
      expiresAt: new Date(Date.now() + 30_000),
      data: Buffer.alloc(0)
    })
    const res = await postIlp(capped.endpoint, 'node-to-capped', prepare)
    assert.equal(res.status, 200)
    const reject = deserializeIlpReject(Buffer.from(await res.arrayBuffer()))
    assert.equal(reject.code, IlpError.F08_AMOUNT_TOO_LARGE)
    assert.deepEqual(decodeAmountTooLarge(reject.data), { receivedAmount: 101n, maximumAmount: 100n })
  })

  it('ilp-protocol-stream fails fast against a payment that takes no more money (F02)', async () => {
    const p = plugin()
    const { ilpAddress, sharedSecret } = rx.credentials('closed')
    const started = Date.now()
    await assert.rejects(async () => {
      const conn = await createConnection({ plugin: p, destinationAccount: ilpAddress, sharedSecret, slippage: 0.01 })
      try {
        await conn.createStream().sendTotal(50, { timeout: 10_000 })
      } finally {
        await conn.destroy()
      }
    })
    assert.ok(Date.now() - started < 5_000, 'no retrying on a final reject')
    await p.idle()
    const toPayment = p.exchanges.filter((e) => e.destination === ilpAddress)
    assert.ok(toPayment.length > 0 && toPayment.every((e) => e.reply === 'reject' && e.code === 'F02'), JSON.stringify(toPayment.map((e) => e.code)))
    assert.equal(rx.received('closed'), 0n)
  })

  it('a body that is no ILP Prepare gets 200 and F01', async () => {
    const res = await postIlp(rx.endpoint, 'node-to-fake', Buffer.from('certainly not an ILP packet'))
    assert.equal(res.status, 200)
    const reply = deserializeIlpReply(Buffer.from(await res.arrayBuffer()))
    assert.ok(isReject(reply))
    assert.equal(reply.code, IlpError.F01_INVALID_PACKET)
  })

  it('the plugin surfaces a wrong token as an error, not a reply', async () => {
    const p = plugin(rx, 'wrong-token')
    await assert.rejects(() => fetchIldcp(p.sendData.bind(p)), /401/)
    assert.equal(p.httpErrors.at(-1).status, 401)
  })
})
