// What a browser scenario needs around its steps: its arguments (`--hearth PATH --work DIR
// --artifacts DIR [--timeout SECONDS]`), Debian's Chromium, a `hearth serve` on a random port
// with the scenario's environment, the `STEP detail…` lines, failing with the reason (closing
// the browser and stopping the server), page errors and requests that leave the origin.
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { mkdirSync, createWriteStream } from "node:fs"
import { join } from "node:path"
import { chromium } from "playwright-core"

export const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
)
const CHROMIUM = "/usr/bin/chromium"
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]
mkdirSync(args.artifacts, { recursive: true })
mkdirSync(args.work, { recursive: true })

export const out = (...parts) => process.stdout.write(parts.join(" ") + "\n")
export const shot = (name) => join(args.artifacts, name)

const state = { server: null, browser: null, base: null, pageErrors: [], foreign: [] }

export async function fail(why) {
  out("FAIL", why)
  if (state.browser) await state.browser.close().catch(() => {})
  if (state.server) state.server.kill("SIGTERM")
  process.exit(1)
}
setTimeout(() => fail(`timeout after ${Number(args.timeout ?? 120)}s`), Number(args.timeout ?? 120) * 1000).unref()

// Starts Chromium and `hearth serve` with `env` added to the environment; resolves to the
// server's base URL once it logs that it is listening.
export async function start(env = {}) {
  state.browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS })
  const log = createWriteStream(join(args.work, "hearth.log"), { flags: "a" })
  const all = { ...process.env, HEARTH_DATABASE: join(args.work, "hearth.sqlite3"), HEARTH_DATA_DIR: args.work, HEARTH_LOGIN_RATE_LIMIT: "0", HEARTH_LOG_JSON: "true", ...env }
  delete all.HEARTH_ASSETS_DIR
  const child = spawn(args.hearth, ["serve", "--bind", "127.0.0.1:0"], { cwd: args.work, env: all, stdio: ["ignore", "pipe", "pipe"] })
  state.server = child
  child.stderr.pipe(log)
  const address = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on("line", (line) => {
      log.write(line + "\n")
      try {
        const entry = JSON.parse(line)
        if (entry.fields?.message === "Hearth is listening") resolve(entry.fields.address)
      } catch {}
    })
    child.once("exit", (code) => reject(new Error(`hearth exited with ${code}`)))
  })
  state.base = `http://${address}`
  return state.base
}

// A page in a new browser context, its errors and foreign requests recorded under `who`.
export async function newPage(who, viewport = { width: 1280, height: 900 }, options = {}) {
  const context = await state.browser.newContext({ viewport, ...options })
  const page = await context.newPage()
  page.on("pageerror", (e) => state.pageErrors.push(`${who}: ${e.message}`))
  page.on("request", (r) => {
    const url = r.url()
    if (!url.startsWith(state.base) && !url.startsWith(state.base.replace("http:", "ws:")) && !url.startsWith("data:")) state.foreign.push(url)
  })
  return page
}

// The first `selector` on `page`, visible and inside the viewport's width: its box.
export async function boxInView(page, selector, what) {
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

// Ends the scenario: fails on page errors or foreign requests, else prints OK and exits 0.
export async function finish() {
  if (state.pageErrors.length) await fail(`page errors: ${state.pageErrors.join("; ")}`)
  if (state.foreign.length) await fail(`foreign requests: ${state.foreign.join(", ")}`)
  out("OK")
  await state.browser.close()
  state.server.kill("SIGTERM")
  process.exit(0)
}
