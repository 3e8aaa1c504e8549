// Test harness: runs a fresh `opd serve` for one test file, sets up the
// wallet addresses and keys the suite needs through the admin API, and
// checks every Open Payments response against the OpenAPI documents.
//
//   OPD_BIN       the opd binary (required)
//   OPD_SPEC_DIR  the Open Payments YAML specs (default: <repo>/spec)
//
// Options of useWorld/startWorld: `ilp: true` requires opd's ILP-over-HTTP
// listener and exposes its URL as world.opd.ilpUrl; `webhooks: true` runs a
// local webhook receiver (world.webhooks) that opd POSTs its events to;
// `authPath: '/gnap'` serves the authorization server under that path (as
// behind a proxy that forwards it unchanged).

import { spawn, spawnSync } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import assert from 'node:assert/strict'
import { after, afterEach, before, beforeEach } from 'node:test'

import { createOpenAPI } from '@interledger/openapi'
import {
  createAuthenticatedClient,
  createUnauthenticatedClient,
  isPendingGrant
} from '@interledger/open-payments'

const here = path.dirname(fileURLToPath(import.meta.url))
const repoRoot = path.resolve(here, '../../..')

export const ADMIN_TOKEN = 'interop-admin-token-0123456789abcdef'
export const IDP_SECRET = 'interop-idp-secret-0123456789'
export const OWNER_PASSWORD = 'alice owns this wallet'
export const FINISH_URI = 'http://127.0.0.1:9/interop-finish'

// ---------------------------------------------------------------------------
// Inputs

export function opdBin() {
  const bin = process.env.OPD_BIN
  if (!bin) {
    throw new Error(
      'OPD_BIN is not set: point it at the opd binary (cargo build -p opd; OPD_BIN=$PWD/target/debug/opd)'
    )
  }
  if (!fs.existsSync(bin)) throw new Error(`OPD_BIN=${bin} does not exist`)
  try {
    fs.accessSync(bin, fs.constants.X_OK)
  } catch {
    throw new Error(`OPD_BIN=${bin} is not executable`)
  }
  return bin
}

export const SPEC_FILES = {
  resource: 'resource-server.yaml',
  walletAddress: 'wallet-address-server.yaml',
  auth: 'auth-server.yaml'
}

export function specDir() {
  const dir = process.env.OPD_SPEC_DIR || path.resolve(repoRoot, 'spec')
  for (const file of Object.values(SPEC_FILES)) {
    if (!fs.existsSync(path.join(dir, file))) {
      throw new Error(
        `Open Payments spec ${file} not found in ${dir}: set OPD_SPEC_DIR to the directory holding the YAML specs`
      )
    }
  }
  return dir
}

// ---------------------------------------------------------------------------
// Spec validation of raw responses

let specsPromise
export function loadSpecs() {
  if (!specsPromise) {
    const dir = specDir()
    specsPromise = (async () => {
      const out = {}
      for (const [kind, file] of Object.entries(SPEC_FILES)) {
        out[kind] = await createOpenAPI(path.join(dir, file))
      }
      return out
    })()
  }
  return specsPromise
}

const validatorCache = new Map()

/**
 * Validates one response against the spec operation `kind` / `path` /
 * `method` (e.g. 'resource', '/quotes', 'post'). Throws an Error naming every
 * violation; returns true otherwise.
 */
export async function validateAgainstSpec({ kind, path: specPath, method, status, body }) {
  const specs = await loadSpecs()
  const key = `${kind} ${method} ${specPath}`
  let validate = validatorCache.get(key)
  if (!validate) {
    validate = specs[kind].createResponseValidator({ path: specPath, method: method.toLowerCase() })
    validatorCache.set(key, validate)
  }
  // A response the spec declares without `content` (the wallet address
  // server's 404s) describes no body; openapi-response-validator would
  // demand none at all, while opd sends its JSON error object there too.
  // Only the status is checked then.
  const declared = specs[kind].paths[specPath]?.[method.toLowerCase()]?.responses?.[String(status)]
  const checkedBody = declared && !declared.content ? undefined : body
  try {
    validate({ status, body: checkedBody })
  } catch (err) {
    const errors = Array.isArray(err?.errors) ? err.errors.map((e) => e.message) : [String(err)]
    throw new Error(
      `${method.toUpperCase()} ${specPath} → ${status} does not match ${SPEC_FILES[kind]}: ${errors.join('; ')}\n  body: ${JSON.stringify(body)}`
    )
  }
  return true
}

