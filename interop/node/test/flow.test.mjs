// The Open Payments flow (flow.mjs) against a plain opd: one wallet
// provider, its wallet addresses at the root of the public URL.

import { describe } from 'node:test'

import { flowTests } from './flow.mjs'
import { useWorld } from './harness.mjs'

describe('Open Payments flow with the official Node client', () => {
  flowTests(useWorld())
})
