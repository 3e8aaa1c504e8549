// The error responses deployed clients branch on
// (/work/shared/research/client-compat.md), as the official Node client
// surfaces them: OpenPaymentsClientError { status, code, description, details }.
// Each failing response is also validated against the spec operation it
// belongs to (expectClientError).

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'

import {
  adminOk,
  clientWithKey,
  expectClientError,
  interactiveGrant,
  newEd25519Key,
  nonInteractiveGrant,
  once,
  rawFetch,
  requestInteractiveGrant,
  usd,
  useWorld,
  validateAgainstSpec
} from './harness.mjs'

describe('errors a client sees', () => {
  const w = useWorld()

  const wallets = once('wallet address documents', async () => ({
    alice: await w.client.walletAddress.get({ url: w.urls.alice }),
    bob: await w.client.walletAddress.get({ url: w.urls.bob })
  }))
  const ipGrant = once('incoming-payment grant', async () => {
    const { bob } = await wallets()
    return nonInteractiveGrant(w, bob.authServer, [
      { type: 'incoming-payment', actions: ['create', 'read', 'list', 'complete'], identifier: bob.id }
    ])
  })
  const createIncoming = async (body = {}) => {
    const { bob } = await wallets()
    return w.client.incomingPayment.create(
      { url: bob.resourceServer, accessToken: (await ipGrant()).access_token.value },
      { walletAddress: bob.id, metadata: { interopRef: crypto.randomUUID() }, ...body }
    )
  }
  const quoteGrant = once('quote grant', async () => {
    const { alice } = await wallets()
    return nonInteractiveGrant(w, alice.authServer, [{ type: 'quote', actions: ['create', 'read'], identifier: alice.id }])
  })
  const quote = async (body) => {
    const { alice } = await wallets()
    return w.client.quote.create(
      { url: alice.resourceServer, accessToken: (await quoteGrant()).access_token.value },
      { walletAddress: alice.id, method: 'ilp', ...body }
    )
  }

  describe('resource server', () => {
    it('401 Invalid Token for a revoked access token, with WWW-Authenticate', async () => {
      const { bob } = await wallets()
      const grant = await nonInteractiveGrant(w, bob.authServer, [{ type: 'incoming-payment', actions: ['list'] }])
      await w.client.token.revoke({ url: grant.access_token.manage, accessToken: grant.access_token.value })
      const { response } = await expectClientError(
        w,
        () => w.client.incomingPayment.list({ url: bob.resourceServer, walletAddress: bob.id, accessToken: grant.access_token.value }),
        { status: 401, code: 'invalid_token', description: 'Invalid Token' }
      )
      assert.equal(response.headers.get('www-authenticate'), `GNAP as_uri=${bob.authServer}`)
    })

    it('401 Invalid Token for an unknown access token', async () => {
      const { bob } = await wallets()
      await expectClientError(
        w,
        () =>
          w.client.incomingPayment.create(
            { url: bob.resourceServer, accessToken: 'F00DF00DF00DF00DF00DF00DF00DF00DF00DF00D' },
            { walletAddress: bob.id }
          ),
        { status: 401, code: 'invalid_token', description: 'Invalid Token' }
      )
    })

    it('403 when a quote token is used to create an incoming payment', async () => {
      const { bob } = await wallets()
      await expectClientError(
        w,
        async () =>
          w.client.incomingPayment.create(
            { url: bob.resourceServer, accessToken: (await quoteGrant()).access_token.value },
            { walletAddress: bob.id }
          ),
        { status: 403, code: 'insufficient_access' }
      )
    })

    it('404 for an unknown incoming payment with a valid token', async () => {
      const { bob } = await wallets()
      await expectClientError(
        w,
        async () =>
          w.client.incomingPayment.get({
            url: `${bob.resourceServer}/incoming-payments/${crypto.randomUUID()}`,
            accessToken: (await ipGrant()).access_token.value
          }),
        { status: 404, code: 'not_found' }
      )
    })

    it('400 invalid receiver: an incoming payment that does not exist', async () => {
      const { bob } = await wallets()
      const { err } = await expectClientError(w, () => quote({ receiver: `${bob.resourceServer}/incoming-payments/${crypto.randomUUID()}` }), {
        status: 400,
        code: 'invalid_receiver',
        description: 'invalid receiver'
      })
      assert.equal(typeof err.details?.reason, 'string', 'details.reason')
    })

    it('400 invalid receiver: a completed incoming payment', async () => {
      const ip = await createIncoming({ incomingAmount: usd(500) })
      await w.client.incomingPayment.complete({ url: ip.id, accessToken: (await ipGrant()).access_token.value })
      await expectClientError(w, () => quote({ receiver: ip.id }), {
        status: 400,
        code: 'invalid_receiver',
        description: 'invalid receiver'
      })
    })

    describe('across currencies', () => {
      const carol = once('EUR wallet address carol and a USD→EUR rate of 0.5', async () => {
        await adminOk(w.admin, 'POST', '/wallet-addresses', { path: 'carol', assetCode: 'EUR', assetScale: 2, publicName: 'Carol' }, 201)
        await adminOk(w.admin, 'PUT', '/rates/USD', { rates: { EUR: '0.5' } }, [200, 204])
        return w.client.walletAddress.get({ url: `${w.opd.publicUrl}/carol` })
      })
      const carolInvoice = once('incoming payment of carol', async () => {
        const doc = await carol()
        const grant = await nonInteractiveGrant(w, doc.authServer, [{ type: 'incoming-payment', actions: ['create'], identifier: doc.id }])
        return w.client.incomingPayment.create({ url: doc.resourceServer, accessToken: grant.access_token.value }, { walletAddress: doc.id })
      })

      it('400 non-positive receive amount with details.minSendAmount', async () => {
        const ip = await carolInvoice()
        const { err } = await expectClientError(w, () => quote({ receiver: ip.id, debitAmount: usd(1) }), {
          status: 400,
          code: 'non_positive_receive_amount',
          description: 'non-positive receive amount',
          details: { minSendAmount: usd(2) }
        })
        // The predicate the Web Monetization extension applies.
        assert.ok(/non-positive receive amount/i.test(err.description))
        // ...and what it then does: quote the minimum at once.
        const q = await quote({ receiver: ip.id, debitAmount: err.details.minSendAmount })
        assert.deepEqual(q.receiveAmount, { value: '1', assetCode: 'EUR', assetScale: 2 })
      })
    })

    describe('grant limits and balance', () => {
      const limited = once('outgoing-payment grant limited to 1.00 USD', async () => {
        const { alice } = await wallets()
        return interactiveGrant(w, alice.authServer, [
          { type: 'outgoing-payment', actions: ['create', 'read'], identifier: alice.id, limits: { debitAmount: usd(100) } }
        ])
      })

      it('403 unauthorized when a payment would exceed the grant limit', async () => {
        const { alice } = await wallets()
        const target = await createIncoming()
        const token = (await limited()).grant.access_token.value
        const create = (value) =>
          w.client.outgoingPayment.create(
            { url: alice.resourceServer, accessToken: token },
            { walletAddress: alice.id, incomingPayment: target.id, debitAmount: usd(value) }
          )
        await create(60)
        const { err } = await expectClientError(w, () => create(41), {
          status: 403,
          code: 'insufficient_grant',
          description: 'unauthorized'
        })
        assert.equal(typeof err.details?.reason, 'string', 'details.reason')
        await create(40)
      })

      it('403 unauthorized when the balance does not cover the payment', async () => {
        const { alice } = await wallets()
        const target = await createIncoming()
        const { grant } = await interactiveGrant(w, alice.authServer, [
          { type: 'outgoing-payment', actions: ['create'], identifier: alice.id, limits: { debitAmount: usd(5_000_000) } }
        ])
        const { err } = await expectClientError(
          w,
          () =>
            w.client.outgoingPayment.create(
              { url: alice.resourceServer, accessToken: grant.access_token.value },
              { walletAddress: alice.id, incomingPayment: target.id, debitAmount: usd(2_000_000) }
            ),
          { status: 403, code: 'insufficient_balance', description: 'unauthorized' }
        )
        assert.deepEqual(err.details?.required, usd(2_000_000))
        assert.equal(err.details?.available?.assetCode, 'USD')
      })
    })
  })

  describe('authorization server', () => {
    it('400 invalid_client for a grant request signed with a key the client does not publish', async () => {
      const { alice } = await wallets()
      const stranger = await clientWithKey(w, newEd25519Key(`unregistered-${crypto.randomUUID()}`))
      await expectClientError(
        w,
        () => stranger.grant.request({ url: alice.authServer }, { access_token: { access: [{ type: 'quote', actions: ['create'] }] } }),
        { status: 400, code: 'invalid_client' }
      )
    })

    it('400 invalid_client for a client wallet address that does not exist', async () => {
      const { alice } = await wallets()
      const ghost = await clientWithKey(w, newEd25519Key('ghost-key'), `${w.opd.publicUrl}/nobody-here`)
      await expectClientError(
        w,
        () => ghost.grant.request({ url: alice.authServer }, { access_token: { access: [{ type: 'quote', actions: ['read'] }] } }),
        { status: 400, code: 'invalid_client' }
      )
    })

    it('401 invalid_continuation for a continuation with a wrong token', async () => {
      const { alice } = await wallets()
      const { grant } = await requestInteractiveGrant(w, alice.authServer, [
        { type: 'outgoing-payment', actions: ['create'], identifier: alice.id, limits: { debitAmount: usd(1) } }
      ])
      await expectClientError(
        w,
        () => w.client.grant.continue({ url: grant.continue.uri, accessToken: 'WRONG0000000000000000000000000000000000' }, { interact_ref: crypto.randomUUID() }),
        { status: 401, code: 'invalid_continuation' }
      )
    })

    it('401 invalid_continuation for a continuation token already used', async () => {
      const { alice } = await wallets()
      const done = await interactiveGrant(w, alice.authServer, [
        { type: 'outgoing-payment', actions: ['read'], identifier: alice.id, limits: { debitAmount: usd(2) } }
      ])
      // Within the same second the repeat would be byte-identical (the
      // client signs in whole seconds, without a nonce) and get the first
      // answer; a second later it is signed anew, a new request.
      await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 20))
      await expectClientError(
        w,
        () =>
          w.client.grant.continue(
            { url: done.pending.continue.uri, accessToken: done.pending.continue.access_token.value },
            { interact_ref: done.interactRef }
          ),
        { status: 401, code: 'invalid_continuation' }
      )
    })
  })

  // Requests no official client makes, checked explicitly against the spec.
  describe('raw HTTP', () => {
    const raw = async (url, init = {}) => {
      const res = await rawFetch(url, { redirect: 'manual', ...init })
      const text = await res.text()
      let body
      try {
        body = text ? JSON.parse(text) : undefined
      } catch {
        body = text
      }
      return { status: res.status, headers: res.headers, body }
    }

    it('serves the wallet address document for Accept: */* (what the Rust SDK sends)', async () => {
      const res = await raw(w.urls.alice, { headers: { accept: '*/*' } })
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type'), /^application\/json/)
      await validateAgainstSpec({ kind: 'walletAddress', path: '/', method: 'get', status: res.status, body: res.body })
      assert.equal(res.body.id, w.urls.alice)
    })

    it('answers 404 for an unknown wallet address and its JWKS', async () => {
      for (const [url, p] of [
        [`${w.opd.publicUrl}/nobody-here`, '/'],
        [`${w.opd.publicUrl}/nobody-here/jwks.json`, '/jwks.json']
      ]) {
        const res = await raw(url, { headers: { accept: 'application/json' } })
        assert.equal(res.status, 404, url)
        await validateAgainstSpec({ kind: 'walletAddress', path: p, method: 'get', status: res.status, body: res.body })
        assert.equal(res.body?.error?.code, 'unknown_wallet_address')
      }
    })

    it('401 with WWW-Authenticate for a resource request without a token', async () => {
      const { bob } = await wallets()
      const res = await raw(`${bob.resourceServer}/incoming-payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ walletAddress: bob.id })
      })
      assert.equal(res.status, 401)
      await validateAgainstSpec({ kind: 'resource', path: '/incoming-payments', method: 'post', status: res.status, body: res.body })
      assert.equal(res.headers.get('www-authenticate'), `GNAP as_uri=${bob.authServer}`)
    })

    it('401 invalid_client for an unsigned grant request', async () => {
      const { alice } = await wallets()
      const res = await raw(alice.authServer, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ access_token: { access: [{ type: 'quote', actions: ['create'] }] }, client: w.urls.shop })
      })
      assert.equal(res.status, 401)
      await validateAgainstSpec({ kind: 'auth', path: '/', method: 'post', status: res.status, body: res.body })
      assert.equal(res.body.error.code, 'invalid_client')
    })
  })

  describe('a client key revoked by the operator', () => {
    // A second key of shop, so the main client keeps working.
    const revoked = once('second shop key, a token obtained with it, then the key revoked', async () => {
      const { bob } = await wallets()
      const key = newEd25519Key(`shop-key-2-${crypto.randomUUID()}`)
      await adminOk(w.admin, 'POST', '/wallet-addresses/shop/keys', { jwk: key.jwk }, [200, 201])
      const client = await clientWithKey(w, key)
      const grant = await nonInteractiveGrant(
        w,
        bob.authServer,
        [{ type: 'incoming-payment', actions: ['create', 'list'], identifier: bob.id }],
        client
      )
      // Works before the revocation.
      await client.incomingPayment.list({ url: bob.resourceServer, walletAddress: bob.id, accessToken: grant.access_token.value })
      await adminOk(w.admin, 'DELETE', `/wallet-addresses/shop/keys/${encodeURIComponent(key.kid)}`, undefined, [200, 204])
      return { key, client, grant }
    })

    it('leaves the JWKS at once', async () => {
      const { key } = await revoked()
      const jwks = await w.anon.walletAddress.getKeys({ url: w.urls.shop })
      assert.equal(jwks.keys.find((k) => k.kid === key.kid), undefined)
      assert.ok(jwks.keys.find((k) => k.kid === w.shopKey.kid), 'the other key stays')
    })

    it('401 Signature validation error on the resource server', async () => {
      const { bob } = await wallets()
      const { client, grant } = await revoked()
      await expectClientError(
        w,
        () => client.incomingPayment.list({ url: bob.resourceServer, walletAddress: bob.id, accessToken: grant.access_token.value }),
        { status: 401, code: 'invalid_signature', descriptionIncludes: 'Signature validation error' }
      )
      await expectClientError(
        w,
        () =>
          client.incomingPayment.create(
            { url: bob.resourceServer, accessToken: grant.access_token.value },
            { walletAddress: bob.id, metadata: { interopRef: crypto.randomUUID() } }
          ),
        { status: 401, code: 'invalid_signature', descriptionIncludes: 'Signature validation error' }
      )
    })

    it('400 invalid_client for a new grant request signed with it', async () => {
      const { alice } = await wallets()
      const { client } = await revoked()
      await expectClientError(
        w,
        () => client.grant.request({ url: alice.authServer }, { access_token: { access: [{ type: 'quote', actions: ['create', 'read'] }] } }),
        { status: 400, code: 'invalid_client' }
      )
    })

    it('the main client still works', async () => {
      const { bob } = await wallets()
      await w.client.incomingPayment.list({ url: bob.resourceServer, walletAddress: bob.id, accessToken: (await ipGrant()).access_token.value })
    })
  })

  describe('bodies over the limit', () => {
    it('a 10 MB body is answered 413 JSON, and the client reads it (no broken pipe)', async () => {
      const body = Buffer.alloc(10 * 1024 * 1024, 97)
      for (const url of [`${w.opd.publicUrl}/incoming-payments`, `${w.opd.authUrl}/`]) {
        const res = await rawFetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        assert.equal(res.status, 413, url)
        const json = await res.json()
        assert.equal(json.error.code, 'payload_too_large', url)
      }
    })
  })
})
