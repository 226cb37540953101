// What a browser scenario needs around its steps: its arguments (`--hearth PATH --work DIR
// --artifacts DIR [--timeout SECONDS]`, plus the scenario's own), Debian's Chromium, `hearth
// serve` processes with the scenario's environment (started, stopped, started again on the same
// port), signing in through the form, the `STEP detail…` lines, failing with the reason (closing
// the browser and stopping every server), page errors and requests that leave the origin.
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { mkdirSync, createWriteStream } from "node:fs"
import { join } from "node:path"
import { chromium } from "playwright-core"

export const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
)
for (const required of ["hearth", "work", "artifacts"]) {
  if (!args[required]) {
    console.error(`missing --${required}`)
    process.exit(2)
  }
}
/** The seed's password (every seeded person has it) and its bot's key. */
export const PASSWORD = "secret123456"
export const BOT_KEY = "5-bNd3rB0tK3y7"
/** The environment most scenarios add: the seed's 20 people and INFO logs. */
export const SEEDED = { HEARTH_SEED_USERS: "20", HEARTH_LOG_LEVEL: "info" }
/** Debian's Chromium and the flags every scenario launches it with. */
export const CHROMIUM = "/usr/bin/chromium"
export const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]
mkdirSync(args.artifacts, { recursive: true })
mkdirSync(args.work, { recursive: true })

export const out = (...parts) => process.stdout.write(parts.join(" ") + "\n")
export const shot = (name) => join(args.artifacts, name)

/** The server's base URL (`http://127.0.0.1:PORT`) once `start` resolved; the browser. */
export let base = null
export let browser = null
/** The server `start` started. */
export let server = null
const servers = new Set()
/** What pages threw (`who: message`): a scenario may drop ones it expects. */
export const pageErrors = []
const foreign = []
const origins = []

/** Lets pages reach `origin` (e.g. a proxy of the server) without it counting as foreign. */
export const allowOrigin = (origin) => origins.push(origin, origin.replace("http:", "ws:"))
const serverLog = createWriteStream(join(args.work, "hearth.log"), { flags: "a" })

/** Closes the browser and stops every server still running. */
export async function cleanup() {
  if (browser) await browser.close().catch(() => {})
  browser = null
  for (const s of [...servers]) await stopHearth(s).catch(() => {})
}

export async function fail(why) {
  out("FAIL", why)
  await cleanup()
  process.exit(1)
}
/** Fails with `why` unless `ok`. */
export const check = async (ok, why) => {
  if (!ok) await fail(why)
}
setTimeout(() => fail(`timeout after ${Number(args.timeout ?? 240)}s`), Number(args.timeout ?? 240) * 1000).unref()

// `hearth serve --bind BIND` from inside --work, with its database and data there and `env`
// added; `--assets DIR` serves the page's scripts from DIR/js. Resolves `listening` to the
// address it logs; `exited` to `{ code, signal }`.
export function startHearth(bind = "127.0.0.1:0", env = {}) {
  const all = { ...process.env, HEARTH_DATABASE: join(args.work, "hearth.sqlite3"), HEARTH_DATA_DIR: args.work, HEARTH_LOGIN_RATE_LIMIT: "0", HEARTH_LOG_JSON: "true", ...env }
  delete all.HEARTH_ASSETS_DIR
  if (args.assets) all.HEARTH_ASSETS_DIR = args.assets
  const child = spawn(args.hearth, ["serve", "--bind", bind], { cwd: args.work, env: all, stdio: ["ignore", "pipe", "pipe"] })
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })))
  const server = { child, exited }
  servers.add(server)
  exited.then(() => servers.delete(server))
  child.stderr.pipe(serverLog, { end: false })
  server.listening = new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on("line", (line) => {
      serverLog.write(line + "\n")
      try {
        const entry = JSON.parse(line)
        if (entry.fields?.message === "Hearth is listening") resolve(entry.fields.address)
      } catch {
        // not a JSON log line
      }
    })
    exited.then(({ code }) => reject(new Error(`hearth exited with ${code} before listening (see ${serverLog.path})`)))
  })
  return server
}

/** SIGTERM, then the exit. */
export async function stopHearth(server) {
  server.child.kill("SIGTERM")
  return server.exited
}

// Starts Chromium and `hearth serve` with `env` added to the environment; resolves to the
// server's base URL once it logs that it is listening (the server is `server`).
export async function start(env = {}) {
  browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS })
  server = startHearth("127.0.0.1:0", env)
  base = `http://${await server.listening}`
  return base
}

