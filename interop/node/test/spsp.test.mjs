// Paid by a payment pointer: real Interledger senders pay an opd wallet
// address knowing only its payment pointer, over ILP-over-HTTP peering
// (the fetch plugin of ilp-plugin.mjs), as a Node peer of opd:
//
// - @interledger/pay given `destinationAccount` makes the SPSP query itself
//   (`Accept: application/json, application/spsp4+json`) and pays;
// - ilp-protocol-spsp (the SPSP client package) queries and pays with its
//   STREAM sender (ilp-protocol-stream: package.json overrides its 1.x,
//   which crashes on Node 20, with the suite's 2.7.2-alpha.3, the same
//   API);
// - with a verifier's Receipt-Nonce and Receipt-Secret (the query a
//   receipt verifier proxies), @interledger/pay and ilp-protocol-stream get
//   STREAM receipts that ilp-protocol-stream's verifyReceipt accepts, for
//   exactly what arrived.
//
// Balances, the peer's liquidity and the wallet_address.web_monetization
// events are checked to the unit.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { createRequire } from 'node:module'
import { describe, it } from 'node:test'

import { closeConnection, pay, setupPayment, startQuote } from '@interledger/pay'
import spsp from 'ilp-protocol-spsp'
import { createConnection, verifyReceipt } from 'ilp-protocol-stream'

import { adminOk, once, rawFetch, useWorld } from './harness.mjs'
import { HttpIlpPlugin } from './ilp-plugin.mjs'

const require = createRequire(import.meta.url)
const USD2 = { code: 'USD', scale: 2 }
const SPSP = 'application/spsp4+json'
const DEPOSIT = 1_000_000n
/** The host of the payment pointers the senders are given. */
const POINTER_HOST = 'opd.interop.test'

/**
 * @interledger/pay takes a payment pointer or an account URL without a
 * port only (AccountUrl), and opd listens on a loopback port here: its
 * SPSP queries to https://POINTER_HOST/... go to opd's origin instead, as
 * they are otherwise (method, headers). Returns the undo.
 */
function routePointerHost(origin) {
  const nodeFetch = require('node-fetch')
  const original = nodeFetch.default
  const prefix = `https://${POINTER_HOST}/`
  nodeFetch.default = (url, init) => {
    const u = String(url)
    return original(u.startsWith(prefix) ? `${origin}/${u.slice(prefix.length)}` : u, init)
  }
  return () => {
    nodeFetch.default = original
  }
}

