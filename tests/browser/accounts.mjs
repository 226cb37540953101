// Accounts in a real browser (Debian's headless Chromium, playwright-core), against the
// `hearth` binary. Run by tests/suite/account_settings.rs:
//
//   node accounts.mjs --hearth PATH --work DIR --artifacts DIR [--timeout 120]
//
// David opens "New direct message", types "Jas" in the people picker: the suggestion from
// /autocompletable/users lists Jason; a click checks Jason (shown as a chosen chip, the other
// people hidden) and "Start" opens the direct room. In room 1 he adds a custom boost through the
// "New boost" form: the chip shows his initials, the text, and (to him only) a remove button,
// which removes it. His profile and the account page (the invite block with its QR code) are
// drawn with their boxes checked. Screenshots at 1280x900 and 390x844.
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { mkdirSync, createWriteStream } from "node:fs"
import { join } from "node:path"
import { chromium } from "playwright-core"

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
)
const CHROMIUM = "/usr/bin/chromium"
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]
const PASSWORD = "secret123456"
const timeout = Number(args.timeout ?? 120)
mkdirSync(args.artifacts, { recursive: true })
mkdirSync(args.work, { recursive: true })
const out = (...parts) => process.stdout.write(parts.join(" ") + "\n")
let server = null
let browser = null
const pageErrors = []
const foreign = []

async function fail(why) {
  out("FAIL", why)
  if (browser) await browser.close().catch(() => {})
  if (server) server.child.kill("SIGTERM")
  process.exit(1)
}
setTimeout(() => fail(`timeout after ${timeout}s`), timeout * 1000).unref()

function startHearth() {
  const log = createWriteStream(join(args.work, "hearth.log"), { flags: "a" })
  const env = { ...process.env, HEARTH_DATABASE: join(args.work, "hearth.sqlite3"), HEARTH_DATA_DIR: args.work, HEARTH_SEED_USERS: "20", HEARTH_LOGIN_RATE_LIMIT: "0", HEARTH_LOG_JSON: "true" }
  delete env.HEARTH_ASSETS_DIR
  const child = spawn(args.hearth, ["serve", "--bind", "127.0.0.1:0"], { cwd: args.work, env, stdio: ["ignore", "pipe", "pipe"] })
  child.stderr.pipe(log)
  const listening = new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on("line", (line) => {
      log.write(line + "\n")
      try {
        const entry = JSON.parse(line)
        if (entry.fields?.message === "Hearth is listening") resolve(entry.fields.address)
      } catch {}
    })
    child.once("exit", (code) => reject(new Error(`hearth exited with ${code}`)))
  })
  return { child, listening }
}

let base = null

async function newPage(who, viewport) {
  const context = await browser.newContext({ viewport })
  const page = await context.newPage()
  page.on("pageerror", (e) => pageErrors.push(`${who}: ${e.message}`))
  page.on("request", (r) => {
    const url = r.url()
    if (!url.startsWith(base) && !url.startsWith(base.replace("http:", "ws:")) && !url.startsWith("data:")) foreign.push(url)
  })
  await page.goto(`${base}/session/new`)
  await page.fill('input[name="email_address"]', "david@example.com")
  await page.fill('input[name="password"]', PASSWORD)
  await Promise.all([page.waitForURL(/\/rooms\/\d+$/), page.click('button[name="log_in"]')])
  return page
}

async function boxInView(page, selector, what) {
  const el = page.locator(selector).first()
  await el.waitFor({ state: "visible", timeout: 10000 }).catch(() => fail(`${what}: ${selector} not visible`))
  await el.scrollIntoViewIfNeeded()
  const box = await el.boundingBox()
  const vp = page.viewportSize()
  if (!box || box.width < 1 || box.height < 1 || box.x < 0 || box.x + box.width > vp.width + 1) {
    await fail(`${what}: box ${JSON.stringify(box)} outside ${JSON.stringify(vp)}`)
  }
  return box
}

