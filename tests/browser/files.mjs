// Files in a real browser: Debian's headless Chromium, driven by playwright-core, against the
// `hearth` binary. Run by tests/suite/browser_files.rs:
//
//   node files.mjs --hearth PATH --work DIR --artifacts DIR --image PNG [--timeout 180]
//
// David picks a PNG in the composer of the Designers room (4); it goes up through
// @rails/activestorage's DirectUpload (the page's own vendored copy); Jason, watching the room,
// sees the message arrive and its thumbnail come by broadcast, at most 1200×800 and smaller than
// the original. Screenshots at 1280×900 and 390×844. Each step prints one line; "OK" at the end.
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { mkdirSync, createWriteStream, readFileSync } from "node:fs"
import { join } from "node:path"
import { chromium } from "playwright-core"

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
)
const ROOM = 4
const PASSWORD = "secret123456"
const timeout = Number(args.timeout ?? 180)
mkdirSync(args.artifacts, { recursive: true })
mkdirSync(args.work, { recursive: true })
const out = (...parts) => process.stdout.write(parts.join(" ") + "\n")
let server = null
let browser = null
const pageErrors = []
const uploads = []

async function cleanup() {
  if (browser) await browser.close().catch(() => {})
  if (server) { server.child.kill("SIGTERM"); await server.exited }
  browser = server = null
}
async function fail(why) { out("FAIL", why); await cleanup(); process.exit(1) }
const check = async (ok, why) => { if (!ok) await fail(why) }
setTimeout(() => fail(`timeout after ${timeout}s`), timeout * 1000).unref()

const serverLog = createWriteStream(join(args.work, "hearth.log"), { flags: "a" })
function startHearth() {
  const env = { ...process.env, HEARTH_DATABASE: join(args.work, "hearth.sqlite3"), HEARTH_DATA_DIR: args.work,
    HEARTH_SEED_USERS: "20", HEARTH_LOGIN_RATE_LIMIT: "0", HEARTH_LOG_JSON: "true", HEARTH_LOG_LEVEL: "info" }
  delete env.HEARTH_ASSETS_DIR
  const child = spawn(args.hearth, ["serve", "--bind", "127.0.0.1:0"], { cwd: args.work, env, stdio: ["ignore", "pipe", "pipe"] })
  const exited = new Promise((resolve) => child.once("exit", resolve))
  child.stderr.pipe(serverLog, { end: false })
  const listening = new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on("line", (line) => {
      serverLog.write(line + "\n")
      try {
        const entry = JSON.parse(line)
        if (entry.fields?.message === "Hearth is listening") resolve(entry.fields.address)
      } catch {}
    })
    exited.then((code) => reject(new Error(`hearth exited with ${code}`)))
  })
  return { child, exited, listening }
}

let base = null
async function signIn(context, who, email) {
  const page = await context.newPage()
  page.on("pageerror", (error) => pageErrors.push(`${who}: ${error.message}`))
  page.on("request", (request) => { if (request.url().includes("/rails/active_storage/")) uploads.push(`${who} ${request.method()} ${new URL(request.url()).pathname.split("/").slice(0, 4).join("/")}`) })
  await page.goto(`${base}/session/new`)
  await page.fill('input[name="email_address"]', email)
  await page.fill('input[name="password"]', PASSWORD)
  await Promise.all([page.waitForURL(/\/rooms\/\d+/), page.click('button[name="log_in"]')])
  await page.goto(`${base}/rooms/${ROOM}`)
  await page.waitForSelector('html[data-cable="connected"]', { state: "attached" })
  await page.waitForSelector('turbo-cable-stream-source[connected]', { state: "attached" })
  return page
}

try {
  server = startHearth()
  base = `http://${await server.listening}`
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"] })
  const wide = { viewport: { width: 1280, height: 900 } }
  const david = await signIn(await browser.newContext(wide), "david", "david@example.com")
  const jason = await signIn(await browser.newContext(wide), "jason", "jason@example.com")
  const kevin = await signIn(await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true }), "kevin", "kevin@example.com")
  const original = readFileSync(args.image)

  const attach = david.locator("label.composer__attach")
  const attachBox = await attach.boundingBox()
  await check(attachBox && attachBox.width > 10 && attachBox.y > 700, `the attach button is in the composer: ${JSON.stringify(attachBox)}`)
  out("ATTACH-BUTTON", JSON.stringify(attachBox))
  await david.setInputFiles("input.composer__file", { name: "mountains.png", mimeType: "image/png", buffer: original })

  // Jason sees the message come, then its thumbnail by the `replace` broadcast.
  const thumb = jason.locator('#message-area .message img.message__attachment[src*="/rails/active_storage/representations/redirect/"]')
  await thumb.first().waitFor({ state: "visible", timeout: 60000 })
  await jason.waitForFunction(() => {
    const img = document.querySelector('#message-area img.message__attachment[src*="representations"]')
    return img && img.complete && img.naturalWidth > 0
  })
  const natural = await thumb.first().evaluate((img) => ({ w: img.naturalWidth, h: img.naturalHeight, src: img.src }))
  await check(natural.w <= 1200 && natural.h <= 800 && natural.w > 0, `thumbnail ${natural.w}x${natural.h}`)
  const thumbBytes = await jason.evaluate(async (src) => (await (await fetch(src, { credentials: "same-origin" })).arrayBuffer()).byteLength, natural.src)
  await check(thumbBytes < original.length, `thumbnail ${thumbBytes} bytes vs original ${original.length}`)
  out("THUMBNAIL-BROADCAST", `${natural.w}x${natural.h}`, `${thumbBytes}<${original.length}`)
  await check(uploads.some((u) => u.startsWith("david POST /rails/active_storage/direct_uploads")), `direct upload record: ${uploads}`)
  await check(uploads.some((u) => u.startsWith("david PUT /rails/active_storage/disk")), `direct upload PUT: ${uploads}`)
  out("DIRECT-UPLOAD", uploads.filter((u) => u.startsWith("david")).join(", "))
  const shownBox = await thumb.first().boundingBox()
  await check(shownBox && shownBox.width > 50 && shownBox.width <= 420, `shown thumbnail box ${JSON.stringify(shownBox)}`)
  await jason.screenshot({ path: join(args.artifacts, "files-1280x900.png") })
  await kevin.locator('#message-area img.message__attachment[src*="representations"]').first().waitFor({ state: "visible", timeout: 30000 })
  await kevin.locator('#message-area img.message__attachment').last().scrollIntoViewIfNeeded()
  await kevin.screenshot({ path: join(args.artifacts, "files-390x844.png") })

  // The lightbox opens the original, with a download link.
  await thumb.first().click()
  const dialog = jason.locator("dialog.lightbox[open]")
  await dialog.waitFor({ state: "visible" })
  await jason.waitForFunction(() => document.querySelector("dialog.lightbox .lightbox__image")?.naturalWidth > 0)
  const full = await dialog.locator(".lightbox__image").evaluate((img) => img.naturalWidth)
  await check(full === 2400, `the lightbox shows the original (${full} px wide)`)
  await check((await dialog.locator("a.lightbox__download").getAttribute("href")).includes("disposition=attachment"), "download link")
  await jason.screenshot({ path: join(args.artifacts, "files-lightbox-1280x900.png") })
  out("LIGHTBOX", full)
  await check(pageErrors.length === 0, `page errors: ${pageErrors.join("; ")}`)
  out("NO-PAGE-ERRORS")
  out("OK")
  await cleanup()
} catch (error) {
  await fail(error.stack ?? String(error))
}
