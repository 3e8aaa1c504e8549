// The spec validation itself: it must reject a response opd could get
// wrong, or the rest of the suite would prove nothing.

import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import { createRequire } from 'node:module'
import { describe, it } from 'node:test'

import { getResourceServerOpenAPI } from '@interledger/open-payments'

import { SPEC_FILES, nonInteractiveGrant, once, specDir, usd, useWorld, validateAgainstSpec } from './harness.mjs'

const require = createRequire(import.meta.url)

describe('spec validation', () => {
  const w = useWorld()

  const realQuote = once('a quote from opd', async () => {
    const alice = await w.client.walletAddress.get({ url: w.urls.alice })
    const bob = await w.client.walletAddress.get({ url: w.urls.bob })
    const ipGrant = await nonInteractiveGrant(w, bob.authServer, [{ type: 'incoming-payment', actions: ['create'] }])
    const ip = await w.client.incomingPayment.create(
      { url: bob.resourceServer, accessToken: ipGrant.access_token.value },
      { walletAddress: bob.id, incomingAmount: usd(500) }
    )
    const qGrant = await nonInteractiveGrant(w, alice.authServer, [{ type: 'quote', actions: ['create', 'read'] }])
    const quote = await w.client.quote.create(
      { url: alice.resourceServer, accessToken: qGrant.access_token.value },
      { walletAddress: alice.id, receiver: ip.id, method: 'ilp' }
    )
    return { quote, token: qGrant.access_token.value }
  })
  const validQuote = async () => structuredClone((await realQuote()).quote)
  const createQuote = (status, body) => validateAgainstSpec({ kind: 'resource', path: '/quotes', method: 'post', status, body })

  it('the official client validates with the same documents as <repo>/spec', () => {
    const bundled = path.join(path.dirname(require.resolve('@interledger/open-payments')), 'openapi', 'specs')
    for (const file of Object.values(SPEC_FILES)) {
      const a = fs.readFileSync(path.join(bundled, file), 'utf8')
      const b = fs.readFileSync(path.join(specDir(), file), 'utf8')
      assert.ok(a === b, `${file} bundled in @interledger/open-payments differs from ${specDir()}/${file}`)
    }
  })

  it('accepts the quote opd returned', async () => {
    assert.equal(await createQuote(201, await validQuote()), true)
    assert.equal(
      await validateAgainstSpec({ kind: 'resource', path: '/quotes/{id}', method: 'get', status: 200, body: await validQuote() }),
      true
    )
  })

  it('rejects a quote with an extra field (sentAmount)', async () => {
    const q = await validQuote()
    q.sentAmount = usd(0)
    await assert.rejects(createQuote(201, q), /additionalProperties|additional properties/i)
    await assert.rejects(createQuote(201, q), /sentAmount/)
    // The client's own validator agrees.
    const clientSpec = await getResourceServerOpenAPI()
    const validate = clientSpec.createResponseValidator({ path: '/quotes', method: 'post' })
    assert.throws(() => validate({ status: 201, body: q }), (err) => err.errors.some((e) => /sentAmount/.test(e.message)))
  })

  it('rejects a quote without debitAmount, with a numeric amount, or with another status', async () => {
    const missing = await validQuote()
    delete missing.debitAmount
    await assert.rejects(createQuote(201, missing), /debitAmount/)
    const numeric = await validQuote()
    numeric.receiveAmount.value = 500
    await assert.rejects(createQuote(201, numeric), /receiveAmount/)
    await assert.rejects(createQuote(200, await validQuote()), /unknown status code|status/i)
  })

  it('rejects an error body without description', async () => {
    await createQuote(400, { error: { code: 'invalid_receiver', description: 'invalid receiver' } })
    await assert.rejects(createQuote(400, { error: { code: 'invalid_receiver' } }), /description/)
    await assert.rejects(createQuote(400, { message: 'invalid receiver' }), /error/)
  })

  it('a tampered response fails the official client and the recorder', async (t) => {
    const { quote, token } = await realQuote()
    const tampered = { ...quote, sentAmount: usd(0) }
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(tampered))
    })
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.after(() => new Promise((resolve) => server.close(resolve)))
    const origin = `http://127.0.0.1:${server.address().port}`
    w.aliases.set(origin, w.opd.publicUrl)
    const from = w.recorder.mark()
    try {
      const err = await w.client.quote.get({ url: `${origin}${new URL(quote.id).pathname}`, accessToken: token }).then(
        (v) => assert.fail(`the client accepted ${JSON.stringify(v)}`),
        (e) => e
      )
      assert.equal(err.name, 'OpenPaymentsClientError')
      assert.equal(err.description, 'Could not validate OpenAPI response')
      assert.ok(err.validationErrors.some((m) => /sentAmount/.test(m)), JSON.stringify(err.validationErrors))
      const [record, ...rest] = await w.recorder.take(from)
      assert.equal(rest.length, 0)
      assert.ok(record.problems.some((p) => /sentAmount/.test(p)), `the recorder should flag it: ${JSON.stringify(record.problems)}`)
    } finally {
      w.aliases.delete(origin)
    }
  })
})
