// Two tenants of one opd, side by side, each through the whole Open
// Payments flow (flow.mjs) with the official Node client: `bank` on a host
// of its own (`localhost`, where the server's public URL is 127.0.0.1),
// with an authorization server of its own there, and `shop` on a path
// prefix of the server's host, with the server's authorization server. Each world has its own
// alice, bob and client wallet address `shop`, made in its tenant; every
// response is checked against the specs with the tenant's URL as base.
// Afterwards, neither tenant's resources are found at the other's URLs.

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { flowTests } from './flow.mjs'
import { nonInteractiveGrant, rawFetch, startOpd, usd, useWorld } from './harness.mjs'

let opd
const shared = () => opd
before(async () => {
  opd = await startOpd()
})
after(async () => {
  await opd?.stop()
})

const hostOf = (o) => `http://localhost:${new URL(o.publicUrl).port}`
// bank's own authorization server: the root of its own host on the
// authorization server listener's port.
const bankAuth = (o) => `http://localhost:${new URL(o.authUrl).port}/`
const pathOf = (o) => `${o.publicUrl}/shop`

describe('a tenant on a host of its own', () => {
  flowTests(useWorld({ opd: shared, tenant: { id: 'bank', url: hostOf, authServer: bankAuth } }))
})

describe('a tenant on a path of the server', () => {
  const w = useWorld({ opd: shared, tenant: { id: 'shop', url: pathOf } })
  flowTests(w)

  it("finds nothing of one tenant's at the other's URLs", async () => {
    const bob = await w.client.walletAddress.get({ url: w.urls.bob })
    const grant = await nonInteractiveGrant(w, bob.authServer, [
      { type: 'incoming-payment', actions: ['create', 'read'], identifier: bob.id }
    ])
    const ip = await w.client.incomingPayment.create(
      { url: bob.resourceServer, accessToken: grant.access_token.value },
      { walletAddress: bob.id, incomingAmount: usd(1) }
    )
    const id = ip.id.split('/').pop()
    for (const elsewhere of [hostOf(opd), opd.publicUrl]) {
      const res = await rawFetch(`${elsewhere}/incoming-payments/${id}`)
      assert.equal(res.status, 404, `${elsewhere}: ${await res.text()}`)
      const doc = await rawFetch(`${elsewhere}/bob`)
      // The bank tenant has a bob of its own; the operator has none.
      const body = await doc.json()
      assert.notEqual(body.id, bob.id)
    }
  })
})
