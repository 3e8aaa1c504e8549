// opd's ILP receiving side against real Interledger senders: a Node peer
// pays opd incoming payments over ILP-over-HTTP with @interledger/pay
// (quote + pay, the sender Rafiki uses) and ilp-protocol-stream (sendTotal),
// through the fetch plugin of ilp-plugin.mjs. The peer is set up through the
// admin API (POST /peers, liquidity deposits); the incoming payments through
// the official Open Payments client, whose responses the harness checks
// against the specs as in the other suites. ilp-plugin.test.mjs checks the
// plugin and the senders against a Node receiver without opd.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'

import { closeConnection, pay, setupPayment, startQuote } from '@interledger/pay'
import { IlpError, deserializeIlpReject, deserializeIlpReply, isReject, serializeIlpPrepare } from 'ilp-packet'
import { fetch as fetchIldcp } from 'ilp-protocol-ildcp'
import { createConnection } from 'ilp-protocol-stream'

import { adminOk, nonInteractiveGrant, once, rawFetch, usd, useWorld } from './harness.mjs'
import { HttpIlpPlugin, decodeAmountTooLarge, postIlp } from './ilp-plugin.mjs'

const USD2 = { code: 'USD', scale: 2 }
const DEPOSIT = 100_000n
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Rejects after `ms` unless `promise` settles first. */
function within(ms, promise, what) {
  let timer
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms)
    })
  ])
}