// ---------------------------------------------------------------------------
// Ports, process

const helpCache = new Map()
/** Whether `opd serve` of this binary has the flag (from `opd serve --help`). */
export function opdServeHasFlag(flag) {
  const bin = opdBin()
  if (!helpCache.has(bin)) {
    const out = spawnSync(bin, ['serve', '--help'], { encoding: 'utf8', timeout: 30_000 })
    helpCache.set(bin, `${out.stdout || ''}${out.stderr || ''}`)
  }
  return new RegExp(`(^|\\s)${flag}\\b`, 'm').test(helpCache.get(bin))
}

/** The ILP address opd is started with when the ILP listener is on. */
export const OPD_ILP_ADDRESS = 'test.opd'

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** The fetch of the platform, never the recording wrapper. */
export const rawFetch = globalThis.fetch.bind(globalThis)

/**
 * Starts `opd serve` on free loopback ports.
 *   ilp        true: the ILP-over-HTTP listener is required (fails when the
 *              binary has no --ilp-listen). Otherwise it is put on a free port
 *              whenever the binary has the flag, so no test run binds the
 *              default port.
 *   extraArgs  more arguments for `opd serve`
 *   ilpAddress its --ilp-address when ilp is on (default OPD_ILP_ADDRESS)
 *   authPath   a path for --auth-public-url ('/gnap'), default none
 */
export async function startOpd({ ilp = false, extraArgs = [], ilpAddress = OPD_ILP_ADDRESS, authPath = '' } = {}) {
  const bin = opdBin()
  const hasIlpListen = opdServeHasFlag('--ilp-listen')
  if (ilp && !hasIlpListen) {
    throw new Error(
      `${bin} has no --ilp-listen flag (see \`opd serve --help\`): this opd has no ILP-over-HTTP listener, which the ILP interop tests need`
    )
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'opd-interop-'))
  const ports = new Set()
  while (ports.size < 4) ports.add(await freePort())
  const [p1, p2, p3, p4] = [...ports]
  const publicUrl = `http://127.0.0.1:${p1}`
  const authUrl = `http://127.0.0.1:${p2}${authPath}`
  // The published authServer: the origin with its slash, a path without.
  const grantEndpoint = authPath ? authUrl : `${authUrl}/`
  const adminUrl = `http://127.0.0.1:${p3}`
  const ilpUrl = hasIlpListen ? `http://127.0.0.1:${p4}/ilp` : undefined
  const args = [
    'serve',
    `--listen=127.0.0.1:${p1}`,
    `--auth-listen=127.0.0.1:${p2}`,
    `--admin-listen=127.0.0.1:${p3}`,
    `--public-url=${publicUrl}`,
    `--auth-public-url=${authUrl}`,
    `--admin-token=${ADMIN_TOKEN}`,
    `--idp-secret=${IDP_SECRET}`,
    `--data-dir=${dataDir}`,
    `--database-url=sqlite://${dataDir}/opd.sqlite?mode=rwc`
  ]
  if (hasIlpListen) args.push(`--ilp-listen=127.0.0.1:${p4}`)
  if (ilp) args.push(`--ilp-address=${ilpAddress}`)
  args.push(...extraArgs)
  const env = { ...process.env, OPD_LOG: 'warn' }
  // Settings of the machine must not leak into the server under test.
  for (const k of Object.keys(env)) {
    if (k.startsWith('OPD_') && k !== 'OPD_LOG') delete env[k]
  }
  const child = spawn(bin, args, { cwd: dataDir, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  const keep = (chunk) => {
    output += chunk.toString()
    if (output.length > 200_000) output = output.slice(-100_000)
  }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  let exited = null
  // Never leave a server behind, even when the test process dies early.
  const killOnExit = () => {
    if (!exited) child.kill('SIGKILL')
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
  process.on('exit', killOnExit)
  const exitPromise = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      exited = { code, signal }
      resolve(exited)
    })
  })

  const opd = {
    publicUrl,
    /** The authorization server's URL, without a trailing slash. */
    authUrl,
    grantEndpoint,
    adminUrl,
    /** The ILP-over-HTTP endpoint (any path is accepted), when opd has one. */
    ilpUrl,
    ilpAddress: ilp ? ilpAddress : undefined,
    dataDir,
    child,
    output: () => output,
    async stop() {
      if (!exited) {
        child.kill('SIGTERM')
        const t = setTimeout(() => exited || child.kill('SIGKILL'), 5000)
        await exitPromise
        clearTimeout(t)
      }
      process.off('exit', killOnExit)
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }

  const deadline = Date.now() + 30_000
  for (;;) {
    if (exited) {
      process.off('exit', killOnExit)
      fs.rmSync(dataDir, { recursive: true, force: true })
      throw new Error(
        `opd exited during start (${JSON.stringify(exited)}): ${bin} ${args.join(' ')}\n${output}`
      )
    }
    try {
      const res = await rawFetch(`${publicUrl}/healthz`)
      await res.arrayBuffer()
      if (res.status === 200) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await opd.stop()
      throw new Error(`opd did not answer GET /healthz with 200 within 30 s\n${output}`)
    }
    await sleep(100)
  }
  return opd
}