try {
  browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS })
  server = startHearth()
  base = `http://${await server.listening}`
  for (const [tag, viewport] of [["desktop", { width: 1280, height: 900 }], ["mobile", { width: 390, height: 844 }]]) {
    const page = await newPage(`david-${tag}`, viewport)

    // The people picker.
    await page.goto(`${base}/rooms/directs/new`)
    await boxInView(page, "[data-people-query]", "picker input")
    const visibleBefore = await page.locator(".people-picker__person:visible").count()
    if (visibleBefore > 1) await fail(`the picker shows ${visibleBefore} people before any is chosen`)
    await page.fill("[data-people-query]", "Jas")
    await boxInView(page, ".people-picker__suggestion", "suggestion")
    const suggested = (await page.locator(".people-picker__suggestion").allTextContents()).join("|")
    if (!suggested.includes("Jason")) await fail(`suggestions: ${suggested}`)
    out("SUGGESTED", JSON.stringify(suggested))
    await page.screenshot({ path: join(args.artifacts, `accounts-picker-${tag}.png`) })
    await page.locator(".people-picker__suggestion", { hasText: "Jason" }).first().click()
    const checked = await page.locator('input[name="user_ids[]"][value="2"]').isChecked()
    if (!checked) await fail("Jason is not checked")
    await boxInView(page, '.people-picker__person:has(input[value="2"])', "chosen Jason")
    out("PICKED Jason")
    await Promise.all([page.waitForURL(/\/rooms\/\d+$/), page.click('#room_form button[type="submit"]')])
    out("DIRECT-ROOM", page.url())

    // A custom boost on the newest message of room 1, and its removal.
    await page.goto(`${base}/rooms/1`)
    const messageId = await page.locator(".message[data-message-id]").last().getAttribute("data-message-id")
    const content = tag === "desktop" ? "nice one!" : "wow"
    await page.goto(`${base}/messages/${messageId}/boosts/new`)
    await page.fill('input[name="boost[content]"]', content)
    await Promise.all([page.waitForURL(/\/rooms\/1$/), page.click('.boost-new__form button[type="submit"]')])
    const chip = `.message[data-message-id="${messageId}"] .boost:has-text("${content}")`
    await boxInView(page, chip, "boost chip")
    await boxInView(page, `${chip} .boost__avatar`, "booster avatar")
    await boxInView(page, `${chip} .boost__delete-button`, "own boost's remove button")
    await page.screenshot({ path: join(args.artifacts, `accounts-boost-${tag}.png`) })
    await page.locator(`${chip} .boost__delete-button`).click()
    await page.locator(chip).waitFor({ state: "detached", timeout: 10000 }).catch(() => fail("the boost stayed"))
    out("BOOST-REMOVED", content)

    // The profile and the account page.
    await page.goto(`${base}/users/me/profile`)
    await boxInView(page, "#memberships .membership__bell", "a bell")
    await boxInView(page, "#transfer_link .share-link__qr", "transfer QR code")
    await page.screenshot({ path: join(args.artifacts, `accounts-profile-${tag}.png`), fullPage: true })
    await page.goto(`${base}/account/edit`)
    await boxInView(page, "#invite .share-link__qr", "invite QR code")
    const qrLoaded = await page.locator("#invite .share-link__qr").evaluate((img) => img.complete && img.naturalWidth > 0)
    if (!qrLoaded) await fail("the invite QR code did not load")
    await page.screenshot({ path: join(args.artifacts, `accounts-account-${tag}.png`), fullPage: true })
    out("PAGES", tag)
    await page.context().close()
  }
  if (pageErrors.length) await fail(`page errors: ${pageErrors.join("; ")}`)
  if (foreign.length) await fail(`foreign requests: ${foreign.join(", ")}`)
  out("OK")
  await browser.close()
  server.child.kill("SIGTERM")
  process.exit(0)
} catch (e) {
  await fail(e.stack || String(e))
}
