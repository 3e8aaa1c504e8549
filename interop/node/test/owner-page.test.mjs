// The wallet owner's own page (`/wallet/<path>` on the authorization
// listener) in headless Chromium: alice signs in with her password (a
// wrong one first), sees her balance and the application she allowed,
// registers a key the way the Web Monetization extension asks (base64 of
// its JWK) and revokes it, revokes the application's grant (its token then
// stops working), and signs out. Screenshots at desktop and phone width.

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { launchBrowser, screenshots } from './browser.mjs'
import { OWNER_PASSWORD, adminOk, clientError, interactiveGrant, useWorld } from './harness.mjs'

describe("a wallet owner's own page in a browser", () => {
  const w = useWorld()
  let browser
  let page
  let alice
  let token
  let ownerPage

  before(async () => {
    browser = await launchBrowser()
    page = await browser.context.newPage()
    alice = await w.client.walletAddress.get({ url: w.urls.alice })
    const { grant } = await interactiveGrant(w, alice.authServer, [
      { type: 'outgoing-payment', actions: ['create', 'read', 'list'], identifier: alice.id, limits: { debitAmount: { value: '2500', assetCode: 'USD', assetScale: 2 } } }
    ])
    token = grant.access_token.value
    ownerPage = `${w.authUrl}/wallet/alice`
  })
  after(async () => {
    await browser?.close()
  })

  it('signs in with the owner password, a wrong one refused first', async () => {
    await page.goto(ownerPage)
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Sign in to your wallet')
    await page.getByLabel('Password of your wallet address').fill('not her password')
    const [wrong] = await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Sign in' }).click()])
    assert.equal(wrong.status(), 401)
    assert.equal(await page.getByRole('alert').innerText(), 'Wrong password.')
    await screenshots(page, 'owner-sign-in')
    await page.getByLabel('Password of your wallet address').fill(OWNER_PASSWORD)
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Sign in' }).click()])
    const { balance } = await adminOk(w.admin, 'GET', '/wallet-addresses/alice/balance')
    const dollars = `$${(BigInt(balance.value) / 100n).toLocaleString('en-US')}.${(BigInt(balance.value) % 100n).toString().padStart(2, '0')}`
    assert.equal(await page.locator('#owner-balance').innerText(), dollars)
    const allowed = await page.getByRole('list', { name: 'Applications you allowed' }).innerText()
    assert.ok(allowed.includes(w.urls.shop), allowed)
    assert.match(allowed, /outgoing-payment: create, read, list, limits: debit \$25\.00/)
    const [cookie] = (await browser.context.cookies(ownerPage)).filter((c) => c.name === 'opd_owner')
    assert.equal(cookie.httpOnly, true)
    assert.equal(cookie.sameSite, 'Strict')
    await screenshots(page, 'owner-page')
  })

  it('registers a key as the Web Monetization extension asks, then revokes it', async () => {
    const jwk = { kid: 'wm-extension-key', kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' }
    await page.getByLabel('Add a key: its public JWK, as JSON or base64').fill(Buffer.from(JSON.stringify(jwk)).toString('base64'))
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Add the key' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The key is added: the application signing with it is recognised at once.')
    const kids = async () => (await (await fetch(`${w.urls.alice}/jwks.json`)).json()).keys.map((k) => k.kid)
    assert.ok((await kids()).includes('wm-extension-key'))
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Revoke key wm-extension-key' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The key is revoked: signatures made with it are refused at once.')
    assert.ok(!(await kids()).includes('wm-extension-key'))
  })

  it("revokes the application's grant: its token stops working", async () => {
    const list = () => w.client.outgoingPayment.list({ url: alice.resourceServer, walletAddress: alice.id, accessToken: token })
    await list()
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: `Revoke access of ${w.urls.shop}` }).first().click()])
    assert.equal(await page.getByRole('status').innerText(), 'The grant is revoked: the application can no longer use it.')
    const err = await clientError(list)
    assert.equal(err.status, 401)
  })

  it('signs out: the page asks for the password again', async () => {
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Sign out' }).click()])
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Sign in to your wallet')
  })
})