// ---------------------------------------------------------------------------
// Webhooks: a local receiver opd POSTs its events to (--webhook-url). Each
// delivery's Opd-Signature (t=<ms>, v1=<hex HMAC-SHA256 of "<t>.<body>">)
// is checked with the secret opd was given.

export async function startWebhookReceiver({ secret = `interop-webhook-secret-${crypto.randomUUID()}` } = {}) {
  const events = []
  const waiters = new Set()
  const server = http.createServer((req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8')
      const problems = []
      let body
      try {
        body = JSON.parse(raw)
      } catch {
        problems.push(`body is not JSON: ${raw.slice(0, 200)}`)
      }
      if (req.method !== 'POST') problems.push(`method ${req.method}, not POST`)
      if (!/^application\/json\b/.test(req.headers['content-type'] || '')) problems.push(`content-type ${req.headers['content-type']}`)
      const sig = req.headers['opd-signature'] || ''
      const m = /^t=(\d+), v1=([0-9a-f]{64})$/.exec(sig)
      if (!m) {
        problems.push(`Opd-Signature missing or malformed: ${JSON.stringify(sig)}`)
      } else {
        const expected = crypto.createHmac('sha256', secret).update(`${m[1]}.`).update(Buffer.concat(chunks)).digest('hex')
        if (!crypto.timingSafeEqual(Buffer.from(expected), Buffer.from(m[2]))) problems.push('Opd-Signature does not verify')
      }
      for (const k of ['id', 'type', 'data', 'createdAt']) if (body && !(k in body)) problems.push(`no ${k} in the event`)
      const event = { ...(body || {}), raw, problems, receivedAt: Date.now() }
      events.push(event)
      res.writeHead(204).end()
      for (const w of [...waiters]) w()
    })
  })
  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const { port } = server.address()
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    secret,
    events,
    /** Resolves with the first event matching `pred` (already received or to come). */
    waitFor(pred, { timeoutMs = 10_000, what = 'a matching webhook event' } = {}) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = events.find(pred)
          if (!hit) return false
          clearTimeout(timer)
          waiters.delete(check)
          resolve(hit)
          return true
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`no ${what} within ${timeoutMs} ms; received: ${JSON.stringify(events.map((e) => ({ type: e.type, id: e.data?.id })))}`))
        }, timeoutMs)
        if (!check()) waiters.add(check)
      })
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.()
        server.close(() => resolve())
      })
  }
}

// ---------------------------------------------------------------------------
// Admin API

