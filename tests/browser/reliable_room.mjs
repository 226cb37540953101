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
// 3. A failed catch-up: David's network drops again; Jason posts; the page's first catch-up
//    after the reconnect is answered 503; the page tries again and shows the post.
// David's page never reloads (a marker set on its window stays), and no page throws.
//
// Prints one line per step; exits 0 with "OK" when every step was seen.
import { createServer, connect } from "node:net"
import { out, fail, start, startHearth, stopHearth, watch, signIn, allowOrigin, finish, SEEDED, browser, server } from "./harness.mjs"

const ROOM = 1
const nonce = Math.random().toString(36).slice(2, 8)

const message = (page, text) => page.locator("#message-area .message", { hasText: text })

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
  page.on("framenavigated", (frame) => {
    if (frame === page.mainFrame()) out("NAVIGATED", who, frame.url())
  })
  page.on("console", (m) => out("CONSOLE", who, m.type(), m.text().slice(0, 200)))
  page.on("response", async (r) => {
    if (r.status() >= 400) out("HTTP", who, r.status(), r.request().method(), r.url(), (r.request().postData() ?? "").slice(0, 300), (await r.text().catch(() => "")).slice(0, 300))
  })
  await signIn(page, email, origin)
  await page.goto(`${origin}/rooms/${ROOM}`)
  return page
}

// Subscribed everywhere: the heartbeat, every stream source (the room's and the sidebar's three),
// and the sidebar's list with its positions.
async function settled(page) {
  await page.waitForSelector('html[data-cable="connected"]', { state: "attached" })
  await page.waitForSelector("#sidebar_rooms[data-sidebar-history]", { state: "attached" })
  await page.waitForFunction(() => {
    const sources = [...document.querySelectorAll("turbo-cable-stream-source")]
    return sources.length === 4 && sources.every((s) => s.hasAttribute("connected"))
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
  jasonBase = await start(SEEDED)
  const address = jasonBase.slice("http://".length)
  proxy = await startProxy(address)
  const davidBase = `http://${proxy.address}`
  allowOrigin(davidBase)
  out("HEARTH", jasonBase, "PROXY", davidBase)

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
  await startHearth(address, SEEDED).listening
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

  // 3. The catch-up after a reconnect fails once (the server answers 503, as a busy database
  // makes it): the page tries again while it stays connected, instead of lacking what was
  // posted while it was away until some later reconnect.
  let refused = 0
  await david.route(/\/rooms\/\d+\/refresh\?/, async (route) => {
    if (refused++ === 0) await route.fulfill({ status: 503, headers: { "Retry-After": "1" }, body: "Busy" })
    else await route.continue()
  })
  proxy.down()
  await david.waitForSelector('html[data-cable="disconnected"]', { state: "attached" })
  const away = `Posted while David's catch-up fails (${nonce})`
  await jason.fill("#message_body", away)
  await jason.press("#message_body", "Enter")
  await message(jason, away).waitFor()
  proxy.up()
  await message(david, away).waitFor({ timeout: 20_000 }).catch(() => fail(`a failed catch-up was not tried again (refresh requests: ${refused})`))
  if (refused < 2) await fail(`the catch-up was asked ${refused} times`)
  if ((await david.evaluate(() => window.__notReloaded)) !== nonce) await fail("David's page reloaded")
  out("CAUGHT-UP-AFTER-A-FAILED-CATCH-UP", `refresh asked ${refused} times`)

  proxy.close()
  await finish()
} catch (error) {
  await fail(error.stack ?? String(error))
}