/** Records `page`'s errors and its requests that leave `base`'s origin (its own `blob:` URLs
 * stay in it) under `who`. */
export function watch(page, who) {
  page.on("pageerror", (e) => pageErrors.push(`${who}: ${e.message}`))
  page.on("request", (r) => {
    const url = r.url()
    const ours = [base, base.replace("http:", "ws:"), `blob:${base}`, "data:", ...origins]
    if (!ours.some((origin) => url.startsWith(origin))) foreign.push(`${who}: ${url}`)
  })
}

// A page in a new browser context, its errors and foreign requests recorded under `who`.
export async function newPage(who, viewport = { width: 1280, height: 900 }, options = {}) {
  const context = await browser.newContext({ viewport, ...options })
  const page = await context.newPage()
  watch(page, who)
  return page
}

// Signs `page` in as `email` through the sign-in form at `origin`; resolves once it landed
// on a room.
export async function signIn(page, email, origin = base) {
  await page.goto(`${origin}/session/new`)
  await page.fill('input[name="email_address"]', email)
  await page.fill('input[name="password"]', PASSWORD)
  await Promise.all([page.waitForURL(/\/rooms\/\d+$/), page.click('button[name="log_in"]')])
  return page
}

// A new page of `context` (errors recorded under `who`), signed in as `email` at `origin`, then
// on room `room` when one is given.
export async function signedIn(context, who, email, room = null, origin = base) {
  const page = await context.newPage()
  watch(page, who)
  await signIn(page, email, origin)
  if (room !== null) await page.goto(`${origin}/rooms/${room}`)
  return page
}

// The room page is live: the heartbeat subscription is connected and a stream source is
// subscribed (`source` narrows which).
export async function connected(page, source = "turbo-cable-stream-source[connected]") {
  await page.waitForSelector('html[data-cable="connected"]', { state: "attached" })
  await page.waitForSelector(source, { state: "attached" })
}

// The first `selector` on `page`, visible and inside the viewport's width: its box. A Turbo
// stream may replace the element between the wait and the scroll (the sidebar's lists are
// re-rendered whole); the box is then the replacement's, looked up again (3 tries).
export async function boxInView(page, selector, what) {
  const el = page.locator(selector).first()
  let box = null
  for (let attempt = 1; ; attempt++) {
    await el.waitFor({ state: "visible", timeout: 10000 }).catch(() => fail(`${what}: ${selector} not visible`))
    try {
      await el.scrollIntoViewIfNeeded({ timeout: 5000 })
      box = await el.boundingBox()
      // Null: replaced right after the scroll (seen once under load); look it up again.
      if (box || attempt >= 3) break
    } catch (error) {
      if (attempt >= 3 || !/not attached/.test(String(error))) throw error
    }
  }
  const vp = page.viewportSize()
  if (!box || box.width < 1 || box.height < 1 || box.x < 0 || box.x + box.width > vp.width + 1) {
    await fail(`${what}: box ${JSON.stringify(box)} outside ${JSON.stringify(vp)}`)
  }
  return box
}

// Screenshots of `pages` (`[who, page]` pairs) side by side, with their names, into `file`
// under --artifacts; resolves to its path.
export async function sideBySide(pages, file) {
  const shots = []
  for (const [who, page] of pages) shots.push([who, (await page.screenshot()).toString("base64")])
  const sheet = await browser.newPage({ viewport: { width: 1560, height: 660 } })
  await sheet.setContent(
    `<body style="margin:0;padding:10px;display:flex;gap:20px;background:#d4d4d8;font:14px sans-serif">` +
      shots
        .map(([who, png]) => `<figure style="margin:0"><figcaption style="padding:0 0 4px">${who}</figcaption>` +
          `<img style="border:1px solid #71717a" src="data:image/png;base64,${png}"></figure>`)
        .join("") +
      `</body>`,
  )
  const path = shot(file)
  await sheet.screenshot({ path, fullPage: true })
  await sheet.close()
  return path
}

// Ends the scenario: fails on page errors or foreign requests, else prints OK, stops the
// browser and the servers and exits 0.
export async function finish() {
  if (pageErrors.length) await fail(`page errors: ${pageErrors.join("; ")}`)
  if (foreign.length) await fail(`foreign requests: ${foreign.join(", ")}`)
  out("NO-PAGE-ERRORS", "NO-FOREIGN-REQUESTS")
  out("OK")
  await cleanup()
  process.exit(0)
}