export function adminClient(adminUrl) {
  return async function admin(method, p, body) {
    const res = await rawFetch(`${adminUrl}${p}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' })
      },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    const text = await res.text()
    let json
    try {
      json = text ? JSON.parse(text) : undefined
    } catch {
      json = text
    }
    return { status: res.status, headers: res.headers, body: json }
  }
}

export async function adminOk(admin, method, p, body, expected) {
  const res = await admin(method, p, body)
  const ok = expected ? [expected].flat().includes(res.status) : res.status < 300
  if (!ok) {
    throw new Error(`admin ${method} ${p} answered ${res.status}: ${JSON.stringify(res.body)}`)
  }
  return res.body
}

// ---------------------------------------------------------------------------
// Keys

export function newEd25519Key(kid) {
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ed25519')
  const { x } = publicKey.export({ format: 'jwk' })
  return { kid, privateKey, jwk: { kid, kty: 'OKP', crv: 'Ed25519', x } }
}

// ---------------------------------------------------------------------------
// Recording every response the official client receives, so that each one
// (errors included) is checked against the spec of its operation.

const RS_ROUTES = [
  [/^\/incoming-payments$/, '/incoming-payments'],
  [/^\/incoming-payments\/[^/]+$/, '/incoming-payments/{id}'],
  [/^\/incoming-payments\/[^/]+\/complete$/, '/incoming-payments/{id}/complete'],
  [/^\/quotes$/, '/quotes'],
  [/^\/quotes\/[^/]+$/, '/quotes/{id}'],
  [/^\/outgoing-payments$/, '/outgoing-payments'],
  [/^\/outgoing-payments\/[^/]+$/, '/outgoing-payments/{id}'],
  [/^\/outgoing-payment-grant$/, '/outgoing-payment-grant']
]
const AS_ROUTES = [
  [/^\/$/, '/'],
  [/^\/continue\/[^/]+$/, '/continue/{id}'],
  [/^\/token\/[^/]+$/, '/token/{id}']
]

/** Which spec operation a request to `url` belongs to, or null. */
export function specOperation(world, method, url) {
  const u = new URL(url)
  // Stand-ins for opd (the validator self-test) count as the resource server.
  const origin = world.aliases.has(u.origin) ? new URL(world.aliases.get(u.origin)).origin : u.origin
  const m = method.toLowerCase()
  const auth = new URL(world.authUrl)
  if (origin === auth.origin) {
    // Below the authorization server's path ('' at the origin root).
    const base = auth.pathname.replace(/\/$/, '')
    if (u.pathname !== base && !u.pathname.startsWith(`${base}/`)) return null
    const rest = u.pathname.slice(base.length) || '/'
    for (const [re, p] of AS_ROUTES) if (re.test(rest)) return { kind: 'auth', path: p, method: m }
    return null
  }
  // The world's base: the server's public URL, or its tenant's (a host of
  // its own, or a path prefix).
  const base = new URL(world.base)
  if (origin === base.origin) {
    const prefix = base.pathname.replace(/\/$/, '')
    if (prefix && u.pathname !== prefix && !u.pathname.startsWith(`${prefix}/`)) return null
    const rest = u.pathname.slice(prefix.length) || '/'
    for (const [re, p] of RS_ROUTES) if (re.test(rest)) return { kind: 'resource', path: p, method: m }
    if (/^\/[^/]+\/jwks\.json$/.test(rest)) return { kind: 'walletAddress', path: '/jwks.json', method: m }
    if (/^\/[^/]+\/did\.json$/.test(rest)) return { kind: 'walletAddress', path: '/did.json', method: m }
    if (/^\/[^/]+$/.test(rest)) return { kind: 'walletAddress', path: '/', method: m }
  }
  return null
}

function installRecorder(world) {
  const records = []
  const pending = new Set()
  const wrapped = async (input, init) => {
    const req = input instanceof Request ? input : new Request(input, init)
    const res = await rawFetch(input, init)
    const record = {
      method: req.method,
      url: req.url,
      status: res.status,
      headers: res.headers,
      body: undefined,
      problems: []
    }
    records.push(record)
    const check = (async () => {
      const text = await res.clone().text()
      if (text) {
        try {
          record.body = JSON.parse(text)
        } catch {
          record.body = text
          record.problems.push(`body is not JSON: ${text.slice(0, 200)}`)
        }
        const ct = res.headers.get('content-type') || ''
        if (!/^application\/json\b/.test(ct)) record.problems.push(`content-type is ${JSON.stringify(ct)}, not application/json`)
      }
      const op = specOperation(world, req.method, req.url)
      if (!op) {
        record.problems.push('no operation of the Open Payments specs matches this request')
        return
      }
      if (res.status === 401 && op.kind === 'resource') {
        const wa = res.headers.get('www-authenticate') || ''
        if (!/^GNAP as_uri=\S+/.test(wa)) record.problems.push(`401 without WWW-Authenticate: GNAP as_uri=...: ${JSON.stringify(wa)}`)
      }
      try {
        await validateAgainstSpec({ ...op, status: res.status, body: record.body })
      } catch (err) {
        record.problems.push(err.message)
      }
    })()
    pending.add(check)
    check.finally(() => pending.delete(check))
    return res
  }
  globalThis.fetch = wrapped
  return {
    records,
    /** Waits for the body reads and checks in flight. */
    async settle() {
      await Promise.all([...pending])
    },
    /** Waits for the checks in flight, then fails naming each bad response since `from`. */
    async assertConforming(from = 0) {
      await Promise.all([...pending])
      const bad = records.slice(from).filter((r) => r.problems.length)
      if (bad.length) {
        throw new Error(
          'responses that break the Open Payments specs:\n' +
            bad.map((r) => `  ${r.method} ${r.url} → ${r.status}: ${r.problems.join(' | ')}`).join('\n')
        )
      }
    },
    mark: () => records.length,
    /** Removes and returns the records since `from` (after their checks ran). */
    async take(from) {
      await Promise.all([...pending])
      return records.splice(from)
    },
    uninstall() {
      if (globalThis.fetch === wrapped) globalThis.fetch = rawFetch
    }
  }
}

// ---------------------------------------------------------------------------
// The world: a server with alice, bob and the client wallet address shop.

/**
 * Makes the tenant `id` at `publicUrl` through the admin API (the
 * operator's token); returns its admin token.
 */
export async function createTenant(admin, id, publicUrl, authServerUrl) {
  const body = { id, publicName: `Tenant ${id}`, publicUrl, ...(authServerUrl ? { authServerUrl } : {}) }
  const made = await adminOk(admin, 'POST', '/tenants', body, 201)
  return made.adminToken
}

/**
 * A server with alice, bob and the client wallet address shop.
 *   opd     an opd already started (startOpd) to use instead of a new one;
 *           it is not stopped with the world
 *   tenant  { id, url(opd), authServer?(opd) }: make the tenant `id` at
 *           that public URL (and with that authorization server of its
 *           own) and the wallet addresses in it (world.base is then its URL)
 */
export async function startWorld({ ilp = false, webhooks = false, extraArgs = [], ilpAddress, authPath, opd: shared, tenant } = {}) {
  await loadSpecs() // fails loudly when the specs are missing, before anything starts
  const hooks = webhooks ? await startWebhookReceiver() : undefined
  let opd = shared
  try {
    opd ??= await startOpd({
      ilp,
      ilpAddress,
      authPath,
      extraArgs: [...(hooks ? [`--webhook-url=${hooks.url}`, `--webhook-secret=${hooks.secret}`] : []), ...extraArgs]
    })
  } catch (err) {
    await hooks?.close()
    throw err
  }
  const stopOpd = () => (shared ? undefined : opd.stop())
  try {
    const admin = adminClient(opd.adminUrl)
    let base = opd.publicUrl
    let ref = (p) => p
    if (tenant) {
      base = tenant.url(opd)
      await createTenant(admin, tenant.id, base, tenant.authServer?.(opd))
      ref = (p) => `${tenant.id}:${p}`
    }
    // alice pays, bob is paid, shop is the client (its key signs every request).
    for (const [p, name] of [
      ['alice', 'Alice'],
      ['bob', 'Bob'],
      ['shop', 'Shop']
    ]) {
      const body = { path: p, assetCode: 'USD', assetScale: 2, publicName: name, ...(tenant ? { tenant: tenant.id } : {}) }
      await adminOk(admin, 'POST', '/wallet-addresses', body, 201)
    }
    const shopKey = newEd25519Key(`shop-key-${crypto.randomUUID()}`)
    await adminOk(admin, 'POST', `/wallet-addresses/${ref('shop')}/keys`, { jwk: shopKey.jwk }, [200, 201])
    await adminOk(admin, 'POST', `/wallet-addresses/${ref('alice')}/deposits`, { amount: '1000000', idempotencyKey: `seed-${ref('alice')}` }, [200, 201])
    await adminOk(admin, 'PUT', `/wallet-addresses/${ref('alice')}/owner-password`, { password: OWNER_PASSWORD }, [200, 204])

    const urls = {
      alice: `${base}/alice`,
      bob: `${base}/bob`,
      shop: `${base}/shop`
    }
    // aliases: origins of stand-ins that count as opd's Open Payments origin.
    // A tenant with an authorization server of its own (at the root of a
    // host of its own), or the server's, shared.
    const own = tenant?.authServer?.(opd)
    const authUrl = own ? own.replace(/\/$/, '') : opd.authUrl
    const grantEndpoint = own ?? opd.grantEndpoint
    const world = { opd, base, authUrl, grantEndpoint, admin, urls, shopKey, aliases: new Map(), webhooks: hooks }
    world.recorder = installRecorder(world)
    world.client = await createAuthenticatedClient({
      walletAddressUrl: urls.shop,
      keyId: shopKey.kid,
      privateKey: shopKey.privateKey,
      validateResponses: true,
      useHttp: true
    })
    world.anon = await createUnauthenticatedClient({ validateResponses: true, useHttp: true })
    world.stop = async () => {
      world.recorder.uninstall()
      await stopOpd()
      await hooks?.close()
    }
    return world
  } catch (err) {
    await stopOpd()
    await hooks?.close()
    throw err
  }
}

/** A client signing with another key (e.g. one opd does not know). */
export function clientWithKey(world, key, walletAddressUrl = world.urls.shop) {
  return createAuthenticatedClient({
    walletAddressUrl,
    keyId: key.kid,
    privateKey: key.privateKey,
    validateResponses: true,
    useHttp: true
  })
}

// ---------------------------------------------------------------------------
// Grants

export async function nonInteractiveGrant(world, authServer, access, client = world.client) {
  const grant = await client.grant.request({ url: authServer }, { access_token: { access } })
  if (isPendingGrant(grant)) throw new Error(`grant for ${JSON.stringify(access)} unexpectedly needs interaction`)
  return grant
}

export async function requestInteractiveGrant(world, authServer, access, client = world.client) {
  const clientNonce = crypto.randomUUID()
  const grant = await client.grant.request(
    { url: authServer },
    {
      access_token: { access },
      interact: { start: ['redirect'], finish: { method: 'redirect', uri: FINISH_URI, nonce: clientNonce } }
    }
  )
  if (!isPendingGrant(grant)) throw new Error(`grant for ${JSON.stringify(access)} should need interaction: ${JSON.stringify(grant)}`)
  return { grant, clientNonce }
}

/** Base64 SHA-256 of the four lines, as client users compute the finish hash. */
export function finishHash(clientNonce, asNonce, interactRef, grantEndpoint) {
  return crypto.createHash('sha256').update(`${clientNonce}\n${asNonce}\n${interactRef}\n${grantEndpoint}`).digest('base64')
}

/**
 * Plays the browser: opens interact.redirect without following redirects,
 * loads the consent page, submits the form with the owner's password and
 * returns where the server sends the browser at the end.
 */
export async function approveInBrowser(redirectUrl, { password = OWNER_PASSWORD, decision = 'approve' } = {}) {
  const steps = []
  const start = await rawFetch(redirectUrl, { redirect: 'manual' })
  await start.arrayBuffer()
  steps.push({ url: redirectUrl, status: start.status, location: start.headers.get('location') })
  if (start.status !== 303) throw new Error(`GET interact.redirect answered ${start.status}, expected 303: ${JSON.stringify(steps)}`)
  const consentUrl = new URL(start.headers.get('location'), redirectUrl).href
  const page = await rawFetch(consentUrl, { redirect: 'manual' })
  const html = await page.text()
  // The form's token is bound to this cookie, as a browser keeps it.
  const cookie = (page.headers.get('set-cookie') || '').split(';')[0]
  steps.push({ url: consentUrl, status: page.status })
  if (page.status !== 200) throw new Error(`GET consent page ${consentUrl} answered ${page.status}: ${html.slice(0, 500)}`)
  if (!/text\/html/.test(page.headers.get('content-type') || '')) {
    throw new Error(`consent page content-type is ${page.headers.get('content-type')}`)
  }
  const form = html.match(/<form\b[^>]*>/i)
  if (!form) throw new Error(`no <form> on the consent page: ${html.slice(0, 500)}`)
  const action = form[0].match(/\baction="([^"]*)"/i)
  const method = form[0].match(/\bmethod="([^"]*)"/i)
  if (!action) throw new Error(`the consent form has no action: ${form[0]}`)
  if (!method || method[1].toLowerCase() !== 'post') throw new Error(`the consent form is not method="post": ${form[0]}`)
  const actionUrl = new URL(action[1].replace(/&amp;/g, '&'), consentUrl).href
  for (const field of ['password', 'decision', 'csrf']) {
    if (!new RegExp(`name="${field}"`).test(html)) throw new Error(`the consent form has no ${field} field`)
  }
  const csrf = html.match(/name="csrf" value="([^"]*)"/)?.[1] ?? ''
  const post = await rawFetch(actionUrl, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams({ csrf, password, decision }).toString()
  })
  const postBody = await post.text()
  const location = post.headers.get('location')
  steps.push({ url: actionUrl, status: post.status, location })
  return { status: post.status, location, body: postBody, html, actionUrl, consentUrl, steps }
}

/**
 * The whole interactive grant: request, approve in the "browser", check the
 * finish redirect and hash, continue. Returns the finalized grant.
 */
export async function interactiveGrant(world, authServer, access, client = world.client) {
  const { grant, clientNonce } = await requestInteractiveGrant(world, authServer, access, client)
  const res = await approveInBrowser(grant.interact.redirect)
  if (res.status !== 303 || !res.location) {
    throw new Error(`approving on the consent page answered ${res.status} (expected 303 to the finish URI): ${res.body.slice(0, 500)}`)
  }
  const finish = new URL(res.location)
  const interactRef = finish.searchParams.get('interact_ref')
  const hash = finish.searchParams.get('hash')
  if (!interactRef || !hash) throw new Error(`finish redirect without interact_ref and hash: ${res.location}`)
  const expected = finishHash(clientNonce, grant.interact.finish, interactRef, authServer)
  if (hash !== expected) throw new Error(`finish hash ${hash} is not base64(sha256(nonce\\nfinish\\nref\\n${authServer})) = ${expected}`)
  const finalized = await client.grant.continue(
    { url: grant.continue.uri, accessToken: grant.continue.access_token.value },
    { interact_ref: interactRef }
  )
  return { pending: grant, clientNonce, interactRef, hash, finishLocation: res.location, grant: finalized }
}

// ---------------------------------------------------------------------------
// Assertions on client errors

/** Runs `fn`, expects an OpenPaymentsClientError, returns it. */
export async function clientError(fn) {
  try {
    const value = await fn()
    throw Object.assign(new Error(`expected an OpenPaymentsClientError, got success: ${JSON.stringify(value)}`), { unexpectedSuccess: true })
  } catch (err) {
    if (err.unexpectedSuccess) throw err
    if (err?.name !== 'OpenPaymentsClientError') throw err
    return err
  }
}

export function describeError(err) {
  return JSON.stringify({
    message: err.message,
    status: err.status,
    code: err.code,
    description: err.description,
    details: err.details,
    validationErrors: err.validationErrors
  })
}

/** Polls `fn` until `done(value)` or the time is up; returns the last value. */
export async function poll(fn, done, { timeoutMs = 10_000, intervalMs = 100 } = {}) {
  const deadline = Date.now() + timeoutMs
  let value
  for (;;) {
    value = await fn()
    if (done(value) || Date.now() > deadline) return value
    await sleep(intervalMs)
  }
}

export function usd(value) {
  return { value: String(value), assetCode: 'USD', assetScale: 2 }
}

// ---------------------------------------------------------------------------
// Per test file: one server, and after each test the check that every
// response it received conforms to the specs.

export function useWorld(options = {}) {
  const ctx = {}
  let mark = 0
  before(async () => {
    // A shared opd may be given as a function, started by an outer hook.
    const opd = typeof options.opd === 'function' ? await options.opd() : options.opd
    Object.assign(ctx, await startWorld({ ...options, opd }))
  })
  after(async () => {
    if (!ctx.stop) return
    await ctx.stop()
    // opd runs with OPD_LOG=warn: whatever it logged is worth seeing.
    const log = ctx.opd.output().trim()
    if (log) process.stderr.write(`--- opd log (${ctx.opd.dataDir}) ---\n${log}\n--- end of opd log ---\n`)
  })
  beforeEach(() => {
    mark = ctx.recorder ? ctx.recorder.mark() : 0
  })
  afterEach(async () => {
    if (ctx.recorder) await ctx.recorder.assertConforming(mark)
  })
  return ctx
}

/** Memoizes an async fixture: the first caller runs it, later ones share its result or its failure. */
export function once(label, fn) {
  let p
  return () => {
    if (!p) {
      p = fn().catch((err) => {
        throw new Error(`fixture "${label}" failed: ${err.message}${err.name === 'OpenPaymentsClientError' ? ' ' + describeError(err) : ''}`, { cause: err })
      })
    }
    return p
  }
}

/**
 * Expects the official client to raise an OpenPaymentsClientError, validates
 * the HTTP response behind it explicitly against the spec operation it
 * belongs to, and checks the error predicate:
 *   { status, code, description (exact), descriptionIncludes, details (subset) }
 */
export async function expectClientError(world, fn, expected) {
  const from = world.recorder.mark()
  const err = await clientError(fn)
  await world.recorder.settle()
  const responses = world.recorder.records.slice(from)
  const res = responses.at(-1)
  assert.ok(res, `the failing call left no HTTP response: ${describeError(err)}`)
  const op = specOperation(world, res.method, res.url)
  assert.ok(op, `${res.method} ${res.url} is no operation of the specs`)
  await validateAgainstSpec({ ...op, status: res.status, body: res.body })
  const got = describeError(err)
  assert.equal(err.status, res.status, `client error status vs HTTP status: ${got}`)
  if (expected.status !== undefined) assert.equal(err.status, expected.status, `status: ${got}`)
  if (expected.code !== undefined) assert.equal(err.code, expected.code, `code: ${got}`)
  if (expected.description !== undefined) assert.equal(err.description, expected.description, `description: ${got}`)
  if (expected.descriptionIncludes !== undefined) {
    assert.ok(
      typeof err.description === 'string' && err.description.includes(expected.descriptionIncludes),
      `description should contain ${JSON.stringify(expected.descriptionIncludes)}: ${got}`
    )
  }
  if (expected.details !== undefined) {
    assert.ok(err.details && typeof err.details === 'object', `details missing: ${got}`)
    for (const [k, v] of Object.entries(expected.details)) assert.deepEqual(err.details[k], v, `details.${k}: ${got}`)
  }
  assert.equal(res.body?.error?.code, err.code, 'the client exposes error.code of the body')
  if (res.status === 401 && op.kind === 'resource') {
    const header = res.headers.get('www-authenticate')
    // The challenge names the grant endpoint, which opd publishes as `authServer`.
    assert.equal(header, `GNAP as_uri=${world.grantEndpoint}`, 'WWW-Authenticate of a resource server 401')
  }
  return { err, response: res }
}
