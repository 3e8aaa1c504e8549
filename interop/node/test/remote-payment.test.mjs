// Payments between two opd servers over Interledger, driven by the official
// Node client: A (ILP address test.a) and B (test.b), peered in USD through
// their admin APIs, with a USD -> EUR rate on both. alice@A (USD) pays an
// incoming payment of carol@B (EUR): A resolves the receiver as an Open
// Payments client, probes the path, quotes at its rate less 1 %, and its
// worker sends the payment as STREAM packets through B's ILP-over-HTTP
// listener. Then bob@B (USD) pays an incoming payment of alice@A. Every
// response of either server is checked against the Open Payments specs;
// webhooks arrive on both sides; both ledgers balance.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { after, before, describe, it } from 'node:test'

import {
  OWNER_PASSWORD,
  adminClient,
  adminOk,
  interactiveGrant,
  nonInteractiveGrant,
  poll,
  startOpd,
  startWebhookReceiver,
  usd,
  useWorld
} from './harness.mjs'

const eur = (value) => ({ value: String(value), assetCode: 'EUR', assetScale: 2 })
const LOOPBACK = '--outbound-allow=127.0.0.1'

describe('opd pays another opd server over Interledger, through the official Node client', () => {
  const w = useWorld({ ilp: true, webhooks: true, ilpAddress: 'test.a', extraArgs: [LOOPBACK] })
  const b = {}

  before(async () => {
    b.hooks = await startWebhookReceiver()
    b.opd = await startOpd({
      ilp: true,
      ilpAddress: 'test.b',
      extraArgs: [LOOPBACK, `--webhook-url=${b.hooks.url}`, `--webhook-secret=${b.hooks.secret}`]
    })
    b.admin = adminClient(b.opd.adminUrl)
    // B's responses are checked against the specs like A's.
    w.aliases.set(new URL(b.opd.publicUrl).origin, w.opd.publicUrl)
    w.aliases.set(new URL(b.opd.authUrl).origin, w.opd.authUrl)
    for (const [path, code] of [['carol', 'EUR'], ['bob', 'USD']]) {
      await adminOk(b.admin, 'POST', '/wallet-addresses', { path, assetCode: code, assetScale: 2 }, 201)
    }
    await adminOk(b.admin, 'POST', '/wallet-addresses/bob/deposits', { amount: '100000', idempotencyKey: 'seed' }, [200, 201])
    await adminOk(b.admin, 'PUT', '/wallet-addresses/bob/owner-password', { password: OWNER_PASSWORD }, [200, 204])
    const asset = { code: 'USD', scale: 2 }
    // A -> B and B -> A, each side accepting the token the other presents.
    await adminOk(w.admin, 'POST', '/peers', {
      name: 'b', staticIlpAddress: 'test.b', asset, routes: ['test.b'],
      http: { outgoing: { endpoint: b.opd.ilpUrl, authToken: 'a-to-b' }, incoming: { authTokens: ['b-to-a'] } }
    }, 201)
    const aAtB = await adminOk(b.admin, 'POST', '/peers', {
      name: 'a', staticIlpAddress: 'test.a', asset, routes: ['test.a'],
      http: { outgoing: { endpoint: w.opd.ilpUrl, authToken: 'b-to-a' }, incoming: { authTokens: ['a-to-b'] } }
    }, 201)
    const bAtA = (await adminOk(w.admin, 'GET', '/peers', undefined, 200))
    const bAtAId = (bAtA.peers ?? bAtA).find((p) => p.name === 'b').id
    // What each may send the other before settling.
    await adminOk(b.admin, 'POST', `/peers/${aAtB.id}/deposits`, { amount: '1000000', idempotencyKey: 'a-prefund' }, [200, 201])
    await adminOk(w.admin, 'POST', `/peers/${bAtAId}/deposits`, { amount: '1000000', idempotencyKey: 'b-prefund' }, [200, 201])
    for (const admin of [w.admin, b.admin]) await adminOk(admin, 'PUT', '/rates/USD', { rates: { EUR: '0.9' } }, 204)
  })
  after(async () => {
    await b.opd?.stop()
    await b.hooks?.close()
  })

  /** An incoming payment of `wallet` (a URL) for `amount`, created by the Node client. */
  const incoming = async (wallet, amount) => {
    const doc = await w.client.walletAddress.get({ url: wallet })
    const grant = await nonInteractiveGrant(w, doc.authServer, [{ type: 'incoming-payment', actions: ['create', 'read'] }])
    return w.client.incomingPayment.create(
      { url: doc.resourceServer, accessToken: grant.access_token.value },
      { walletAddress: doc.id, incomingAmount: amount, metadata: { ref: crypto.randomUUID() } }
    )
  }

  /** `payer` (a wallet URL on either server) pays `receiver`: quote, interactive grant, outgoing payment; returns the settled payment and the quote. */
  const pay = async (payer, receiver, limit) => {
    const doc = await w.client.walletAddress.get({ url: payer })
    const quoteGrant = await nonInteractiveGrant(w, doc.authServer, [{ type: 'quote', actions: ['create', 'read'] }])
    const quote = await w.client.quote.create(
      { url: doc.resourceServer, accessToken: quoteGrant.access_token.value },
      { walletAddress: doc.id, receiver, method: 'ilp' }
    )
    const { grant } = await interactiveGrant(w, doc.authServer, [
      { type: 'outgoing-payment', actions: ['create', 'read'], identifier: doc.id, limits: { debitAmount: limit } }
    ])
    const token = grant.access_token.value
    const created = await w.client.outgoingPayment.create(
      { url: doc.resourceServer, accessToken: token },
      { walletAddress: doc.id, quoteId: quote.id }
    )
    const settled = await poll(
      () => w.client.outgoingPayment.get({ url: created.id, accessToken: token }),
      (p) => p.failed || BigInt(p.sentAmount.value) > 0n,
      { timeoutMs: 20_000 }
    )
    return { quote, settled }
  }

  it('alice@A pays carol@B in EUR; B receives exactly the quoted amount', async () => {
    const ip = await incoming(`${b.opd.publicUrl}/carol`, eur(1000))
    const { quote, settled } = await pay(w.urls.alice, ip.id, usd(5000))
    // 1000 EUR cents at 0.9 less 1 % slippage.
    assert.deepEqual(quote.debitAmount, usd(1123))
    assert.deepEqual(quote.receiveAmount, eur(1000))
    assert.equal(settled.failed, false, JSON.stringify(settled))
    const sent = BigInt(settled.sentAmount.value)
    assert.ok(sent > 0n && sent <= 1123n, `sentAmount ${sent}`)
    const received = await poll(
      async () => {
        const doc = await w.client.walletAddress.get({ url: `${b.opd.publicUrl}/carol` })
        const grant = await nonInteractiveGrant(w, doc.authServer, [{ type: 'incoming-payment', actions: ['read'] }])
        return w.client.incomingPayment.get({ url: ip.id, accessToken: grant.access_token.value })
      },
      (p) => p.completed
    )
    assert.deepEqual(received.receivedAmount, eur(1000))
    assert.equal(received.completed, true)
    await w.webhooks.waitFor((e) => e.type === 'outgoing_payment.completed' && e.data?.id === settled.id, {
      what: 'outgoing_payment.completed at A'
    })
    await b.hooks.waitFor((e) => e.type === 'incoming_payment.completed' && e.data?.id === ip.id, {
      what: 'incoming_payment.completed at B'
    })
  })

  it('bob@B pays alice@A', async () => {
    const ip = await incoming(w.urls.alice, usd(700))
    const { settled } = await pay(`${b.opd.publicUrl}/bob`, ip.id, usd(5000))
    assert.equal(settled.failed, false, JSON.stringify(settled))
    assert.equal(settled.sentAmount.value, '700')
    await w.webhooks.waitFor((e) => e.type === 'incoming_payment.completed' && e.data?.id === ip.id, {
      what: 'incoming_payment.completed at A'
    })
  })

  it('both ledgers balance', async () => {
    for (const admin of [w.admin, b.admin]) {
      const check = await adminOk(admin, 'GET', '/ledger/check', undefined, 200)
      assert.equal(check.balanced, true, JSON.stringify(check))
    }
  })
})