describe('Paid by a payment pointer: Node senders pay opd wallet addresses over SPSP', () => {
  const w = useWorld({ ilp: true, webhooks: true, extraArgs: ['--web-monetization-event-secs=1'] })

  const peer = once('peer spsp-sender', async () => {
    const token = 'spsp-sender-to-opd'
    const body = { name: 'spsp-sender', staticIlpAddress: 'test.spsp-sender', asset: USD2, http: { incoming: { authTokens: [token] } } }
    const made = await adminOk(w.admin, 'POST', '/peers', body, 201)
    await adminOk(w.admin, 'POST', `/peers/${made.id}/deposits`, { amount: String(DEPOSIT), idempotencyKey: crypto.randomUUID() }, 201)
    return { ...made, token }
  })
  const plugin = async () => new HttpIlpPlugin({ endpoint: w.opd.ilpUrl, token: (await peer()).token, fetch: rawFetch })
  const liquidity = async () => BigInt((await adminOk(w.admin, 'GET', `/peers/${(await peer()).id}/balance`, undefined, 200)).balance)
  const balance = async (path) => BigInt((await adminOk(w.admin, 'GET', `/wallet-addresses/${path}/balance`, undefined, 200)).balance.value)
  /** What each wallet address received over SPSP, counted as the tests pay. */
  const paid = { bob: 0n, alice: 0n }

  /** The SPSP query a receipt verifier proxies: credentials with receipts for `nonce` and `secret`. */
  const queryWithReceipts = async (path, nonce, secret) => {
    const res = await rawFetch(`${w.opd.publicUrl}/${path}`, {
      headers: { accept: SPSP, 'receipt-nonce': nonce.toString('base64'), 'receipt-secret': secret.toString('base64') }
    })
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-type'), SPSP)
    const body = await res.json()
    assert.equal(body.receipts_enabled, true)
    return { destinationAddress: body.destination_account, sharedSecret: Buffer.from(body.shared_secret, 'base64') }
  }

  /** Checks that what moved is what the senders say arrived. */
  const assertMoney = async () => {
    assert.equal(await balance('bob'), paid.bob, "bob's balance is what arrived")
    assert.equal(DEPOSIT - (await liquidity()), paid.bob + paid.alice, "the peer's liquidity fell by what arrived")
    const check = await adminOk(w.admin, 'GET', '/ledger/check', undefined, 200)
    assert.equal(check.balanced, true, JSON.stringify(check))
  }

  it('ilp-protocol-spsp queries a wallet address: SPSP credentials, not the Open Payments document', async () => {
    const answer = await spsp.query(`${w.opd.publicUrl}/bob`)
    assert.match(answer.destination_account, new RegExp(`^${w.opd.ilpAddress.replace('.', '\\.')}\\.`))
    assert.equal(Buffer.from(answer.shared_secret, 'base64').length, 32)
    assert.equal(answer.receipts_enabled, false)
    assert.equal(answer.content_type, SPSP)
  })

  it('@interledger/pay pays bob given only his payment pointer', async () => {
    const undo = routePointerHost(w.opd.publicUrl)
    try {
      const p = await plugin()
      const destination = await setupPayment({ plugin: p, destinationAccount: `$${POINTER_HOST}/bob` })
      assert.deepEqual(destination.destinationAsset, USD2, 'ConnectionAssetDetails from opd')
      assert.equal(destination.destinationAccount, `$${POINTER_HOST}/bob`)
      const quote = await startQuote({ plugin: p, destination, sourceAsset: USD2, amountToSend: 500n })
      const progress = await pay({ plugin: p, destination, quote })
      await closeConnection(p, destination)
      await p.idle()
      assert.equal(progress.error, undefined, `pay failed: ${progress.error}`)
      assert.equal(progress.amountSent, 500n)
      assert.equal(progress.amountDelivered, 500n)
      // Probes (F99), and pay's check that the receiver authenticates its
      // tokens: a packet to `test.opd._.<token>` (a token segment `_`)
      // must be refused, F06.
      const codes = new Set(p.rejectCodes())
      assert.ok(codes.has('F99'), `probes were answered: ${[...codes]}`)
      assert.deepEqual([...codes].filter((c) => !['F99', 'F06'].includes(c)), [], `reject codes: ${[...codes]}`)
      paid.bob += progress.amountDelivered
    } finally {
      undo()
    }
    await assertMoney()
  })

  it('@interledger/pay gets STREAM receipts that verify, for what arrived', async () => {
    const nonce = crypto.randomBytes(16)
    const secret = crypto.randomBytes(32)
    const p = await plugin()
    const destination = await setupPayment({ plugin: p, ...(await queryWithReceipts('bob', nonce, secret)) })
    const quote = await startQuote({ plugin: p, destination, sourceAsset: USD2, amountToSend: 321n })
    const progress = await pay({ plugin: p, destination, quote })
    await closeConnection(p, destination)
    await p.idle()
    assert.equal(progress.error, undefined, `pay failed: ${progress.error}`)
    assert.equal(progress.amountDelivered, 321n)
    assert.ok(Buffer.isBuffer(progress.streamReceipt), 'pay kept the latest receipt')
    const receipt = verifyReceipt(progress.streamReceipt, secret)
    assert.ok(receipt.nonce.equals(nonce))
    assert.equal(String(receipt.streamId), '1')
    assert.equal(receipt.totalReceived.toString(), '321')
    assert.throws(() => verifyReceipt(progress.streamReceipt, crypto.randomBytes(32)), /invalid hmac/)
    paid.bob += progress.amountDelivered
    await assertMoney()
  })

  it('ilp-protocol-spsp pays bob by his pointer', async () => {
    const p = await plugin()
    const { totalSent } = await spsp.pay(p, { receiver: `${w.opd.publicUrl}/bob`, sourceAmount: '123' })
    await p.idle()
    assert.equal(String(totalSent), '123')
    assert.equal(p.fulfilledAmount(), 123n)
    paid.bob += 123n
    await assertMoney()
  })

  it('ilp-protocol-stream pays alice on receipt credentials: every receipt verifies, the last says what arrived', async () => {
    const nonce = crypto.randomBytes(16)
    const secret = crypto.randomBytes(32)
    const { destinationAddress, sharedSecret } = await queryWithReceipts('alice', nonce, secret)
    const p = await plugin()
    const before = await balance('alice')
    const conn = await createConnection({ plugin: p, destinationAccount: destinationAddress, sharedSecret, slippage: 0 })
    const totals = []
    try {
      const stream = conn.createStream()
      // The stream keeps the latest receipt; each packet fulfilled brings one.
      stream.on('outgoing_money', () => totals.push(verifyReceipt(stream.receipt, secret).totalReceived.toString()))
      await stream.sendTotal(77)
      assert.ok(stream.receipt, 'the stream kept a receipt')
      const last = verifyReceipt(stream.receipt, secret)
      assert.ok(last.nonce.equals(nonce))
      assert.equal(last.totalReceived.toString(), '77')
    } finally {
      await conn.end()
      await p.idle()
    }
    assert.ok(totals.length > 0 && totals.at(-1) === '77', `receipts: ${totals}`)
    assert.equal((await balance('alice')) - before, 77n)
    paid.alice += 77n
    await assertMoney()
  })

  it('wallet_address.web_monetization events add up to what each wallet address received', async () => {
    const sum = (url) =>
      w.webhooks.events
        .filter((e) => e.type === 'wallet_address.web_monetization' && e.data?.walletAddress?.id === url)
        .reduce((s, e) => s + BigInt(e.data.walletAddress.receivedAmount.value), 0n)
    for (const [path, expected] of Object.entries(paid)) {
      const url = w.urls[path]
      const deadline = Date.now() + 10_000
      while (sum(url) < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
      assert.equal(sum(url), expected, `${path}'s events`)
    }
    const events = w.webhooks.events.filter((e) => e.type === 'wallet_address.web_monetization')
    for (const e of events) {
      assert.deepEqual(e.problems, [])
      assert.deepEqual(Object.keys(e.data).sort(), ['amountToWithdraw', 'walletAddress'])
      assert.equal(e.data.walletAddress.receivedAmount.assetCode, 'USD')
      assert.equal(e.data.amountToWithdraw.value, '0')
    }
  })
})
