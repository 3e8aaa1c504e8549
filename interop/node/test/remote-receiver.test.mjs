// opd quotes incoming payments served by another Open Payments server
// whose ILP side is a Node STREAM receiver: @interledger/stream-receiver
// 0.3.3-alpha.3 (answers probes F99, as RFC 29 and older Rafiki do) and
// 0.3.3-alpha.4 (answers F05, as current Rafiki does). The other server is
// a small stand-in: its resource server serves the incoming payment (the
// public view without a token, the ILP details with one), its
// authorization server grants opd a token non-interactively, and its ILP
// side is the fake receiver, peered with opd through opd's admin API. The
// official Node client asks opd for the quotes.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import http from 'node:http'
import { after, before, describe, it } from 'node:test'

import { StreamServer as StreamServerF05 } from 'stream-receiver-f05'

import { startFakeIlpReceiver } from './fake-ilp-receiver.mjs'
import { adminOk, interactiveGrant, nonInteractiveGrant, once, poll, usd, useWorld } from './harness.mjs'

const eur = (value) => ({ value: String(value), assetCode: 'EUR', assetScale: 2 })

/**
 * The stand-in Open Payments server in front of `receiver`: incoming
 * payments by payment tag, each of 1000 EUR cents. Records what opd sent.
 */
async function startFakeOpenPayments(receiver) {
  const seen = { grants: [], reads: [] }
  const token = `fake-token-${crypto.randomUUID()}`
  let base
  const server = http.createServer((req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      const json = (status, body) => {
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(JSON.stringify(body))
      }
      if (req.method === 'POST' && req.url === '/auth/') {
        const body = JSON.parse(Buffer.concat(chunks).toString() || '{}')
        seen.grants.push({ body, signed: Boolean(req.headers.signature && req.headers['signature-input']) })
        return json(200, {
          access_token: { value: token, manage: `${base}/auth/token/1`, expires_in: 600, access: body.access_token?.access },
          continue: { access_token: { value: 'c' }, uri: `${base}/auth/continue/1` }
        })
      }
      const match = /^\/incoming-payments\/([0-9a-f-]{36})$/.exec(req.url)
      if (req.method === 'GET' && match) {
        const tag = match[1]
        const id = `${base}/incoming-payments/${tag}`
        if (req.headers.authorization !== `GNAP ${token}`) return json(200, { authServer: `${base}/auth/` })
        seen.reads.push({ signed: Boolean(req.headers.signature && req.headers['signature-input']) })
        const { ilpAddress, sharedSecret } = receiver.credentials(tag)
        const now = new Date().toISOString()
        return json(200, {
          id,
          walletAddress: `${base}/carol`,
          incomingAmount: eur(1000),
          receivedAmount: eur(receiver.received(tag)),
          completed: false,
          expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
          createdAt: now,
          updatedAt: now,
          methods: [{ type: 'ilp', ilpAddress, sharedSecret: Buffer.from(sharedSecret).toString('base64url') }]
        })
      }
      json(404, { error: { code: 'not_found', description: 'no such resource' } })
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${server.address().port}`
  return {
    base,
    seen,
    incomingPayment: () => `${base}/incoming-payments/${crypto.randomUUID()}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.()
        server.close(() => resolve())
      })
  }
}

