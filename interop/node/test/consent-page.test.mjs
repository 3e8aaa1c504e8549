// opd's consent page in headless Chromium: what the owner reads (amounts
// with their asset, the interval in words, the client's name escaped, the
// receiver named with what it asks, a limit beyond the balance warned
// about), then approve (with the keyboard alone), reject, and a wrong
// password before the right one. Screenshots at desktop and phone width (see browser.mjs).

import assert from 'node:assert/strict'
import { spawn, execFileSync } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'

import { isFinalizedGrantWithAccessToken, isPendingGrant } from '@interledger/open-payments'

import { launchBrowser, screenshots } from './browser.mjs'
import {
  OWNER_PASSWORD,
  adminOk,
  opdBin,
  clientWithKey,
  newEd25519Key,
  nonInteractiveGrant,
  rawFetch,
  usd,
  useWorld
} from './harness.mjs'

const INTERVAL = 'R/2026-11-01T00:00:00Z/P1M'

describe('consent page in a browser', () => {
  const w = useWorld()
  let browser
  let alice
  // The client's finish URI: a page of its own here (the harness's port 9
  // is one Chromium refuses to load).
  let finishServer
  let FINISH_URI

  before(async () => {
    finishServer = http.createServer((req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<p>back at the client</p>'))
    await new Promise((resolve) => finishServer.listen(0, '127.0.0.1', resolve))
    FINISH_URI = `http://127.0.0.1:${finishServer.address().port}/consent-finish`
    browser = await launchBrowser()
    alice = await w.client.walletAddress.get({ url: w.urls.alice })
  })
  after(async () => {
    await browser?.close()
    finishServer?.closeAllConnections()
    finishServer?.close()
  })

  /** A pending grant to send up to $25.00 a month from alice, and a page on its consent page. */
  async function openConsent(client = w.client, access) {
    const grant = await client.grant.request(
      { url: alice.authServer },
      {
        access_token: {
          access: access ?? [
        {
          type: 'outgoing-payment',
          actions: ['create', 'read'],
          identifier: alice.id,
          limits: { debitAmount: usd(2500), interval: INTERVAL }
        }
          ]
        },
        interact: { start: ['redirect'], finish: { method: 'redirect', uri: FINISH_URI, nonce: crypto.randomUUID() } }
      }
    )
    assert.ok(isPendingGrant(grant))
    const page = await browser.context.newPage()
    const res = await page.goto(grant.interact.redirect)
    assert.equal(res.status(), 200)
    return { grant, page }
  }

  async function submit(page, button) {
    const [response] = await Promise.all([page.waitForNavigation(), button()])
    return response
  }

  it('shows the amount, the interval and the client in words, and is approved with the keyboard alone', async () => {
    const { grant, page } = await openConsent()
    const text = await page.locator('main').innerText()
    assert.match(text, /Send up to \$25\.00 every month, from 1 November 2026/)
    assert.match(text, /Read the payments it sends/)
    assert.ok(text.includes(w.urls.shop), `the client's URL is shown: ${text}`)
    assert.ok(text.includes(w.urls.alice), `the wallet address is shown: ${text}`)
    assert.doesNotMatch(text, /minor units|scale|R\/2026/)
    assert.equal(await page.title(), 'Grant access? · opd')
    // Every field has its label.
    assert.equal(await page.getByLabel('Password of your wallet address').count(), 1)
    await screenshots(page, 'consent')

    // The password field has the focus; Tab reaches Approve, Enter presses it.
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'password')
    await page.keyboard.type(OWNER_PASSWORD)
    await page.keyboard.press('Tab')
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Approve')
    await submit(page, () => page.keyboard.press('Enter'))
    const finish = new URL(page.url())
    assert.equal(`${finish.origin}${finish.pathname}`, FINISH_URI)
    const interactRef = finish.searchParams.get('interact_ref')
    assert.ok(interactRef, page.url())
    const granted = await w.client.grant.continue(
      { url: grant.continue.uri, accessToken: grant.continue.access_token.value },
      { interact_ref: interactRef }
    )
    assert.ok(isFinalizedGrantWithAccessToken(granted))
    assert.deepEqual(granted.access_token.access[0].limits, { debitAmount: usd(2500), interval: INTERVAL })
    await page.close()
  })

  it('names the receiver and what it asks, and warns about a limit beyond the balance', async () => {
    const bob = await w.client.walletAddress.get({ url: w.urls.bob })
    const ipGrant = await nonInteractiveGrant(w, bob.authServer, [{ type: 'incoming-payment', actions: ['create'] }])
    const incoming = await w.client.incomingPayment.create(
      { url: bob.resourceServer, accessToken: ipGrant.access_token.value },
      { walletAddress: bob.id, incomingAmount: usd(1234) }
    )
    const { balance } = await adminOk(w.admin, 'GET', '/wallet-addresses/alice/balance')
    const beyond = (BigInt(balance.value) + 100n).toString()
    const { page } = await openConsent(w.client, [
      {
        type: 'outgoing-payment',
        actions: ['create'],
        identifier: alice.id,
        limits: { debitAmount: { ...usd(0), value: beyond }, receiver: incoming.id }
      }
    ])
    const text = await page.locator('main').innerText()
    assert.ok(text.includes(`The receiver is Bob (${w.urls.bob}).`), text)
    assert.match(text, /It asks for \$12\.34\./)
    assert.match(text, /Your balance is \$[\d,]+\.\d\d: payments beyond it will fail until money is added\./)
    await screenshots(page, 'consent-receiver')
    await page.close()
  })

  it('rejects: the client is told so', async () => {
    const { page } = await openConsent()
    await page.getByLabel('Password of your wallet address').fill(OWNER_PASSWORD)
    await submit(page, () => page.getByRole('button', { name: 'Reject' }).click())
    const finish = new URL(page.url())
    assert.equal(`${finish.origin}${finish.pathname}`, FINISH_URI)
    assert.equal(finish.searchParams.get('result'), 'grant_rejected')
    assert.equal(finish.searchParams.get('interact_ref'), null)
    await page.close()
  })

  it('keeps the owner on the page after a wrong password, then accepts the right one', async () => {
    const { page } = await openConsent()
    await page.getByLabel('Password of your wallet address').fill('not the password')
    const wrong = await submit(page, () => page.getByRole('button', { name: 'Approve' }).click())
    assert.equal(wrong.status(), 401)
    assert.equal(await page.getByRole('alert').innerText(), 'Wrong password.')
    assert.equal(await page.getByLabel('Password of your wallet address').getAttribute('aria-invalid'), 'true')
    await screenshots(page, 'consent-wrong-password')
    await page.getByLabel('Password of your wallet address').fill(OWNER_PASSWORD)
    await submit(page, () => page.getByRole('button', { name: 'Approve' }).click())
    assert.ok(new URL(page.url()).searchParams.get('interact_ref'), page.url())
    await page.close()
  })

  it("shows a client's own name as text, never as markup, with the host it runs at", async () => {
    const name = '<script>window.__pwned = 1</script><b>Evil</b> & Co'
    await adminOk(w.admin, 'POST', '/wallet-addresses', { path: 'evil', assetCode: 'USD', assetScale: 2, publicName: name }, 201)
    const key = newEd25519Key('evil-key')
    await adminOk(w.admin, 'POST', '/wallet-addresses/evil/keys', { jwk: key.jwk }, [200, 201])
    const evil = await clientWithKey(w, key, `${w.opd.publicUrl}/evil`)
    const { page } = await openConsent(evil, [
      { type: 'incoming-payment', actions: ['create', 'read-all'], identifier: alice.id },
      { type: 'outgoing-payment', actions: ['create'], identifier: alice.id, limits: { receiveAmount: { value: '1234567', assetCode: 'EUR', assetScale: 2 } } }
    ])
    const heading = await page.getByRole('heading', { level: 1 }).innerText()
    assert.equal(heading, `${name} asks for access to your wallet`)
    assert.equal(await page.evaluate(() => window.__pwned), undefined)
    assert.equal(await page.locator('main script, main b').count(), 0)
    const text = await page.locator('main').innerText()
    assert.match(text, /is chosen by the application itself\. It runs at 127\.0\.0\.1/)
    assert.match(text, /Send payments that deliver up to 12,345\.67 EUR in total/)
    assert.match(text, /Receive payments into your wallet address/)
    assert.match(text, /Read every payment into your wallet address/)
    await page.close()
  })

  it('refuses an answer without the form token and decides nothing', async () => {
    const { grant, page } = await openConsent()
    const action = await page.locator('form').getAttribute('action')
    const res = await rawFetch(new URL(action, page.url()), {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ password: OWNER_PASSWORD, decision: 'approve' }).toString()
    })
    assert.equal(res.status, 403)
    assert.match(await res.text(), /Nothing was decided/)
    // The page's own form still works.
    await page.getByLabel('Password of your wallet address').fill(OWNER_PASSWORD)
    await submit(page, () => page.getByRole('button', { name: 'Approve' }).click())
    assert.ok(new URL(page.url()).searchParams.get('interact_ref'), page.url())
    assert.ok(grant)
    await page.close()
  })

  it('lands on the opd client\'s finish page, in the consent page\'s look', async () => {
    // A profile of shop's with a key of its own, registered at shop.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'opd-finish-'))
    const profile = path.join(dir, 'client.json')
    const made = JSON.parse(execFileSync(opdBin(), ['client', '--profile', profile, 'keys', 'generate', '--wallet-address', w.urls.shop, '--key-id', `finish-${crypto.randomUUID()}`, '--json']))
    await adminOk(w.admin, 'POST', '/wallet-addresses/shop/keys', { jwk: made.jwk }, [201])
    const pay = spawn(opdBin(), ['client', '--profile', profile, 'pay', w.urls.bob, '--from', w.urls.alice, '--amount', '0.01'], { stdio: ['ignore', 'pipe', 'pipe'] })
    const exited = new Promise((resolve) => pay.on('exit', resolve))
    let said = ''
    const consentUrl = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no consent URL: ${said}`)), 30_000)
      pay.stderr.on('data', (chunk) => {
        said += chunk
        const found = said.match(/Open this page to approve[^\n]*\n\n\s+(\S+)/)
        if (found) {
          clearTimeout(timer)
          resolve(found[1])
        }
      })
    })
    const page = await browser.context.newPage()
    await page.goto(consentUrl)
    await page.getByLabel('Password of your wallet address').fill(OWNER_PASSWORD)
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Approve' }).click()])
    assert.equal(new URL(page.url()).hostname, '127.0.0.1', 'the client\'s own loopback page')
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Approved')
    const look = await page.evaluate(() => ({
      body: getComputedStyle(document.body).backgroundColor,
      card: getComputedStyle(document.querySelector('.card')).backgroundColor,
      font: getComputedStyle(document.body).fontFamily
    }))
    assert.deepEqual([look.body, look.card], ['rgb(246, 248, 250)', 'rgb(255, 255, 255)'], 'the consent page\'s colours')
    assert.match(look.font, /system-ui/)
    await screenshots(page, 'client-finish')
    await page.close()
    assert.equal(await exited, 0, said)
    fs.rmSync(dir, { recursive: true, force: true })
  })
})
