// Headless Chromium for the browser tests (the consent page, the operator
// dashboard), driven by playwright-core with the machine's own Chromium:
// no browser is downloaded. A machine without /usr/bin/chromium fails the
// tests with that message (`apt-get install chromium`; .ci/run does it).
//
//   OPD_CHROMIUM             another Chromium binary
//   OPD_UPDATE_SCREENSHOTS=1 write screenshots to docs/screenshots/ (to be
//                            committed); otherwise to a temporary directory

import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { chromium } from 'playwright-core'

const here = path.dirname(fileURLToPath(import.meta.url))
const repoRoot = path.resolve(here, '../../..')

export const CHROMIUM = process.env.OPD_CHROMIUM || '/usr/bin/chromium'

export const DESKTOP = { width: 1280, height: 900 }
export const PHONE = { width: 390, height: 844 }

/** Starts Chromium with a fresh profile; `close()` removes it. */
export async function launchBrowser() {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} not found: the browser tests need Debian's Chromium (apt-get install -y chromium), or OPD_CHROMIUM set to a Chromium binary`
    )
  }
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'opd-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: DESKTOP,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync'
    ]
  })
  return {
    context,
    async close() {
      await context.close()
      fs.rmSync(profile, { recursive: true, force: true })
    }
  }
}

// One fixed temporary directory, overwritten by each run, when not updating.
const screenshotDir = process.env.OPD_UPDATE_SCREENSHOTS === '1'
  ? path.join(repoRoot, 'docs', 'screenshots')
  : path.join(os.tmpdir(), 'opd-screenshots')

/** Screenshots of the page at desktop and phone width: `<name>-desktop.png`, `<name>-phone.png`. */
export async function screenshots(page, name) {
  fs.mkdirSync(screenshotDir, { recursive: true })
  const original = page.viewportSize()
  for (const [label, size] of [['desktop', DESKTOP], ['phone', PHONE]]) {
    await page.setViewportSize(size)
    await page.screenshot({ path: path.join(screenshotDir, `${name}-${label}.png`), fullPage: true })
  }
  if (original) await page.setViewportSize(original)
}
