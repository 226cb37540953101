// The room page catches up everything it missed, without a reload: Debian's headless
// Chromium, driven by playwright-core, against the `hearth` binary, with stock
// @rails/actioncable and Turbo (docs/reliable-delivery.md). Run by tests/suite/browser_room.rs:
//
//   node reliable_room.mjs --hearth PATH --work DIR --artifacts DIR [--timeout 150]
//
// David's page reaches Hearth through a TCP proxy of this script, so his network can be cut
// (every socket reset, new ones refused) while Jason, connected directly, keeps acting:
//
// 1. A dropped socket: David's network goes down. Jason posts in room 1, boosts a message,
//    creates an open room and posts in it (David's unread mark). David's network comes back:
//    his page, reconnected by @rails/actioncable, shows the post and the boost (the room's
//    catch-up) and the new room, marked unread (the sidebar's catch-up from the stream
//    history), each once.
// 2. A restart: Hearth stops (SIGTERM) while David's network is down and starts again; Jason
//    does the same again. David's network comes back: the room's catch-up (durable positions
//    in SQLite) and the sidebar's (the history's epoch changed: the list is rendered again)
//    bring it all, once.
// David's page never reloads (a marker set on its window stays), and no page throws.
//
// Prints one line per step; exits 0 with "OK" when every step was seen.
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { mkdirSync, createWriteStream } from "node:fs"
import { join } from "node:path"
import { chromium } from "playwright-core"
import { createServer, connect } from "node:net"

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
)
for (const required of ["hearth", "work", "artifacts"]) {
  if (!args[required]) {
    console.error(`missing --${required}`)
    process.exit(2)
  }
}
const CHROMIUM = "/usr/bin/chromium"
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
]
const PASSWORD = "secret123456"
const BOT_KEY = "5-bNd3rB0tK3y7"
const ROOM = 1
const timeout = Number(args.timeout ?? 150)
const nonce = Math.random().toString(36).slice(2, 8)
mkdirSync(args.artifacts, { recursive: true })
mkdirSync(args.work, { recursive: true })

const out = (...parts) => process.stdout.write(parts.join(" ") + "\n")
let server = null
let browser = null
const pageErrors = []
const foreignRequests = []

async function cleanup() {
  if (browser) await browser.close().catch(() => {})
  browser = null
  if (server) await stopHearth(server).catch(() => {})
  server = null
}

async function fail(why) {
  out("FAIL", why)
  await cleanup()
  process.exit(1)
}

setTimeout(() => fail(`timeout after ${timeout}s`), timeout * 1000).unref()

// --- the server ------------------------------------------------------------------------------

const serverLog = createWriteStream(join(args.work, "hearth.log"), { flags: "a" })

