// A minimal ILP-over-HTTP plugin built on fetch, for the Node ILP senders
// (@interledger/pay, ilp-protocol-stream). It speaks the synchronous
// ILP-over-HTTP binding Rafiki uses: each Prepare is one
//
//   POST <endpoint>
//   Authorization: Bearer <token>
//   Content-Type: application/octet-stream
//   <OER ILP Prepare>
//
// answered 200 with the OER Fulfill or Reject. ilp-plugin-http is not used:
// it sends `application/ilp+octet-stream`, which Rafiki answers with 400.
//
// The plugin keeps a log of every exchange (destination, amount, reply type
// and code) so tests can assert what the receiver answered, e.g. that probes
// got F99 or that an over-max packet got F08.

import { deserializeIlpPrepare, deserializeIlpReply, isFulfill } from 'ilp-packet'

// The platform's fetch as it was when this module loaded: the harness later
// replaces globalThis.fetch with a wrapper that checks every response
// against the Open Payments specs, which ILP-over-HTTP is not part of.
const platformFetch = globalThis.fetch.bind(globalThis)

/** The ILP-over-HTTP request of one packet; answers the raw fetch Response. */
export function postIlp(endpoint, token, body, { contentType = 'application/octet-stream', signal, fetch = platformFetch } = {}) {
  const headers = { 'content-type': contentType, accept: 'application/octet-stream' }
  if (token !== undefined && token !== null) headers.authorization = `Bearer ${token}`
  return fetch(endpoint, { method: 'POST', headers, body, signal })
}

export class HttpIlpPlugin {
  /**
   * @param {object} opts
   * @param {string} opts.endpoint  the peer's ILP-over-HTTP URL
   * @param {string} opts.token     our incoming token at that peer
   * @param {number} [opts.timeoutMs] per request (default 30 s, as Rafiki's client)
   * @param {typeof fetch} [opts.fetch] default: the platform's fetch
   */
  constructor({ endpoint, token, timeoutMs = 30_000, fetch = platformFetch }) {
    if (!endpoint) throw new Error('HttpIlpPlugin: endpoint is required')
    this.endpoint = endpoint
    this.token = token
    this.timeoutMs = timeoutMs
    this.fetch = fetch
    this.connected = false
    this.dataHandler = undefined
    this.moneyHandler = undefined
    /** Every exchange: { destination, amount, reply: 'fulfill'|'reject'|'error', code?, data?, status? }. */
    this.exchanges = []
    /** Transport failures (non-200, network errors); each also made sendData throw. */
    this.httpErrors = []
    this.inFlight = new Set()
  }

  /** Waits until no request is in flight (senders fire a closing packet without awaiting it). */
  async idle() {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight])
  }

  async connect() {
    this.connected = true
  }

  async disconnect() {
    this.connected = false
  }

  isConnected() {
    return this.connected
  }

  /** Sends one serialized Prepare, resolves with the serialized Fulfill or Reject. */
  sendData(data) {
    const p = this.send(data)
    this.inFlight.add(p)
    p.then(
      () => this.inFlight.delete(p),
      () => this.inFlight.delete(p)
    )
    return p
  }

  async send(data) {
    const buf = Buffer.from(data)
    let destination
    let amount
    try {
      const prepare = deserializeIlpPrepare(buf)
      destination = prepare.destination
      amount = prepare.amount
    } catch {
      // not a Prepare: sent as is (tests of garbage bodies use postIlp instead)
    }
    const entry = { destination, amount }
    this.exchanges.push(entry)
    const signal = AbortSignal.timeout(this.timeoutMs)
    let res
    try {
      res = await postIlp(this.endpoint, this.token, buf, { signal, fetch: this.fetch })
    } catch (err) {
      Object.assign(entry, { reply: 'error', error: String(err) })
      this.httpErrors.push({ ...entry })
      throw new Error(`ILP-over-HTTP POST ${this.endpoint} failed: ${err.message}`, { cause: err })
    }
    const body = Buffer.from(await res.arrayBuffer())
    if (res.status !== 200) {
      Object.assign(entry, { reply: 'error', status: res.status, error: body.toString('utf8').slice(0, 500) })
      this.httpErrors.push({ ...entry })
      throw new Error(`ILP-over-HTTP POST ${this.endpoint} answered ${res.status}: ${entry.error}`)
    }
    try {
      const reply = deserializeIlpReply(body)
      if (isFulfill(reply)) {
        entry.reply = 'fulfill'
      } else {
        Object.assign(entry, { reply: 'reject', code: reply.code, message: reply.message, triggeredBy: reply.triggeredBy, data: reply.data })
      }
    } catch (err) {
      Object.assign(entry, { reply: 'error', status: res.status, error: `unparsable reply: ${err.message}` })
      this.httpErrors.push({ ...entry })
      throw new Error(`ILP-over-HTTP POST ${this.endpoint}: the 200 body is no ILP reply: ${body.toString('hex').slice(0, 200)}`)
    }
    return body
  }

  /** Settlement is off-ledger (prefunded liquidity): nothing to send. */
  async sendMoney(_amount) {}

  /**
   * ILP-over-HTTP as used here is one-way (we only send): the handler is
   * kept so ilp-protocol-stream can register and deregister it.
   */
  registerDataHandler(handler) {
    this.dataHandler = handler
  }

  deregisterDataHandler() {
    this.dataHandler = undefined
  }

  registerMoneyHandler(handler) {
    this.moneyHandler = handler
  }

  deregisterMoneyHandler() {
    this.moneyHandler = undefined
  }

  /** Reject codes seen since exchange `from`, in order. */
  rejectCodes(from = 0) {
    return this.exchanges.slice(from).filter((e) => e.reply === 'reject').map((e) => e.code)
  }

  /** Sum of the amounts of fulfilled Prepares since exchange `from`. */
  fulfilledAmount(from = 0) {
    return this.exchanges
      .slice(from)
      .filter((e) => e.reply === 'fulfill' && e.destination !== 'peer.config')
      .reduce((sum, e) => sum + BigInt(e.amount), 0n)
  }
}

/** The two amounts an F08 Reject carries: receivedAmount, maximumAmount (each a uint64). */
export function decodeAmountTooLarge(data) {
  const buf = Buffer.from(data)
  if (buf.length !== 16) throw new Error(`F08 data is ${buf.length} bytes, not 16: ${buf.toString('hex')}`)
  return { receivedAmount: buf.readBigUInt64BE(0), maximumAmount: buf.readBigUInt64BE(8) }
}
