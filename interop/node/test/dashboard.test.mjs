// The operator dashboard (admin listener, /dashboard) in headless Chromium:
// sign in with the admin token (a cookie per admin port), wallet addresses
// and balances after a payment (the server's own apart), a wallet address's
// page (keys, grants, payments, history, a deposit), creating wallet
// addresses and peers (refused forms say why), payments filtered and one
// payment's transfers by account name, revoking a grant, peers and their
// liquidity, fees and rates set, the search box, retrying a failing
// webhook and reading its payload, the ledger's accounts and check, the
// settings with secrets masked, every page on a phone without sideways
// scrolling, a form without its CSRF token refused, signing out, and a
// tenant signed in with its own token (its wallet addresses only).
// Screenshots at desktop and phone width (see browser.mjs).

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import http from 'node:http'
import { after, before, describe, it } from 'node:test'

import { DESKTOP, PHONE, launchBrowser, screenshots } from './browser.mjs'
import {
  ADMIN_TOKEN,
  adminOk,
  clientError,
  interactiveGrant,
  nonInteractiveGrant,
  poll,
  rawFetch,
  startWorld,
  usd
} from './harness.mjs'

const WEBHOOK_SECRET = `dashboard-webhook-secret-${crypto.randomUUID()}`

/** A webhook receiver that answers 500 until `healthy` is set. */
async function flakyReceiver() {
  const received = []
  const state = { healthy: false }
  const server = http.createServer((req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      if (!state.healthy) return res.writeHead(500).end('receiver down')
      received.push(JSON.parse(Buffer.concat(chunks).toString('utf8')))
      res.writeHead(204).end()
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${server.address().port}/hooks`,
    state,
    received,
    close: () => new Promise((resolve) => {
      server.closeAllConnections()
      server.close(resolve)
    })
  }
}

/** `$1,234.56` from minor units at scale 2, as the dashboard shows USD. */
function dollars(minor) {
  const v = BigInt(minor)
  const int = (v / 100n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  return `$${int}.${(v % 100n).toString().padStart(2, '0')}`
}

describe('operator dashboard in a browser', () => {
  let w
  let hooks
  let browser
  let page
  let dash
  let payment
  let outgoingToken

  before(async () => {
    hooks = await flakyReceiver()
    w = await startWorld({ extraArgs: [`--webhook-url=${hooks.url}`, `--webhook-secret=${WEBHOOK_SECRET}`] })
    dash = `${w.opd.adminUrl}/dashboard`
    browser = await launchBrowser()
    page = await browser.context.newPage()

    // A payment from alice to bob, with the official client.
    const alice = await w.client.walletAddress.get({ url: w.urls.alice })
    const bob = await w.client.walletAddress.get({ url: w.urls.bob })
    const ipGrant = await nonInteractiveGrant(w, bob.authServer, [{ type: 'incoming-payment', actions: ['create', 'read'] }])
    const incoming = await w.client.incomingPayment.create(
      { url: bob.resourceServer, accessToken: ipGrant.access_token.value },
      { walletAddress: bob.id, incomingAmount: usd(1234) }
    )
    const quoteGrant = await nonInteractiveGrant(w, alice.authServer, [{ type: 'quote', actions: ['create'] }])
    const quote = await w.client.quote.create(
      { url: alice.resourceServer, accessToken: quoteGrant.access_token.value },
      { walletAddress: alice.id, method: 'ilp', receiver: incoming.id }
    )
    const { grant } = await interactiveGrant(w, alice.authServer, [
      { type: 'outgoing-payment', actions: ['create', 'read'], identifier: alice.id, limits: { debitAmount: usd(5000) } }
    ])
    outgoingToken = grant.access_token.value
    const created = await w.client.outgoingPayment.create(
      { url: alice.resourceServer, accessToken: outgoingToken },
      { walletAddress: alice.id, quoteId: quote.id }
    )
    payment = await poll(
      () => w.client.outgoingPayment.get({ url: created.id, accessToken: outgoingToken }),
      (p) => p.failed || p.sentAmount.value === p.debitAmount.value
    )
    assert.equal(payment.failed, false, JSON.stringify(payment))
  })

  after(async () => {
    await browser?.close()
    await w?.stop()
    await hooks?.close()
  })

  it('refuses a wrong admin token, then signs in with the right one', async () => {
    // Asked for a page: signed in, the browser lands on it.
    const res = await page.goto(`${dash}/payments?kind=incoming`)
    assert.equal(new URL(page.url()).pathname, '/dashboard/login', 'without a session the dashboard sends the browser to sign in')
    assert.equal(res.status(), 200)
    await page.getByLabel('Admin token').fill('not the admin token')
    const [wrong] = await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Sign in' }).click()])
    assert.equal(wrong.status(), 401)
    assert.equal(await page.getByRole('alert').innerText(), 'That is not the admin token.')
    await screenshots(page, 'dashboard-login')
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN)
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Sign in' }).click()])
    const landed = new URL(page.url())
    assert.equal(landed.pathname + landed.search, '/dashboard/payments?kind=incoming', 'back to the page asked for')
    const [cookie] = await browser.context.cookies(dash)
    // Named for the port: dashboards of two servers on one host (browsers
    // share a host's cookies across ports) keep their sessions.
    assert.equal(cookie.name, `opd_dashboard_${new URL(dash).port}`)
    assert.equal(cookie.httpOnly, true)
    assert.equal(cookie.sameSite, 'Strict')
    assert.equal(cookie.path, '/dashboard')
    assert.ok(!cookie.value.includes(ADMIN_TOKEN))
  })

  it('shows the wallet addresses with their balances after the payment', async () => {
    await page.goto(dash)
    for (const p of ['alice', 'bob', 'shop']) {
      const { balance } = await adminOk(w.admin, 'GET', `/wallet-addresses/${p}/balance`)
      assert.equal(await page.locator(`[data-balance="${p}"]`).innerText(), dollars(balance.value))
    }
    // alice had $10,000.00 and paid $12.34 (bob's incoming payment holds it
    // until it completes).
    assert.equal(await page.locator('[data-balance="alice"]').innerText(), '$9,987.66')
    const text = await page.locator('main').innerText()
    assert.match(text, /shop-key-/, 'the client key of shop is listed')
    await screenshots(page, 'dashboard-wallets')
  })

  it('opens a wallet address: keys, grants, payments and history; deposits to it', async () => {
    await page.goto(dash)
    const table = await page.getByRole('region', { name: 'Wallet addresses' }).innerText()
    assert.ok(!table.includes('.well-known/pay'), 'the server\'s own wallet address is listed apart')
    assert.match(await page.locator('section[aria-labelledby=server-wallet]').innerText(), /never holds money/)
    await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: 'alice', exact: true }).click()])
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Wallet address')
    assert.equal(await page.locator('#wallet-balance').innerText(), '$9,987.66')
    const paymentId = payment.id.split('/').pop()
    assert.match(await page.getByRole('region', { name: 'outgoing payments' }).innerText(), new RegExp(paymentId))
    assert.match(await page.getByRole('region', { name: 'Grants' }).innerText(), /outgoing-payment: create, read/)
    const history = await page.getByRole('region', { name: 'Balance history' }).innerText()
    assert.match(history, /deposit/)
    assert.match(history, /−\$12\.34/)
    await page.getByLabel('Amount to deposit or withdraw').fill('25.00')
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Deposit' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The money was deposited.')
    assert.equal(await page.locator('#wallet-balance').innerText(), '$10,012.66')
    const { balance } = await adminOk(w.admin, 'GET', '/wallet-addresses/alice/balance')
    assert.equal(balance.value, '1001266')
    await screenshots(page, 'dashboard-wallet')
    // Back to where it was, for the pages after this one.
    await page.getByLabel('Amount to deposit or withdraw').fill('25')
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Withdraw' }).click()])
    assert.equal(await page.locator('#wallet-balance').innerText(), '$9,987.66')
  })

  it('creates a wallet address, and says why when it cannot', async () => {
    await page.goto(dash)
    await page.getByLabel('Path', { exact: true }).fill('alice')
    await page.getByLabel('Asset code').fill('EUR')
    await page.getByLabel('Asset scale').fill('2')
    const [refused] = await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Create wallet address' }).click()])
    assert.equal(refused.status(), 400)
    assert.match(await page.getByRole('alert').innerText(), /"alice" exists already/)
    assert.equal(await page.getByLabel('Asset code').inputValue(), 'EUR', 'the form keeps what was typed')
    await page.getByLabel('Path', { exact: true }).fill('dora')
    await page.getByLabel('Public name').fill('Dora')
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Create wallet address' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The wallet address is created.')
    assert.match(await page.locator('main').innerText(), /Dora/)
    const dora = await adminOk(w.admin, 'GET', '/wallet-addresses/dora')
    assert.equal(dora.assetCode, 'EUR')
    assert.equal(dora.publicName, 'Dora')
  })

  it('sets an owner password, adds and revokes a key, and deactivates on the wallet page', async () => {
    const dora = await adminOk(w.admin, 'GET', '/wallet-addresses/dora')
    await page.goto(`${dash}/wallets/${dora.id}`)
    assert.match(await page.locator('main').innerText(), /Its owner has no password yet/)
    await page.getByLabel('New password').fill('dora keeps bees')
    await page.getByLabel('The same again').fill('dora keeps bess')
    const [mistyped] = await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Set the password' }).click()])
    assert.equal(mistyped.status(), 400)
    assert.match(await page.getByRole('alert').innerText(), /The two passwords differ/)
    await page.getByLabel('New password').fill('dora keeps bees')
    await page.getByLabel('The same again').fill('dora keeps bees')
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Set the password' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The owner password is set: its owner approves grants with it.')
    assert.ok(await page.getByRole('button', { name: 'Reset the password' }).isVisible())

    // A key as a file (a JWK saved by a client); pasting is tested over HTTP.
    const jwk = { kid: 'wm-dora', kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' }
    await page.getByLabel('Or its file').setInputFiles({ name: 'wm-dora.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(jwk)) })
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Add the key' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The key is added: clients signing with it are recognised at once.')
    const jwks = async () => (await (await fetch(`${w.base}/dora/jwks.json`)).json()).keys.map((k) => k.kid)
    assert.deepEqual(await jwks(), ['wm-dora'])
    await screenshots(page, 'dashboard-wallet-forms')
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Revoke key wm-dora' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The key is revoked: signatures made with it are refused at once.')
    assert.deepEqual(await jwks(), [])

    await page.getByLabel('Deactivate this wallet address for good').check()
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Deactivate' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The wallet address is deactivated: it answers as if it did not exist.')
    assert.equal((await fetch(`${w.base}/dora`)).status, 404)
    assert.equal(await page.getByRole('button', { name: 'Deactivate' }).count(), 0)
  })

  it('filters payments and opens one with its transfers', async () => {
    await page.goto(`${dash}/payments`)
    await page.getByLabel('Wallet address', { exact: true }).selectOption({ label: 'alice' })
    await page.getByLabel('State').selectOption('completed')
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Show' }).click()])
    const rows = page.locator('tbody tr')
    assert.equal(await rows.count(), 1)
    const paymentId = payment.id.split('/').pop()
    assert.match(await rows.first().innerText(), new RegExp(paymentId))
    assert.match(await rows.first().innerText(), /\$12\.34/)
    await screenshots(page, 'dashboard-payments')

    await page.getByLabel('State').selectOption('failed')
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Show' }).click()])
    assert.match(await page.locator('main').innerText(), /No payments match/)

    await page.getByLabel('Direction').selectOption('incoming')
    await page.getByLabel('Wallet address', { exact: true }).selectOption({ label: 'bob' })
    await page.getByLabel('State').selectOption('')
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Show' }).click()])
    assert.equal(await page.locator('tbody tr').count(), 1)

    await page.goto(`${dash}/payments?kind=outgoing`)
    await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: paymentId }).click()])
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Outgoing payment')
    const transfers = await page.getByRole('region', { name: 'Transfers' }).innerText()
    assert.match(transfers, /fund/)
    assert.match(transfers, /deliver/)
    assert.match(transfers, /\$12\.34/)
    // Accounts by name, not by raw id.
    assert.match(transfers, /alice \(USD\)/)
    assert.match(transfers, /wallet address/)
    await screenshots(page, 'dashboard-payment')

    // bob's incoming payment says whose it is and what paid it.
    await page.goto(`${dash}/payments?kind=incoming`)
    const incomingId = payment.receiver.split('/').pop()
    await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: incomingId }).click()])
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Incoming payment')
    assert.match(await page.locator('dl.facts').innerText(), new RegExp(`Wallet address\\s+${w.urls.bob}`))
    const paidBy = await page.getByRole('region', { name: 'Paid by' }).innerText()
    assert.match(paidBy, new RegExp(`local payment\\s+${paymentId}\\s+1\\s+\\$12\\.34`))
    assert.ok(!(await page.locator('main').innerText()).includes('No money has moved'))
    await screenshots(page, 'dashboard-incoming-payment')
  })

  it('revokes a grant: its token stops working', async () => {
    await page.goto(`${dash}/grants`)
    // The newest grant is the outgoing-payment grant of the payment.
    const first = page.locator('tbody tr').first()
    const grantRow = await first.innerText()
    assert.match(grantRow, /outgoing-payment: create, read/)
    assert.ok(grantRow.includes(`for ${w.urls.alice}`), grantRow)
    assert.ok(grantRow.includes('limits: debit $50.00'), grantRow)
    await screenshots(page, 'dashboard-grants')
    await Promise.all([page.waitForNavigation(), first.getByRole('button', { name: /^Revoke grant/ }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The grant is revoked: its tokens no longer work.')
    assert.match(await page.locator('tbody tr').first().innerText(), /finalized \(revoked\)/)
    const err = await clientError(() => w.client.outgoingPayment.get({ url: payment.id, accessToken: outgoingToken }))
    assert.equal(err.status, 401)
  })

  it('lists failing webhook events and retries one now', async () => {
    // The receiver answers 500: the events fail and wait for their next attempt.
    const failing = await poll(
      async () => {
        await page.goto(`${dash}/webhooks`)
        return page.locator('tbody tr', { hasText: 'failing' }).count()
      },
      (n) => n > 0,
      { timeoutMs: 15_000, intervalMs: 300 }
    )
    assert.ok(failing > 0, 'no event failed')
    const row = page.locator('tbody tr', { hasText: 'failing' }).first()
    assert.match(await row.innerText(), /500/)
    const eventId = await row.getAttribute('data-event')
    await row.getByText('Payload').click()
    const payload = JSON.parse(await row.locator('pre').innerText())
    assert.equal(payload.id, eventId)
    assert.ok(payload.type && payload.data, JSON.stringify(payload))
    await screenshots(page, 'dashboard-webhooks')

    hooks.state.healthy = true
    await Promise.all([page.waitForNavigation(), row.getByRole('button', { name: /^Retry event/ }).click()])
    // "Due now", unless the worker's own next attempt won the race to it.
    assert.match(
      await page.getByRole('status').innerText(),
      /^(The event is due now: it is sent again within seconds\.|The event was delivered already, or is unknown\.)$/
    )
    const got = await poll(() => hooks.received.find((e) => e.id === eventId), Boolean, { timeoutMs: 10_000 })
    assert.ok(got, `event ${eventId} was not delivered after "retry now"`)
    await page.goto(`${dash}/webhooks?show=all`)
    assert.match(await page.locator(`tr[data-event="${eventId}"]`).innerText(), /delivered/)
  })

  it('shows the peers with their liquidity, never their tokens', async () => {
    const peer = await adminOk(w.admin, 'POST', '/peers', {
      name: 'partner-bank',
      staticIlpAddress: 'test.partner',
      asset: { code: 'USD', scale: 2 },
      routes: ['test.partner'],
      http: { outgoing: { endpoint: 'http://127.0.0.1:9/ilp', authToken: 'secret-outgoing-token' }, incoming: { authTokens: ['secret-incoming-token'] } }
    }, 201)
    await adminOk(w.admin, 'POST', `/peers/${peer.id}/deposits`, { amount: '250000', idempotencyKey: 'dashboard-peer' }, [200, 201])
    await page.goto(`${dash}/peers`)
    const row = page.locator('tbody tr', { hasText: 'partner-bank' })
    assert.match(await row.innerText(), /\$2,500\.00/)
    const html = await page.content()
    assert.ok(!html.includes('secret-outgoing-token') && !html.includes('secret-incoming-token'), 'a peer token is on the page')
    await screenshots(page, 'dashboard-peers')

    // Liquidity in the peer's asset as people write it.
    await row.getByLabel('Amount for partner-bank').fill('100.50')
    await Promise.all([page.waitForNavigation(), row.getByRole('button', { name: 'Deposit' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The liquidity was deposited.')
    assert.match(await page.locator('tbody tr', { hasText: 'partner-bank' }).innerText(), /\$2,600\.50/)
    const { balance } = await adminOk(w.admin, 'GET', `/peers/${peer.id}/balance`)
    assert.equal(balance, '260050')
    await page.locator('tbody tr', { hasText: 'partner-bank' }).getByLabel('Amount for partner-bank').fill('5000')
    await Promise.all([page.waitForNavigation(), page.locator('tbody tr', { hasText: 'partner-bank' }).getByRole('button', { name: 'Withdraw' }).click()])
    assert.match(await page.getByRole('status').innerText(), /^Nothing moved/)
    assert.match(await page.locator('tbody tr', { hasText: 'partner-bank' }).innerText(), /\$2,600\.50/)
  })

  it('runs the ledger check', async () => {
    await page.goto(`${dash}/ledger`)
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Run the ledger check' }).click()])
    assert.match(await page.locator('#ledger-result').innerText(), /The ledger balances/)
    const accounts = await page.getByRole('region', { name: 'Accounts' }).innerText()
    assert.match(accounts, /outside world \(USD\)/)
    assert.match(accounts, /peer partner-bank \(USD\)\s+what the peer may still send us\s+\$2,600\.50/)
    assert.match(accounts, /alice \(USD\)\s+wallet address\s+\$9,987\.66/)
    await screenshots(page, 'dashboard-ledger')
  })

  it('shows the settings with every secret masked', async () => {
    await page.goto(`${dash}/settings`)
    const text = await page.locator('main').innerText()
    assert.match(text, /Webhook secret\s+set \(hidden\)/)
    assert.match(text, /Admin token\s+set \(hidden\)/)
    assert.match(text, /Version\s+opd \d+\.\d+/)
    assert.match(text, /Database\s+SQLite/)
    assert.match(text, new RegExp(`Admin API and dashboard\\s+listens on 127\\.0\\.0\\.1:${new URL(dash).port}`))
    const html = await page.content()
    for (const secret of [WEBHOOK_SECRET, ADMIN_TOKEN]) assert.ok(!html.includes(secret), 'a secret is on the page')
    await screenshots(page, 'dashboard-settings')
  })

  it('creates a peer from the form, its tokens never shown', async () => {
    await page.goto(`${dash}/peers`)
    assert.match(await page.locator('main').innerText(), /what it may still send us before we settle/)
    await page.getByLabel('Name', { exact: true }).fill('form-bank')
    await page.getByLabel('Its ILP address').fill('test.formbank')
    await page.getByLabel('Asset code').fill('USD')
    await page.getByLabel('Asset scale').fill('2')
    await page.getByLabel('Its ILP-over-HTTP endpoint').fill('http://127.0.0.1:9/ilp')
    const [refused] = await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Create peer' }).click()])
    assert.equal(refused.status(), 400)
    assert.match(await page.getByRole('alert').innerText(), /both the endpoint and the token/)
    await page.getByLabel('Token we present there').fill('form-outgoing-secret')
    await page.getByLabel('Token it presents to us').fill('form-incoming-secret')
    await page.getByLabel('Largest packet it may send').fill('50.00')
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Create peer' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The peer is created.')
    assert.match(await page.locator('tbody tr', { hasText: 'form-bank' }).innerText(), /test\.formbank/)
    const html = await page.content()
    assert.ok(!html.includes('form-outgoing-secret') && !html.includes('form-incoming-secret'), 'a peer token is on the page')
    const peers = await adminOk(w.admin, 'GET', '/peers')
    const created = peers.find((p) => p.name === 'form-bank')
    assert.equal(created.maxPacketAmount, '5000')
    assert.equal(created.http.outgoing.endpoint, 'http://127.0.0.1:9/ilp')

    // Edited on its own page (its tokens kept), then deleted: it holds nothing.
    await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: 'Edit peer form-bank' }).click()])
    assert.equal(await page.getByLabel('Largest packet it may send').inputValue(), '50.00')
    await page.getByLabel('Largest packet it may send').fill('25.00')
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Save the peer' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The peer is saved: packets use its new settings at once.')
    const edited = (await adminOk(w.admin, 'GET', '/peers')).find((p) => p.name === 'form-bank')
    assert.equal(edited.maxPacketAmount, '2500')
    assert.equal(edited.http.outgoing.endpoint, 'http://127.0.0.1:9/ilp')
    assert.ok(!(await page.content()).includes('form-outgoing-secret'))
    await screenshots(page, 'dashboard-peer')
    await page.getByLabel('Delete this peer').check()
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Delete the peer' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The peer is deleted.')
    assert.equal((await adminOk(w.admin, 'GET', '/peers')).find((p) => p.name === 'form-bank'), undefined)
  })

  it('sets a fee and a rate on the Fees and rates page', async () => {
    await page.goto(`${dash}/pricing`)
    await page.getByLabel('Asset code').fill('USD')
    await page.getByLabel('Asset scale').fill('2')
    await page.getByLabel('Fixed part').fill('0.25')
    await page.getByLabel('Share, in percent').fill('1')
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Set fee' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The fee is set: new quotes use it.')
    assert.match(await page.locator('tr[data-fee="USD-2"]').innerText(), /\$0\.25\s+1 %\s+set here/)
    const fees = await adminOk(w.admin, 'GET', '/fees')
    assert.deepEqual(fees.map((f) => [f.assetCode, f.fixed, f.basisPoints]), [['USD', '25', 100]])
    await page.getByLabel('Base').fill('USD')
    await page.getByLabel('Counter').fill('EUR')
    await page.getByLabel('Rate', { exact: true }).fill('0.9')
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Set rate' }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The rate is set: new quotes use it.')
    assert.match(await page.locator('tr[data-rate="USD-EUR"]').innerText(), /0\.9/)
    await screenshots(page, 'dashboard-pricing')
    // Removed again: the payments of the other tests pay no fee.
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: /^Remove the fee of USD/ }).click()])
    assert.equal(await page.getByRole('status').innerText(), 'The fee is removed.')
    assert.deepEqual(await adminOk(w.admin, 'GET', '/fees'), [])
  })

  it('finds a payment, a wallet address and a peer from the search box', async () => {
    const search = async (q) => {
      await page.goto(dash)
      await page.getByRole('searchbox').fill(q)
      await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Search' }).click()])
    }
    await search(payment.id)
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Outgoing payment')
    await search(w.urls.bob)
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Wallet address')
    assert.match(await page.locator('main').innerText(), /\/bob/)
    await search('partner-bank')
    assert.equal(new URL(page.url()).hash.startsWith('#peer-'), true, page.url())
    await search('no-such-thing')
    assert.match(await page.locator('#search-result').innerText(), /Nothing here matches/)
  })

  it('fits a phone screen on every page, without sideways scrolling', async () => {
    const alice = await adminOk(w.admin, 'GET', '/wallet-addresses/alice')
    const paymentId = payment.id.split('/').pop()
    const pages = ['', '/payments', '/grants', '/peers', '/pricing', '/webhooks?show=all', '/ledger', '/settings',
      `/wallets/${alice.id}`, `/payments/outgoing/${paymentId}`, '/search?q=no-such-thing']
    await page.setViewportSize(PHONE)
    try {
      for (const path of pages) {
        await page.goto(`${dash}${path}`)
        const { scroll, inner, wide } = await page.evaluate(() => ({
          scroll: document.documentElement.scrollWidth,
          inner: window.innerWidth,
          // Tables too: their rows become cards rather than scroll in a frame.
          wide: [...document.querySelectorAll('.table-wrap')]
            .filter((t) => t.scrollWidth > t.clientWidth + 1)
            .map((t) => `${t.getAttribute('aria-label')}: ${t.scrollWidth}px in ${t.clientWidth}px`)
        }))
        assert.ok(scroll <= inner, `${path || '/'} is ${scroll}px wide on a ${inner}px screen`)
        assert.deepEqual(wide, [], `${path || '/'} has tables scrolling sideways`)
      }
    } finally {
      await page.setViewportSize(DESKTOP)
    }
  })

  it('refuses a form posted without its CSRF token and changes nothing', async () => {
    await page.goto(`${dash}/grants`)
    const revocable = page.locator('tbody tr', { has: page.getByRole('button', { name: /^Revoke grant/ }) }).first()
    const grantId = await revocable.getAttribute('data-grant')
    // The session cookie goes along; the token does not.
    const res = await browser.context.request.post(`${dash}/grants/${grantId}/revoke`, { form: { reason: 'forged' }, maxRedirects: 0 })
    assert.equal(res.status(), 403)
    assert.match(await res.text(), /Nothing was changed/)
    await page.reload()
    assert.equal(await page.locator(`tr[data-grant="${grantId}"]`).getByRole('button', { name: /^Revoke grant/ }).count(), 1)
  })

  it('signs out: the session no longer opens anything', async () => {
    await page.goto(dash)
    const [cookie] = await browser.context.cookies(dash)
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Log out' }).click()])
    assert.equal(new URL(page.url()).pathname, '/dashboard/login')
    // The old cookie value is dead on the server, not just cleared here.
    const res = await rawFetch(dash, { redirect: 'manual', headers: { cookie: `${cookie.name}=${cookie.value}` } })
    assert.equal(res.status, 303)
    assert.equal(res.headers.get('location'), '/dashboard/login')
  })

  it("signs a tenant in with its own token: its wallet addresses only, no operator's pages", async () => {
    const base = `${w.opd.publicUrl}/acme`
    const made = await adminOk(w.admin, 'POST', '/tenants', { id: 'acme', publicName: 'Acme Pay', publicUrl: base }, 201)
    await adminOk(w.admin, 'POST', '/wallet-addresses', { tenant: 'acme', path: 'dora', assetCode: 'USD', assetScale: 2 }, 201)
    await page.goto(`${dash}/login`)
    await page.getByLabel('Admin token').fill(made.adminToken)
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Sign in' }).click()])
    assert.equal(new URL(page.url()).pathname, '/dashboard')
    const text = await page.locator('main').innerText()
    assert.match(text, /dora/)
    for (const other of ['alice', 'bob', 'shop']) assert.doesNotMatch(text, new RegExp(`/${other}\\b`), `${other} on a tenant's page`)
    const nav = await page.getByRole('navigation', { name: 'Dashboard' }).innerText()
    assert.match(nav, /Wallet addresses/)
    assert.match(nav, /Payments/)
    for (const hidden of ['Peers', 'Fees and rates', 'Webhooks', 'Ledger', 'Settings', 'Grants']) assert.doesNotMatch(nav, new RegExp(hidden))
    assert.equal(await page.getByRole('search').count(), 0, "the search finds every tenant's: not shown")
    const res = await page.goto(`${dash}/peers`)
    assert.equal(res.status(), 404)
    await screenshots(page, 'dashboard-tenant-not-found')
    await page.goto(dash)
    await screenshots(page, 'dashboard-tenant')
  })
})
