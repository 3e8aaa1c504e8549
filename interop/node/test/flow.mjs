// The whole Open Payments flow against opd with the official Node client
// (@interledger/open-payments, validateResponses: true): discovery, grants,
// incoming payments, quotes, an interactive outgoing-payment grant approved
// on opd's consent page, outgoing payments and token management. Every
// response is also checked against <repo>/spec by the harness.
//
// `flowTests(w)` declares the tests against the world `w` (see
// harness.mjs `useWorld`): flow.test.mjs runs them against a plain opd,
// tenants.test.mjs against two tenants of one opd.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { it } from 'node:test'

import { isFinalizedGrantWithAccessToken, isPendingGrant } from '@interledger/open-payments'

import {
  FINISH_URI,
  OWNER_PASSWORD,
  approveInBrowser,
  expectClientError,
  finishHash,
  interactiveGrant,
  nonInteractiveGrant,
  once,
  poll,
  rawFetch,
  requestInteractiveGrant,
  usd
} from './harness.mjs'

export function flowTests(w) {
  // Fixtures, each created by the first test that needs it.
  const wallets = once('wallet address documents', async () => ({
    alice: await w.client.walletAddress.get({ url: w.urls.alice }),
    bob: await w.client.walletAddress.get({ url: w.urls.bob })
  }))
  const ipGrant = once('incoming-payment grant', async () => {
    const { bob } = await wallets()
    return nonInteractiveGrant(w, bob.authServer, [
      { type: 'incoming-payment', actions: ['create', 'read', 'list', 'complete'] }
    ])
  })
  // Bodies without metadata get a unique one: opd answers a byte-identical
  // signed request within the same second with the first response (see the
  // test of identical creates), which would hide a second resource.
  const createIncoming = async (body = {}) => {
    const { bob } = await wallets()
    const grant = await ipGrant()
    return w.client.incomingPayment.create(
      { url: bob.resourceServer, accessToken: grant.access_token.value },
      { walletAddress: bob.id, metadata: { interopRef: crypto.randomUUID() }, ...body }
    )
  }
  const invoice = once('incoming payment with incomingAmount', () =>
    createIncoming({
      incomingAmount: usd(1000),
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      metadata: { description: 'interop invoice', ref: 42 }
    })
  )
  const quoteGrant = once('quote grant', async () => {
    const { alice } = await wallets()
    return nonInteractiveGrant(w, alice.authServer, [{ type: 'quote', actions: ['create', 'read'] }])
  })
  const createQuote = async (body) => {
    const { alice } = await wallets()
    const grant = await quoteGrant()
    return w.client.quote.create(
      { url: alice.resourceServer, accessToken: grant.access_token.value },
      { walletAddress: alice.id, method: 'ilp', ...body }
    )
  }
  const invoiceQuote = once('quote without amount', async () => createQuote({ receiver: (await invoice()).id }))
  const intervalStart = new Date(Date.now() - 60_000).toISOString()
  const outgoingGrant = once('interactive outgoing-payment grant', async () => {
    const { alice } = await wallets()
    return interactiveGrant(w, alice.authServer, [
      {
        type: 'outgoing-payment',
        actions: ['create', 'read', 'list'],
        identifier: alice.id,
        limits: { debitAmount: usd(5000), interval: `R/${intervalStart}/P1D` }
      }
    ])
  })
  const opToken = async () => (await outgoingGrant()).grant.access_token.value
  const paymentFromQuote = once('outgoing payment from the quote', async () => {
    const { alice } = await wallets()
    const quote = await invoiceQuote()
    return w.client.outgoingPayment.create(
      { url: alice.resourceServer, accessToken: await opToken() },
      { walletAddress: alice.id, quoteId: quote.id, metadata: { order: 'A-1' } }
    )
  })
  const donationTarget = once('incoming payment without incomingAmount', () =>
    createIncoming({ metadata: { description: 'open donation' } })
  )
  const paymentFromIncoming = once('outgoing payment from an incoming payment', async () => {
    const { alice } = await wallets()
    const target = await donationTarget()
    // Payments are sent one after another so the spent amounts are predictable.
    await settledPayment(await paymentFromQuote())
    return w.client.outgoingPayment.create(
      { url: alice.resourceServer, accessToken: await opToken() },
      {
        walletAddress: alice.id,
        incomingPayment: target.id,
        debitAmount: usd(250),
        metadata: { source: 'Web Monetization' }
      }
    )
  })
  const settledPayment = async (created) => {
    const token = await opToken()
    const latest = await poll(
      () => w.client.outgoingPayment.get({ url: created.id, accessToken: token }),
      (p) => p.failed || p.sentAmount.value === p.debitAmount.value
    )
    assert.equal(latest.failed, false, `payment failed: ${JSON.stringify(latest)}`)
    assert.equal(latest.sentAmount.value, created.debitAmount.value, `sentAmount did not reach debitAmount within 10 s: ${JSON.stringify(latest)}`)
    return latest
  }

  // -------------------------------------------------------------------------

  it('serves the wallet address documents', async () => {
    const { alice, bob } = await wallets()
    for (const [doc, path, name] of [
      [alice, 'alice', 'Alice'],
      [bob, 'bob', 'Bob']
    ]) {
      assert.equal(doc.id, `${w.base}/${path}`)
      assert.equal(doc.publicName, name)
      assert.equal(doc.assetCode, 'USD')
      assert.equal(doc.assetScale, 2)
      // The grant endpoint at the origin root, trailing slash included.
      assert.equal(doc.authServer, w.grantEndpoint)
      assert.equal(doc.resourceServer, w.base)
    }
    const anonymous = await w.anon.walletAddress.get({ url: w.urls.alice })
    assert.deepEqual(anonymous, alice)
  })

  it('serves the client key in the JWKS of the client wallet address', async () => {
    const jwks = await w.anon.walletAddress.getKeys({ url: w.urls.shop })
    const key = jwks.keys.find((k) => k.kid === w.shopKey.kid)
    assert.ok(key, `kid ${w.shopKey.kid} missing from ${JSON.stringify(jwks)}`)
    assert.equal(key.x, w.shopKey.jwk.x)
    assert.equal(key.kty, 'OKP')
    assert.equal(key.crv, 'Ed25519')
    assert.equal(key.alg, 'EdDSA')
    const aliceKeys = await w.client.walletAddress.getKeys({ url: w.urls.alice })
    assert.deepEqual(aliceKeys, { keys: [] })
  })

  it('issues a non-interactive incoming-payment grant', async () => {
    const grant = await ipGrant()
    assert.ok(isFinalizedGrantWithAccessToken(grant))
    assert.deepEqual(new Set(grant.access_token.access[0].actions), new Set(['create', 'read', 'list', 'complete']))
    assert.equal(grant.access_token.access[0].type, 'incoming-payment')
    assert.ok(grant.access_token.manage.startsWith(`${w.authUrl}/token/`), grant.access_token.manage)
    assert.ok(grant.continue.uri.startsWith(`${w.authUrl}/continue/`), grant.continue.uri)
  })

  it('creates an incoming payment', async () => {
    const { bob } = await wallets()
    const ip = await invoice()
    assert.ok(ip.id.startsWith(`${w.base}/incoming-payments/`), ip.id)
    assert.equal(ip.walletAddress, bob.id)
    assert.deepEqual(ip.incomingAmount, usd(1000))
    assert.deepEqual(ip.receivedAmount, usd(0))
    assert.equal(ip.completed, false)
    assert.deepEqual(ip.metadata, { description: 'interop invoice', ref: 42 })
    assert.ok(ip.expiresAt)
    assert.equal(ip.methods.length, 1)
    assert.equal(ip.methods[0].type, 'ilp')
  })

  it('gets an incoming payment with its payment methods', async () => {
    const ip = await invoice()
    const got = await w.client.incomingPayment.get({ url: ip.id, accessToken: (await ipGrant()).access_token.value })
    assert.equal(got.id, ip.id)
    assert.deepEqual(got.incomingAmount, ip.incomingAmount)
    assert.deepEqual(got.metadata, ip.metadata)
    assert.equal(got.methods[0].type, 'ilp')
  })

  it('shows the public view of an incoming payment to an unauthenticated client', async () => {
    const { bob } = await wallets()
    const ip = await invoice()
    const pub = await w.anon.incomingPayment.get({ url: ip.id })
    assert.equal(pub.authServer, bob.authServer)
    assert.deepEqual(pub.receivedAmount, usd(0))
    assert.deepEqual(Object.keys(pub).sort(), ['authServer', 'receivedAmount'])
    const viaAuthenticatedClient = await w.client.incomingPayment.getPublic({ url: ip.id })
    assert.deepEqual(viaAuthenticatedClient, pub)
  })

  it('lists incoming payments, page by page', async () => {
    const { bob } = await wallets()
    const token = (await ipGrant()).access_token.value
    const a = await invoice()
    const b = await createIncoming({ incomingAmount: usd(1) })
    const all = await w.client.incomingPayment.list({ url: bob.resourceServer, walletAddress: bob.id, accessToken: token })
    const ids = all.result.map((p) => p.id)
    assert.ok(ids.includes(a.id) && ids.includes(b.id), `list ${JSON.stringify(ids)} misses ${a.id} or ${b.id}`)
    for (const p of all.result) assert.equal(p.methods, undefined, 'list items carry no methods')
    const first = await w.client.incomingPayment.list(
      { url: bob.resourceServer, walletAddress: bob.id, accessToken: token },
      { first: 1 }
    )
    assert.equal(first.result.length, 1)
    assert.equal(first.pagination.hasNextPage, true)
    assert.ok(first.pagination.endCursor)
    const second = await w.client.incomingPayment.list(
      { url: bob.resourceServer, walletAddress: bob.id, accessToken: token },
      { first: 1, cursor: first.pagination.endCursor }
    )
    assert.equal(second.result.length, 1)
    assert.notEqual(second.result[0].id, first.result[0].id)
    assert.equal(second.pagination.hasPreviousPage, true)
  })

  it('completes an incoming payment', async () => {
    const ip = await createIncoming({ incomingAmount: usd(777) })
    const token = (await ipGrant()).access_token.value
    const done = await w.client.incomingPayment.complete({ url: ip.id, accessToken: token })
    assert.equal(done.id, ip.id)
    assert.equal(done.completed, true)
    assert.equal(done.methods, undefined, 'the complete response has no methods')
    const got = await w.client.incomingPayment.get({ url: ip.id, accessToken: token })
    assert.equal(got.completed, true)
  })

  it('issues a non-interactive quote grant', async () => {
    const grant = await quoteGrant()
    assert.ok(isFinalizedGrantWithAccessToken(grant))
    assert.equal(grant.access_token.access[0].type, 'quote')
  })

  it('quotes without an amount (from the receiver incomingAmount)', async () => {
    const { alice } = await wallets()
    const ip = await invoice()
    const quote = await invoiceQuote()
    assert.equal(quote.walletAddress, alice.id)
    assert.equal(quote.receiver, ip.id)
    assert.equal(quote.method, 'ilp')
    assert.deepEqual(quote.receiveAmount, usd(1000))
    assert.deepEqual(quote.debitAmount, usd(1000))
    assert.ok(quote.expiresAt && Date.parse(quote.expiresAt) > Date.now())
  })

  it('quotes a fixed receiveAmount', async () => {
    const target = await createIncoming()
    const quote = await createQuote({ receiver: target.id, receiveAmount: usd(321) })
    assert.deepEqual(quote.receiveAmount, usd(321))
    assert.deepEqual(quote.debitAmount, usd(321))
  })

  it('quotes a fixed debitAmount', async () => {
    const target = await createIncoming()
    const quote = await createQuote({ receiver: target.id, debitAmount: usd(123) })
    assert.deepEqual(quote.debitAmount, usd(123))
    assert.deepEqual(quote.receiveAmount, usd(123))
  })

  it('gets a quote', async () => {
    const quote = await invoiceQuote()
    const got = await w.client.quote.get({ url: quote.id, accessToken: (await quoteGrant()).access_token.value })
    assert.deepEqual(got, quote)
  })

  it('approves an interactive outgoing-payment grant on the consent page', async () => {
    const { alice } = await wallets()
    const { pending, grant, finishLocation, hash, interactRef, clientNonce } = await outgoingGrant()
    assert.ok(isPendingGrant(pending))
    assert.ok(pending.interact.redirect.startsWith(`${w.authUrl}/`), pending.interact.redirect)
    assert.ok(finishLocation.startsWith('http://127.0.0.1:9/interop-finish?'), finishLocation)
    // opd documents the hash over the authServer exactly as published.
    assert.equal(hash, finishHash(clientNonce, pending.interact.finish, interactRef, alice.authServer))
    assert.ok(isFinalizedGrantWithAccessToken(grant))
    const access = grant.access_token.access[0]
    assert.equal(access.type, 'outgoing-payment')
    assert.equal(access.identifier, alice.id)
    assert.deepEqual(access.limits, { debitAmount: usd(5000), interval: `R/${intervalStart}/P1D` })
  })

  it(
    'finish hash over `origin + "/"` as the Web Monetization extension computes it (opd publishes authServer as that grant endpoint)',
    async () => {
      const { alice } = await wallets()
      const { pending, hash, interactRef, clientNonce } = await outgoingGrant()
      assert.equal(hash, finishHash(clientNonce, pending.interact.finish, interactRef, new URL(alice.authServer).origin + '/'))
    }
  )

  it('creates an outgoing payment from a quote and sends it', async () => {
    const { alice } = await wallets()
    const quote = await invoiceQuote()
    const created = await paymentFromQuote()
    assert.equal(created.walletAddress, alice.id)
    assert.equal(created.quoteId, quote.id)
    assert.equal(created.receiver, quote.receiver)
    assert.deepEqual(created.debitAmount, quote.debitAmount)
    assert.deepEqual(created.receiveAmount, quote.receiveAmount)
    assert.equal(created.failed, false)
    assert.deepEqual(created.metadata, { order: 'A-1' })
    assert.ok(created.grantSpentDebitAmount, 'the 201 carries grantSpentDebitAmount (the WM extension reads it)')
    assert.equal(created.grantSpentDebitAmount.assetCode, 'USD')
    const sent = await settledPayment(created)
    assert.deepEqual(sent.sentAmount, quote.debitAmount)
    assert.equal(sent.grantSpentDebitAmount, undefined, 'GET has no grant spent amounts')
    const ip = await w.client.incomingPayment.get({ url: quote.receiver, accessToken: (await ipGrant()).access_token.value })
    assert.deepEqual(ip.receivedAmount, quote.receiveAmount)
    assert.equal(ip.completed, true, 'the incoming payment completes when incomingAmount is reached')
  })

  it('creates an outgoing payment from an incoming payment and a debitAmount and sends it', async () => {
    const { alice } = await wallets()
    const target = await donationTarget()
    const created = await paymentFromIncoming()
    assert.equal(created.walletAddress, alice.id)
    assert.equal(created.receiver, target.id)
    assert.deepEqual(created.debitAmount, usd(250))
    assert.deepEqual(created.metadata, { source: 'Web Monetization' })
    // opd (like Rafiki) quotes internally and names that quote.
    if (created.quoteId !== undefined) {
      const quote = await w.client.quote.get({ url: created.quoteId, accessToken: (await quoteGrant()).access_token.value })
      assert.deepEqual(quote.debitAmount, usd(250))
      assert.equal(quote.receiver, target.id)
    }
    const sent = await settledPayment(created)
    assert.deepEqual(sent.sentAmount, usd(250))
    const ip = await w.client.incomingPayment.get({ url: target.id, accessToken: (await ipGrant()).access_token.value })
    assert.deepEqual(ip.receivedAmount, sent.receiveAmount)
    assert.equal(ip.completed, false, 'an incoming payment without incomingAmount stays open')
  })

  it('lists outgoing payments', async () => {
    const { alice } = await wallets()
    const a = await paymentFromQuote()
    const b = await paymentFromIncoming()
    const list = await w.client.outgoingPayment.list({ url: alice.resourceServer, walletAddress: alice.id, accessToken: await opToken() })
    const ids = list.result.map((p) => p.id)
    assert.ok(ids.includes(a.id) && ids.includes(b.id), `list ${JSON.stringify(ids)} misses ${a.id} or ${b.id}`)
    assert.equal(typeof list.pagination.hasNextPage, 'boolean')
    const paged = await w.client.outgoingPayment.list(
      { url: alice.resourceServer, walletAddress: alice.id, accessToken: await opToken() },
      { first: 1 }
    )
    assert.equal(paged.result.length, 1)
    assert.equal(paged.pagination.hasNextPage, true)
  })

  it(
    'grantSpentDebitAmount of a new payment is what the grant spent before it (as the reference server and the WM extension expect)',
    async () => {
      const { alice } = await wallets()
      const { grant } = await interactiveGrant(w, alice.authServer, [
        { type: 'outgoing-payment', actions: ['create', 'read'], identifier: alice.id, limits: { debitAmount: usd(1000) } }
      ])
      const token = grant.access_token.value
      const target = await createIncoming()
      const pay = (value) =>
        w.client.outgoingPayment.create(
          { url: alice.resourceServer, accessToken: token },
          { walletAddress: alice.id, incomingPayment: target.id, debitAmount: usd(value) }
        )
      const first = await pay(10)
      const second = await pay(20)
      const spent = await w.client.outgoingPayment.getGrantSpentAmounts({ url: alice.resourceServer, accessToken: token })
      assert.deepEqual(spent.spentDebitAmount, usd(30))
      assert.deepEqual(first.grantSpentDebitAmount, usd(0), 'first payment: nothing spent before')
      assert.deepEqual(second.grantSpentDebitAmount, usd(10), 'second payment: the first one before it')
    }
  )

  it('two identical creates in the same second both succeed, one resource created', async () => {
    // The Node client signs deterministically (created in whole seconds,
    // no nonce), so the second request is byte-identical to the first: opd
    // answers it with the first response instead of a 401.
    const { bob } = await wallets()
    const grant = await ipGrant()
    const resource = { url: bob.resourceServer, accessToken: grant.access_token.value }
    const create = (ref) =>
      w.client.incomingPayment.create(resource, { walletAddress: bob.id, incomingAmount: usd(99), metadata: { interopRef: ref } })
    const nextSecond = () => new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 20))
    const countWith = async (ref) => {
      const all = await w.client.incomingPayment.list({ ...resource, walletAddress: bob.id }, { first: 100 })
      return all.result.filter((p) => p.metadata?.interopRef === ref).length
    }

    const one = crypto.randomUUID()
    await nextSecond()
    const first = await create(one)
    const second = await create(one)
    assert.deepEqual(second, first)
    assert.equal(await countWith(one), 1)

    const two = crypto.randomUUID()
    await nextSecond()
    const [a, b] = await Promise.all([create(two), create(two)])
    assert.deepEqual(b, a)
    assert.equal(await countWith(two), 1)

    // Signed in another second, the same create is a new request.
    await nextSecond()
    const later = await create(one)
    assert.notEqual(later.id, first.id)
    assert.equal(await countWith(one), 2)
  })

  it('two identical grant requests in the same second get the same grant, not invalid_client', async () => {
    const { bob } = await wallets()
    const access = [{ type: 'incoming-payment', actions: ['read'], identifier: bob.id }]
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 20))
    const [a, b] = await Promise.all([nonInteractiveGrant(w, bob.authServer, access), nonInteractiveGrant(w, bob.authServer, access)])
    assert.deepEqual(b, a)
  })

  it('reports what the grant spent (GET /outgoing-payment-grant)', async () => {
    const { alice } = await wallets()
    await settledPayment(await paymentFromQuote())
    await settledPayment(await paymentFromIncoming())
    const spent = await w.client.outgoingPayment.getGrantSpentAmounts({ url: alice.resourceServer, accessToken: await opToken() })
    assert.deepEqual(spent.spentDebitAmount, usd(1250))
    assert.deepEqual(spent.spentReceiveAmount, usd(1250))
  })

  it('rotates an access token: the old one stops working, the new one works', async () => {
    const { bob } = await wallets()
    const grant = await nonInteractiveGrant(w, bob.authServer, [{ type: 'incoming-payment', actions: ['read', 'list'] }])
    const rotated = await w.client.token.rotate({ url: grant.access_token.manage, accessToken: grant.access_token.value })
    assert.notEqual(rotated.access_token.value, grant.access_token.value)
    assert.deepEqual(rotated.access_token.access, grant.access_token.access)
    assert.ok(rotated.access_token.manage.startsWith(`${w.authUrl}/token/`))
    const list = { url: bob.resourceServer, walletAddress: bob.id }
    await w.client.incomingPayment.list({ ...list, accessToken: rotated.access_token.value })
    await expectClientError(w, () => w.client.incomingPayment.list({ ...list, accessToken: grant.access_token.value }), {
      status: 401,
      code: 'invalid_token',
      description: 'Invalid Token'
    })
  })

  it('revokes an access token', async () => {
    const { bob } = await wallets()
    const grant = await nonInteractiveGrant(w, bob.authServer, [{ type: 'incoming-payment', actions: ['list'] }])
    const list = { url: bob.resourceServer, walletAddress: bob.id, accessToken: grant.access_token.value }
    await w.client.incomingPayment.list(list)
    const revoked = await w.client.token.revoke({ url: grant.access_token.manage, accessToken: grant.access_token.value })
    assert.equal(revoked, undefined)
    await expectClientError(w, () => w.client.incomingPayment.list(list), {
      status: 401,
      code: 'invalid_token',
      description: 'Invalid Token'
    })
  })

  it('cancels a pending grant', async () => {
    const { alice } = await wallets()
    const { grant } = await requestInteractiveGrant(w, alice.authServer, [
      { type: 'outgoing-payment', actions: ['create'], identifier: alice.id, limits: { debitAmount: usd(1) } }
    ])
    const cont = { url: grant.continue.uri, accessToken: grant.continue.access_token.value }
    assert.equal(await w.client.grant.cancel(cont), undefined)
    await expectClientError(w, () => w.client.grant.continue(cont, { interact_ref: crypto.randomUUID() }), {
      status: 401,
      code: 'invalid_continuation'
    })
    // A user who opens the link afterwards goes back to the client, not to the consent page.
    const res = await rawFetch(grant.interact.redirect, { redirect: 'manual' })
    await res.arrayBuffer()
    assert.equal(res.status, 303)
    const back = new URL(res.headers.get('location'), grant.interact.redirect)
    assert.equal(`${back.origin}${back.pathname}`, FINISH_URI)
    assert.equal(back.searchParams.get('result'), 'invalid_interaction')
  })

  it('rejects a wrong owner password on the consent page, then accepts the right one', async () => {
    const { alice } = await wallets()
    const { grant } = await requestInteractiveGrant(w, alice.authServer, [
      { type: 'outgoing-payment', actions: ['create'], identifier: alice.id, limits: { debitAmount: usd(1) } }
    ])
    const wrong = await approveInBrowser(grant.interact.redirect, { password: 'not the password' })
    assert.equal(wrong.status, 401, `wrong password answered ${wrong.status}`)
    assert.equal(wrong.location, null)
    const right = await approveInBrowser(grant.interact.redirect, { password: OWNER_PASSWORD })
    assert.equal(right.status, 303)
    assert.ok(new URL(right.location).searchParams.get('interact_ref'))
  })

  it('sends the browser back with result=grant_rejected when the owner rejects', async () => {
    const { alice } = await wallets()
    const { grant } = await requestInteractiveGrant(w, alice.authServer, [
      { type: 'outgoing-payment', actions: ['create'], identifier: alice.id, limits: { debitAmount: usd(1) } }
    ])
    const res = await approveInBrowser(grant.interact.redirect, { decision: 'reject' })
    assert.equal(res.status, 303)
    const finish = new URL(res.location)
    assert.equal(finish.searchParams.get('result'), 'grant_rejected')
    assert.equal(finish.searchParams.get('interact_ref'), null)
  })
}