for (const [label, StreamServerClass, probeCode] of [
  ['stream-receiver 0.3.3-alpha.3', undefined, 'F99'],
  ['stream-receiver 0.3.3-alpha.4', StreamServerF05, 'F05']
]) {
  describe(`opd quotes a receiver on another server whose ILP side is ${label}`, () => {
    const w = useWorld({ ilp: true, extraArgs: ['--outbound-allow=127.0.0.1'] })
    let receiver
    let front
    before(async () => {
      receiver = await startFakeIlpReceiver({
        token: 'opd-to-fake',
        peerAddress: 'test.opd',
        asset: { code: 'EUR', scale: 2 },
        serverAddress: 'test.fake',
        ...(StreamServerClass ? { StreamServerClass } : {})
      })
      front = await startFakeOpenPayments(receiver)
      await adminOk(w.admin, 'POST', '/peers', {
        name: 'fake',
        staticIlpAddress: 'test.fake',
        asset: { code: 'EUR', scale: 2 },
        routes: ['test.fake'],
        http: { outgoing: { endpoint: receiver.endpoint, authToken: 'opd-to-fake' } }
      }, 201)
      await adminOk(w.admin, 'PUT', '/rates/USD', { rates: { EUR: '0.9' } }, 204)
    })
    after(async () => {
      await front?.close()
      await receiver?.close()
    })

    const quoteGrant = once('quote grant', async () => {
      const alice = await w.client.walletAddress.get({ url: w.urls.alice })
      return { alice, grant: await nonInteractiveGrant(w, alice.authServer, [{ type: 'quote', actions: ['create', 'read'] }]) }
    })
    const createQuote = async (body) => {
      const { alice, grant } = await quoteGrant()
      return w.client.quote.create(
        { url: alice.resourceServer, accessToken: grant.access_token.value },
        { walletAddress: alice.id, method: 'ilp', ...body }
      )
    }

    it(`probes through the peer (the receiver answers ${probeCode}) and quotes fixed delivery`, async () => {
      const ip = front.incomingPayment()
      const quote = await createQuote({ receiver: ip, receiveAmount: eur(1000) })
      assert.deepEqual(quote.receiveAmount, eur(1000))
      // 1000 EUR cents at 0.9 less 1 % slippage: ceil(1000 / 0.891).
      assert.deepEqual(quote.debitAmount, usd(1123))
      assert.equal(quote.receiver, ip)
      // opd asked as a client, signing with its own key, and the probes
      // reached the STREAM receiver and were refused with its code.
      assert.ok(front.seen.grants.length >= 1 && front.seen.grants.every((g) => g.signed))
      assert.match(front.seen.grants[0].body.client, /\/\.well-known\/pay$/)
      assert.ok(front.seen.reads.length >= 1 && front.seen.reads.every((r) => r.signed))
      const probes = receiver.requests.filter((r) => r.method === 'POST')
      assert.ok(probes.length >= 10, `only ${probes.length} probes reached the receiver`)
      assert.ok(receiver.rejectCodes.length >= 10, `rejects: ${receiver.rejectCodes}`)
      assert.ok(receiver.rejectCodes.every((c) => c === probeCode), `rejects: ${receiver.rejectCodes}`)
    })

    it('pays the receiver: it gets exactly the quoted amount', async () => {
      const ip = front.incomingPayment()
      const tag = ip.split('/').pop()
      const quote = await createQuote({ receiver: ip, receiveAmount: eur(1000) })
      const alice = await w.client.walletAddress.get({ url: w.urls.alice })
      const { grant } = await interactiveGrant(w, alice.authServer, [
        { type: 'outgoing-payment', actions: ['create', 'read'], identifier: alice.id, limits: { debitAmount: usd(5000) } }
      ])
      const token = grant.access_token.value
      const created = await w.client.outgoingPayment.create(
        { url: alice.resourceServer, accessToken: token },
        { walletAddress: alice.id, quoteId: quote.id }
      )
      const settled = await poll(
        () => w.client.outgoingPayment.get({ url: created.id, accessToken: token }),
        (p) => p.failed || BigInt(p.sentAmount.value) > 0n,
        { timeoutMs: 20_000 }
      )
      assert.equal(settled.failed, false, JSON.stringify(settled))
      assert.equal(receiver.received(tag), 1000n)
      assert.ok(BigInt(settled.sentAmount.value) <= 1123n, JSON.stringify(settled))
    })

    it('quotes fixed send at the minimum rate', async () => {
      const quote = await createQuote({ receiver: front.incomingPayment(), debitAmount: usd(500) })
      assert.deepEqual(quote.debitAmount, usd(500))
      assert.deepEqual(quote.receiveAmount, eur(445))
    })
  })
}