function startHearth(bind) {
  const env = {
    ...process.env,
    HEARTH_DATABASE: join(args.work, "hearth.sqlite3"),
    HEARTH_DATA_DIR: args.work,
  }
  delete env.HEARTH_ASSETS_DIR
  if (args.assets) env.HEARTH_ASSETS_DIR = args.assets
  const child = spawn(args.hearth, ["serve", "--bind", bind], {
    cwd: args.work,
    env: {
      ...env,
      HEARTH_SEED_USERS: "20",
      HEARTH_LOGIN_RATE_LIMIT: "0",
      HEARTH_LOG_JSON: "true",
      HEARTH_LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  })
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })))
  child.stderr.pipe(serverLog, { end: false })
  const listening = new Promise((resolve, reject) => {
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
  return { child, exited, listening }
}

async function stopHearth(s) {
  s.child.kill("SIGTERM")
  return s.exited
}

// --- pages -----------------------------------------------------------------------------------

let base = null

function watch(page, who) {
  page.on("pageerror", (error) => pageErrors.push(`${who}: ${error.message}`))
  page.on("request", (request) => {
    const url = request.url()
    if (!url.startsWith(base) && !url.startsWith(base.replace("http:", "ws:")) && !url.startsWith("data:")) {
      foreignRequests.push(`${who}: ${url}`)
    }
  })
}

async function signIn(context, who, email) {
  const page = await context.newPage()
  watch(page, who)
  await page.goto(`${base}/session/new`)
  await page.fill('input[name="email_address"]', email)
  await page.fill('input[name="password"]', PASSWORD)
  await Promise.all([page.waitForURL(/\/rooms\/\d+$/), page.click('button[name="log_in"]')])
  await page.goto(`${base}/rooms/${ROOM}`)
  return page
}

// The page is live: the heartbeat subscription is connected, the room's stream source is
// subscribed, and the first catch-up has run.
async function live(page, refreshesAtLeast = 1) {
  await page.waitForSelector('html[data-cable="connected"]', { state: "attached" })
  await page.waitForSelector('turbo-cable-stream-source[channel="RoomMessagesChannel"][connected]', { state: "attached" })
  await page.waitForFunction((n) => Number(document.documentElement.dataset.refreshes) >= n, refreshesAtLeast)
}

const message = (page, text) => page.locator("#message-area .message", { hasText: text })
const typingNotice = (page) => page.evaluate(() => document.getElementById("typing_notifications").textContent)

async function sideBySide(pages, file) {
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
  const path = join(args.artifacts, file)
  await sheet.screenshot({ path, fullPage: true })
  await sheet.close()
  return path
}


// --- the proxy -------------------------------------------------------------------------------

// Forwards every connection to `target`; `down()` resets every open one and refuses new ones
// until `up()`.
function startProxy(target) {
  const [host, port] = [target.split(":")[0], Number(target.split(":")[1])]
  const open = new Set()
  let refusing = false
  const proxy = createServer((client) => {
    if (refusing) return client.resetAndDestroy()
    const upstream = connect(port, host)
    open.add(client)
    open.add(upstream)
    const forget = () => {
      open.delete(client)
      open.delete(upstream)
      client.destroy()
      upstream.destroy()
    }
    client.on("error", forget).on("close", forget)
    upstream.on("error", forget).on("close", forget)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  return new Promise((resolve) => {
    proxy.listen(0, "127.0.0.1", () => {
      resolve({
        address: `127.0.0.1:${proxy.address().port}`,
        down() {
          refusing = true
          for (const socket of open) socket.resetAndDestroy()
          open.clear()
        },
        up() {
          refusing = false
        },
        close() {
          refusing = true
          for (const socket of open) socket.destroy()
          proxy.close()
        },
      })
    })
  })
}

// --- the scenario ----------------------------------------------------------------------------

async function signInAt(context, origin, who, email) {
  const page = await context.newPage()
  watch(page, who)
  await page.goto(`${origin}/session/new`)
  await page.fill('input[name="email_address"]', email)
  await page.fill('input[name="password"]', PASSWORD)
  await Promise.all([page.waitForURL(/\/rooms\/\d+$/), page.click('button[name="log_in"]')])
  await page.goto(`${origin}/rooms/${ROOM}`)
  return page
}

// Subscribed everywhere: the heartbeat, every stream source (the room's and the sidebar's two),
// and the sidebar's list with its positions.
async function settled(page) {
  await page.waitForSelector('html[data-cable="connected"]', { state: "attached" })
  await page.waitForSelector("#sidebar_rooms[data-sidebar-history]", { state: "attached" })
  await page.waitForFunction(() => {
    const sources = [...document.querySelectorAll("turbo-cable-stream-source")]
    return sources.length === 3 && sources.every((s) => s.hasAttribute("connected"))
  })
}

// As Jason (connected directly): a post in room 1, a boost of `boosted`, a new open room, a
// post in it. Returns the new room's name and id.
async function actWhileAway(jason, tag, boosted) {
  const posted = `Posted while David was away ${tag} (${nonce})`
  await jason.waitForFunction(() => !document.querySelector("form.composer").inert)
  await jason.fill("#message_body", posted)
  await jason.press("#message_body", "Enter")
  await message(jason, posted).waitFor()
  const status = await jason.evaluate(async ([id, content]) => {
    const token = document.querySelector('meta[name="csrf-token"]').content
    const body = new URLSearchParams({ "boost[content]": content, authenticity_token: token })
    const r = await fetch(`/messages/${id}/boosts`, { method: "POST", body, headers: { Accept: "text/vnd.turbo-stream.html" } })
    return r.status
  }, [boosted, `👍${tag}`])
  if (status >= 400) await fail(`the boost answered ${status}`)
  const creator = await jason.context().newPage()
  watch(creator, "jason")
  await creator.goto(`${jasonBase}/rooms/opens/new`)
  const roomName = `Open room ${tag} ${nonce}`
  await creator.fill("#room_name", roomName)
  await Promise.all([creator.waitForURL(/\/rooms\/\d+$/), creator.click('#room_form button[type="submit"]')])
  const roomId = Number(new URL(creator.url()).pathname.split("/")[2])
  const inRoom = await creator.evaluate(async ([id, text]) => {
    const token = document.querySelector('meta[name="csrf-token"]').content
    const body = new URLSearchParams({ "message[body]": text, authenticity_token: token })
    const r = await fetch(`/rooms/${id}/messages`, { method: "POST", body, headers: { Accept: "text/vnd.turbo-stream.html" } })
    return r.status
  }, [roomId, `In the new room ${tag}`])
  if (inRoom !== 200) await fail(`the post in the new room answered ${inRoom}`)
  await creator.close()
  return { posted, roomName, roomId }
}

// David's page holds the post once, the boost, and the new room once, marked unread.
async function caughtUp(david, { posted, roomName, roomId }, tag, boosted) {
  await message(david, posted).waitFor()
  await david.waitForFunction(
    ([id, content]) => document.querySelector(`#message-area .message[data-message-id="${id}"]`)?.textContent.includes(content),
    [boosted, `👍${tag}`],
  )
  await david.waitForFunction((id) => document.querySelector(`#list_rooms_open_${id}.room-link--unread`), roomId)
  const counts = await david.evaluate(([text, id, name]) => ({
    posts: [...document.querySelectorAll("#message-area .message")].filter((m) => m.textContent.includes(text)).length,
    entries: document.querySelectorAll(`[id="list_rooms_open_${id}"]`).length,
    named: [...document.querySelectorAll("#shared_rooms li")].filter((li) => li.textContent.includes(name)).length,
    ids: new Set([...document.querySelectorAll("[id]")].map((e) => e.id)).size === document.querySelectorAll("[id]").length,
  }), [posted, roomId, roomName])
  if (counts.posts !== 1 || counts.entries !== 1 || counts.named !== 1 || !counts.ids) {
    await fail(`David's page after ${tag}: ${JSON.stringify(counts)}`)
  }
  const marker = await david.evaluate(() => window.__notReloaded)
  if (marker !== nonce) await fail(`David's page reloaded during ${tag}`)
}

let jasonBase = null
let proxy = null

try {
  server = startHearth("127.0.0.1:0")
  const address = await server.listening
  jasonBase = `http://${address}`
  base = jasonBase
  proxy = await startProxy(address)
  const davidBase = `http://${proxy.address}`
  out("HEARTH", jasonBase, "PROXY", davidBase)

  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS })
  const viewport = { width: 760, height: 600 }
  const davidContext = await browser.newContext({ viewport })
  const jasonContext = await browser.newContext({ viewport })
  const david = await signInAt(davidContext, davidBase, "david", "david@example.com")
  const jason = await signInAt(jasonContext, jasonBase, "jason", "jason@example.com")
  await Promise.all([settled(david), settled(jason)])
  await david.evaluate((n) => { window.__notReloaded = n }, nonce)
  const boosted = await david.evaluate(() => Number(document.querySelector("#message-area .message[data-message-id]").dataset.messageId))
  out("SETTLED", "david through the proxy, jason directly")

  // 1. A dropped socket.
  proxy.down()
  await david.waitForSelector('html[data-cable="disconnected"]', { state: "attached" })
  out("DROPPED", "david's network is down")
  const first = await actWhileAway(jason, "A", boosted)
  out("ACTED-WHILE-AWAY", first.roomName)
  const before = await david.evaluate(() => Number(document.documentElement.dataset.sidebarCatchUps) || 0)
  proxy.up()
  await caughtUp(david, first, "A", boosted)
  const after = await david.evaluate(() => Number(document.documentElement.dataset.sidebarCatchUps) || 0)
  if (after <= before) await fail("the sidebar did not catch up")
  out("CAUGHT-UP-AFTER-A-DROP", "post, boost, new room marked unread, each once, no reload")
  await settled(david)

  // 2. A restart while David is away.
  proxy.down()
  await david.waitForSelector('html[data-cable="disconnected"]', { state: "attached" })
  await stopHearth(server)
  server = startHearth(address)
  await server.listening
  out("RESTARTED")
  await settled(jason)
  const second = await actWhileAway(jason, "B", boosted)
  out("ACTED-WHILE-AWAY", second.roomName)
  proxy.up()
  await caughtUp(david, second, "B", boosted)
  await caughtUp(david, first, "A", boosted)
  out("CAUGHT-UP-AFTER-A-RESTART", "post, boost, new room marked unread, each once, no reload")
  await settled(david)
  const live = `Live again (${nonce})`
  await jason.fill("#message_body", live)
  await jason.press("#message_body", "Enter")
  await message(david, live).waitFor({ timeout: 10_000 }).catch(async () => {
    const state = (page) =>
      page.evaluate((text) => {
        const root = document.documentElement
        const list = document.querySelector("[data-refresh-room-url-value]")
        return JSON.stringify({
          cable: root.dataset.cable,
          refreshes: root.dataset.refreshes,
          upToDate: list?.dataset.upToDate,
          sources: [...document.querySelectorAll("turbo-cable-stream-source")].map((s) => s.hasAttribute("connected")),
          inDom: document.body.innerHTML.includes(text),
          messages: [...document.querySelectorAll("#message-area .message")].filter((m) => m.textContent.includes(text)).map((m) => m.className),
        })
      }, live)
    await fail(`the live post did not reach David: jason ${await state(jason)}, david ${await state(david)}`)
  })
  out("LIVE-AGAIN")

  if (pageErrors.length > 0) await fail(`page errors: ${pageErrors.join(" | ")}`)
  out("NO-PAGE-ERRORS")
  proxy.close()
  await cleanup()
  out("OK")
  process.exit(0)
} catch (error) {
  await fail(error.stack ?? String(error))
}
