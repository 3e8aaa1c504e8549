// The authorization server under a path (--auth-public-url
// http://127.0.0.1:<port>/gnap, as behind a proxy that forwards /gnap
// unchanged), driven by the official Node client: the wallet address
// documents publish the path as authServer, and the client's grant requests
// to it, the consent page, the finish hash, continuation, token rotation and
// revocation and grant cancellation all work there. Every response is
// checked against <repo>/spec by the harness.

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { isFinalizedGrantWithAccessToken } from '@interledger/open-payments'

import {
  expectClientError,
  interactiveGrant,
  nonInteractiveGrant,
  once,
  requestInteractiveGrant,
  usd,
  useWorld
} from './harness.mjs'

describe('an authorization server under a path, with the official Node client', () => {
  const w = useWorld({ authPath: '/gnap' })
  const wallets = once('wallet address documents', async () => ({
    alice: await w.client.walletAddress.get({ url: w.urls.alice }),
    bob: await w.client.walletAddress.get({ url: w.urls.bob })
  }))
  const under = (url, what) => assert.ok(url.startsWith(`${w.opd.authUrl}/${what}/`), url)

  it('publishes the path, without a trailing slash, as authServer', async () => {
    const { alice, bob } = await wallets()
    assert.match(w.opd.authUrl, /^http:\/\/127\.0\.0\.1:\d+\/gnap$/)
    assert.equal(alice.authServer, w.opd.authUrl)
    assert.equal(bob.authServer, w.opd.authUrl)
  })

  it('grants at once there; the token works, rotates and is revoked under the path', async () => {
    const { bob } = await wallets()
    const grant = await nonInteractiveGrant(w, bob.authServer, [
      { type: 'incoming-payment', actions: ['create', 'read', 'list'] }
    ])
    assert.ok(isFinalizedGrantWithAccessToken(grant))
    under(grant.access_token.manage, 'token')
    under(grant.continue.uri, 'continue')
    const list = { url: bob.resourceServer, walletAddress: bob.id }
    await w.client.incomingPayment.list({ ...list, accessToken: grant.access_token.value })
    const rotated = await w.client.token.rotate({ url: grant.access_token.manage, accessToken: grant.access_token.value })
    under(rotated.access_token.manage, 'token')
    await w.client.incomingPayment.list({ ...list, accessToken: rotated.access_token.value })
    await w.client.token.revoke({ url: rotated.access_token.manage, accessToken: rotated.access_token.value })
    // The challenge names the grant endpoint, path included.
    await expectClientError(w, () => w.client.incomingPayment.list({ ...list, accessToken: rotated.access_token.value }), {
      status: 401,
      code: 'invalid_token'
    })
  })

  it('takes an interactive grant through the consent page and continues it there', async () => {
    const { alice } = await wallets()
    // interactiveGrant checks the finish hash over the authServer as published.
    const { pending, grant } = await interactiveGrant(w, alice.authServer, [
      { type: 'outgoing-payment', actions: ['create', 'read', 'list'], identifier: alice.id, limits: { debitAmount: usd(500) } }
    ])
    under(pending.interact.redirect, 'interact')
    under(pending.continue.uri, 'continue')
    assert.ok(isFinalizedGrantWithAccessToken(grant))
    under(grant.access_token.manage, 'token')
    const { outgoingPayment } = w.client
    const page = await outgoingPayment.list({ url: alice.resourceServer, walletAddress: alice.id, accessToken: grant.access_token.value })
    assert.deepEqual(page.result, [])
  })

  it('cancels a pending grant under the path', async () => {
    const { alice } = await wallets()
    const { grant } = await requestInteractiveGrant(w, alice.authServer, [
      { type: 'outgoing-payment', actions: ['create'], identifier: alice.id, limits: { debitAmount: usd(1) } }
    ])
    const cont = { url: grant.continue.uri, accessToken: grant.continue.access_token.value }
    assert.equal(await w.client.grant.cancel(cont), undefined)
    await expectClientError(w, () => w.client.grant.continue(cont, { interact_ref: 'none' }), {
      status: 401,
      code: 'invalid_continuation'
    })
  })
})