describe('ILP receiving: Node senders pay opd incoming payments', () => {
  const w = useWorld({ ilp: true, webhooks: true })

  // -------------------------------------------------------------------------
  // Fixtures

  const bob = once('wallet address bob', () => w.client.walletAddress.get({ url: w.urls.bob }))
  const ipGrant = once('incoming-payment grant', async () =>
    nonInteractiveGrant(w, (await bob()).authServer, [{ type: 'incoming-payment', actions: ['create', 'read'] }])
  )
  const createIncoming = async (body) => {
    const wallet = await bob()
    const grant = await ipGrant()
    return w.client.incomingPayment.create(
      { url: wallet.resourceServer, accessToken: grant.access_token.value },
      { walletAddress: wallet.id, metadata: { interopRef: crypto.randomUUID() }, ...body }
    )
  }
  const getIncoming = async (id) => w.client.incomingPayment.get({ url: id, accessToken: (await ipGrant()).access_token.value })
  /** The ILP method of an incoming payment, its shared secret decoded. */
  const ilpMethod = (ip) => {
    const m = ip.methods.find((x) => x.type === 'ilp')
    assert.ok(m, `no ilp method in ${JSON.stringify(ip.methods)}`)
    assert.ok(m.ilpAddress.startsWith(`${w.opd.ilpAddress}.`), `ilpAddress ${m.ilpAddress} is not under ${w.opd.ilpAddress}`)
    const sharedSecret = Buffer.from(m.sharedSecret, 'base64url')
    assert.equal(sharedSecret.length, 32, `sharedSecret ${m.sharedSecret} is not 32 bytes of base64url`)
    return { ilpAddress: m.ilpAddress, sharedSecret }
  }

  /** A peer with an incoming token, funded with DEPOSIT; checks the admin responses. */
  const createPeer = async ({ name, staticIlpAddress, token, maxPacketAmount }) => {
    const body = { name, staticIlpAddress, asset: { code: 'USD', scale: 2 }, http: { incoming: { authTokens: [token] } } }
    if (maxPacketAmount !== undefined) body.maxPacketAmount = maxPacketAmount
    const peer = await adminOk(w.admin, 'POST', '/peers', body, 201)
    assert.equal(typeof peer.id, 'string', JSON.stringify(peer))
    assert.equal(peer.name, name)
    assert.equal(peer.staticIlpAddress, staticIlpAddress)
    assert.deepEqual(peer.asset, { code: 'USD', scale: 2 })
    if (maxPacketAmount !== undefined) assert.equal(peer.maxPacketAmount, maxPacketAmount)
    assert.equal(peer.http?.incoming?.authTokens, 1, `authTokens is a count: ${JSON.stringify(peer.http)}`)
    assert.equal(peer.liquidity, '0')
    assert.ok(!JSON.stringify(peer).includes(token), `the token is echoed: ${JSON.stringify(peer)}`)
    await adminOk(w.admin, 'POST', `/peers/${encodeURIComponent(peer.id)}/deposits`, { amount: String(DEPOSIT), idempotencyKey: crypto.randomUUID() }, 201)
    assert.equal(await peerBalance(peer), DEPOSIT)
    return { ...peer, token }
  }
  const peerBalance = async (peer) => {
    const res = await adminOk(w.admin, 'GET', `/peers/${encodeURIComponent(peer.id)}/balance`, undefined, 200)
    assert.match(res.balance, /^\d+$/, `balance is a uint64 string: ${JSON.stringify(res)}`)
    return BigInt(res.balance)
  }
  const sender = once('peer node-sender', () => createPeer({ name: 'node-sender', staticIlpAddress: 'test.node', token: 'node-to-opd' }))
  const capped = once('peer node-capped', () =>
    createPeer({ name: 'node-capped', staticIlpAddress: 'test.node-capped', token: 'node-capped-to-opd', maxPacketAmount: '100' })
  )
  const plugin = (peer) => new HttpIlpPlugin({ endpoint: w.opd.ilpUrl, token: peer.token, fetch: rawFetch })

  const assertLedgerBalanced = async () => {
    const res = await w.admin('GET', '/ledger/check')
    assert.equal(res.status, 200, `GET /ledger/check: ${JSON.stringify(res.body)}`)
    assert.equal(res.body?.balanced, true, `the ledger is not balanced: ${JSON.stringify(res.body)}`)
  }

  /** Quote with @interledger/pay for what is left to deliver, then pay; returns { quote, progress }. */
  const payIncoming = async (p, ip, setupExtra = {}) => {
    const { ilpAddress, sharedSecret } = ilpMethod(ip)
    const destination = await setupPayment({
      plugin: p,
      destinationAddress: ilpAddress,
      sharedSecret,
      destinationAsset: { code: ip.incomingAmount.assetCode, scale: ip.incomingAmount.assetScale },
      ...setupExtra
    })
    // Same asset on both sides: the external rate is 1 and the sender's asset
    // (the peering's, USD/2) must be named for pay to enforce it.
    const quote = await startQuote({
      plugin: p,
      destination,
      sourceAsset: USD2,
      amountToDeliver: BigInt(ip.incomingAmount.value) - BigInt(ip.receivedAmount.value)
    })
    const progress = await pay({ plugin: p, destination, quote })
    await closeConnection(p, destination)
    await p.idle()
    return { destination, quote, progress }
  }

  // -------------------------------------------------------------------------

  it('creates peers through the admin API and funds them', async () => {
    const peer = await sender()
    const got = await capped()
    assert.notEqual(peer.id, got.id)
  })

  it('answers IL-DCP with the peer address and asset', async () => {
    for (const [peer, address] of [
      [await sender(), 'test.node'],
      [await capped(), 'test.node-capped']
    ]) {
      const p = plugin(peer)
      const res = await fetchIldcp(p.sendData.bind(p))
      assert.deepEqual(p.exchanges.map((e) => e.reply), ['fulfill'])
      assert.deepEqual(res, { clientAddress: address, assetCode: 'USD', assetScale: 2 })
    }
  })

  it('@interledger/pay quotes against opd and pays an incoming payment of 500', async () => {
    const peer = await sender()
    const ip = await createIncoming({ incomingAmount: usd(500), expiresAt: new Date(Date.now() + 3_600_000).toISOString() })
    assert.deepEqual(ip.receivedAmount, usd(0))
    const before = await peerBalance(peer)
    const p = plugin(peer)

    const { quote, progress } = await payIncoming(p, ip)
    // Probes are unfulfillable and must come back as F99 carrying the STREAM
    // reply: pay 0.4.0-alpha.9 ends the payment on any other F code.
    const codes = p.rejectCodes()
    assert.ok(codes.length > 0, 'the quote sent probes')
    assert.deepEqual([...new Set(codes)], ['F99'], `reject codes seen: ${codes}`)
    assert.equal(quote.minDeliveryAmount, 500n)
    assert.equal(quote.maxSourceAmount, 506n) // floor(500 / 0.99) + 1 with the default 1 % slippage
    assert.equal(progress.error, undefined, `pay failed: ${progress.error}; exchanges ${JSON.stringify(p.exchanges.map(({ data, ...e }) => e))}`)
    assert.equal(progress.amountDelivered, 500n)
    assert.equal(progress.amountSent, 500n)
    assert.equal(p.fulfilledAmount(), 500n)
    assert.deepEqual(p.httpErrors, [])

    const after = await getIncoming(ip.id)
    assert.deepEqual(after.receivedAmount, usd(500))
    assert.equal(after.completed, true)
    const event = await w.webhooks.waitFor((e) => e.type === 'incoming_payment.completed' && e.data?.id === ip.id, {
      what: `incoming_payment.completed for ${ip.id}`
    })
    assert.deepEqual(event.problems, [])
    assert.deepEqual(event.data.receivedAmount, usd(500))
    assert.equal(event.data.completed, true)
    assert.equal(before - (await peerBalance(peer)), 500n, 'the peer liquidity fell by what was delivered')
    await assertLedgerBalanced()
  })

  it('@interledger/pay learns the asset from opd when none is given', async () => {
    const peer = await sender()
    const ip = await createIncoming({ incomingAmount: usd(7), expiresAt: new Date(Date.now() + 3_600_000).toISOString() })
    const { ilpAddress, sharedSecret } = ilpMethod(ip)
    const p = plugin(peer)
    const destination = await setupPayment({ plugin: p, destinationAddress: ilpAddress, sharedSecret })
    assert.deepEqual(destination.destinationAsset, USD2, 'ConnectionAssetDetails in reply to ConnectionNewAddress')
    const quote = await startQuote({ plugin: p, destination, sourceAsset: USD2, amountToDeliver: 7 })
    const progress = await pay({ plugin: p, destination, quote })
    await closeConnection(p, destination)
    assert.equal(progress.error, undefined, `pay failed: ${progress.error}`)
    assert.equal(progress.amountDelivered, 7n)
    assert.deepEqual((await getIncoming(ip.id)).receivedAmount, usd(7))
  })

  it('ilp-protocol-stream sends a total of 50', async () => {
    const peer = await sender()
    const ip = await createIncoming({ incomingAmount: usd(1000), expiresAt: new Date(Date.now() + 3_600_000).toISOString() })
    const { ilpAddress, sharedSecret } = ilpMethod(ip)
    const before = await peerBalance(peer)
    const p = plugin(peer)
    const conn = await createConnection({ plugin: p, destinationAccount: ilpAddress, sharedSecret, slippage: 0.01 })
    try {
      const stream = conn.createStream()
      await stream.sendTotal(50, { timeout: 15_000 })
      assert.equal(stream.totalSent, '50')
    } finally {
      await within(10_000, conn.end(), 'closing the STREAM connection')
      await p.idle()
    }
    assert.equal(p.exchanges[0].destination, 'peer.config', 'ilp-protocol-stream asks IL-DCP first')
    assert.equal(p.fulfilledAmount(), 50n)
    assert.deepEqual(p.httpErrors, [])
    const after = await getIncoming(ip.id)
    assert.deepEqual(after.receivedAmount, usd(50))
    assert.equal(after.completed, false)
    assert.equal(before - (await peerBalance(peer)), 50n)
    await assertLedgerBalanced()
  })

  it('a peer with maxPacketAmount 100: pay discovers it from F08 and still pays 500', async () => {
    const peer = await capped()
    const ip = await createIncoming({ incomingAmount: usd(500), expiresAt: new Date(Date.now() + 3_600_000).toISOString() })
    const before = await peerBalance(peer)
    const p = plugin(peer)
    const { quote, progress } = await payIncoming(p, ip)
    assert.ok(p.rejectCodes().includes('F08'), `reject codes seen: ${p.rejectCodes()}`)
    assert.equal(quote.maxPacketAmount, 100n)
    assert.equal(progress.error, undefined, `pay failed: ${progress.error}`)
    assert.equal(progress.amountDelivered, 500n)
    const fulfilled = p.exchanges.filter((e) => e.reply === 'fulfill' && e.destination !== 'peer.config')
    assert.ok(fulfilled.length >= 5, `at least 5 packets: ${fulfilled.map((e) => e.amount)}`)
    assert.ok(fulfilled.every((e) => BigInt(e.amount) <= 100n), `a packet above 100: ${fulfilled.map((e) => e.amount)}`)
    const after = await getIncoming(ip.id)
    assert.deepEqual(after.receivedAmount, usd(500))
    assert.equal(after.completed, true)
    assert.equal(before - (await peerBalance(peer)), 500n)
    await assertLedgerBalanced()
  })

  it('a raw Prepare of 101 over that peer gets F08 with receivedAmount 101, maximumAmount 100', async () => {
    const peer = await capped()
    const ip = await createIncoming({ incomingAmount: usd(500), expiresAt: new Date(Date.now() + 3_600_000).toISOString() })
    const prepare = serializeIlpPrepare({
      destination: ilpMethod(ip).ilpAddress,
      amount: '101',
      executionCondition: crypto.randomBytes(32),
      expiresAt: new Date(Date.now() + 30_000),
      data: Buffer.alloc(0)
    })
    const res = await postIlp(w.opd.ilpUrl, peer.token, prepare, { fetch: rawFetch })
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') || '', /^application\/octet-stream\b/)
    const reject = deserializeIlpReject(Buffer.from(await res.arrayBuffer()))
    assert.equal(reject.code, IlpError.F08_AMOUNT_TOO_LARGE, JSON.stringify(reject))
    assert.deepEqual(decodeAmountTooLarge(reject.data), { receivedAmount: 101n, maximumAmount: 100n })
  })

  it('answers a wrong or missing bearer token with 401 and a JSON error', async () => {
    await sender()
    const body = serializeIlpPrepare({
      destination: 'peer.config',
      amount: '0',
      executionCondition: crypto.createHash('sha256').update(Buffer.alloc(32)).digest(),
      expiresAt: new Date(Date.now() + 30_000),
      data: Buffer.alloc(0)
    })
    for (const token of ['not-a-peer-token', null]) {
      const res = await postIlp(w.opd.ilpUrl, token, body, { fetch: rawFetch })
      const text = await res.text()
      assert.equal(res.status, 401, `token ${token}: ${text}`)
      assert.match(res.headers.get('content-type') || '', /^application\/json\b/)
      const json = JSON.parse(text)
      assert.equal(json.error?.code, 'invalid_peer_token', text)
      assert.equal(typeof json.error?.description, 'string', text)
    }
    const p = new HttpIlpPlugin({ endpoint: w.opd.ilpUrl, token: 'not-a-peer-token', fetch: rawFetch })
    await assert.rejects(() => fetchIldcp(p.sendData.bind(p)), /401/)
  })

  it('answers a body that is no ILP Prepare with 200 and an F01 Reject', async () => {
    const peer = await sender()
    for (const garbage of [Buffer.from('certainly not an ILP packet'), Buffer.from([12, 0x82, 0xff])]) {
      const res = await postIlp(w.opd.ilpUrl, peer.token, garbage, { fetch: rawFetch })
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type') || '', /^application\/octet-stream\b/)
      const reply = deserializeIlpReply(Buffer.from(await res.arrayBuffer()))
      assert.ok(isReject(reply), 'a Reject')
      assert.equal(reply.code, IlpError.F01_INVALID_PACKET, JSON.stringify(reply))
    }
  })

  it('an expired incoming payment takes no money', async () => {
    const peer = await sender()
    const expiresAt = new Date(Date.now() + 2_500)
    const ip = await createIncoming({ incomingAmount: usd(100), expiresAt: expiresAt.toISOString() })
    const { ilpAddress, sharedSecret } = ilpMethod(ip)
    // Past its expiry, and announced as expired.
    await sleep(Math.max(0, expiresAt.getTime() - Date.now()) + 500)
    await w.webhooks.waitFor((e) => e.type === 'incoming_payment.expired' && e.data?.id === ip.id, {
      what: `incoming_payment.expired for ${ip.id}`
    })
    const before = await peerBalance(peer)
    const p = plugin(peer)
    await assert.rejects(
      within(20_000, (async () => {
        const conn = await createConnection({ plugin: p, destinationAccount: ilpAddress, sharedSecret, slippage: 0.01 })
        try {
          await conn.createStream().sendTotal(50, { timeout: 10_000 })
        } finally {
          await conn.destroy()
        }
      })(), 'ilp-protocol-stream against an expired payment'),
      (err) => !/did not finish within/.test(err.message)
    )
    await p.idle()
    const toPayment = p.exchanges.filter((e) => e.destination === ilpAddress)
    assert.ok(toPayment.length > 0, 'packets reached the payment address')
    assert.ok(toPayment.every((e) => e.reply === 'reject'), `every reply is a Reject: ${JSON.stringify(toPayment.map(({ data, ...e }) => e))}`)
    // Final codes (e.g. F02 as Rafiki, or F99 with a STREAM close): a T code would make senders retry.
    const paid = toPayment.filter((e) => e.amount !== '0')
    assert.ok(paid.length > 0 && paid.every((e) => e.code?.startsWith('F')), `reject codes: ${toPayment.map((e) => `${e.amount}:${e.code}`)}`)
    assert.deepEqual(p.httpErrors, [])
    const after = await getIncoming(ip.id)
    assert.deepEqual(after.receivedAmount, usd(0))
    assert.equal(after.completed, false)
    assert.equal(await peerBalance(peer), before)
    await assertLedgerBalanced()
  })

  it('leaves every webhook delivery signed and well-formed', async () => {
    const bad = w.webhooks.events.filter((e) => e.problems.length)
    assert.deepEqual(bad.map((e) => ({ type: e.type, problems: e.problems })), [])
  })
})
