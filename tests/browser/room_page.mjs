// The room page's messages in a real browser: Debian's headless Chromium, driven by
// playwright-core, against the `hearth` binary. Run by tests/suite/browser_room.rs:
//
//   node room_page.mjs --hearth PATH --work DIR --artifacts DIR [--assets DIR] [--timeout 240]
//
// The main room (169 seeded messages over three days) is filled by the bot to 500. David
// (administrator) reads it in Pacific/Auckland time, Jason (member) in UTC, both at 1280×900;
// Kevin at 390×844. Each step prints one line; "OK" at the end when every step held.
import { join } from "node:path"
import { args, out, fail, check, start as startScenario, startHearth, stopHearth, watch, signIn as signInAt, finish, pageErrors, PASSWORD, BOT_KEY, SEEDED, browser, base, server } from "./harness.mjs"

const ROOM = 1
const ROOM_SIZE = 500
const ZONE = "Pacific/Auckland"
const ENV = { ...SEEDED, HEARTH_POST_RATE_LIMIT: "0", HEARTH_ROOM_RATE_LIMIT: "0", HEARTH_SEARCH_RATE_LIMIT: "0" }

async function signIn(context, who, email, path = `/rooms/${ROOM}`) {
  const page = await context.newPage()
  watch(page, who)
  page.on("console", (message) => { if (message.type() === "warning" || message.type() === "error") out("CONSOLE", who, message.text()) })
  await signInAt(page, email)
  await page.goto(`${base}${path}`)
  return page
}

async function live(page, refreshesAtLeast = 1) {
  await page.waitForSelector('html[data-cable="connected"]', { state: "attached" })
  await page.waitForSelector('turbo-cable-stream-source[channel="RoomMessagesChannel"][connected]', { state: "attached" })
  await page.waitForFunction((n) => Number(document.documentElement.dataset.refreshes) >= n, refreshesAtLeast)
}

// The composer is a Trix editor (id message_body) when the page's scripts run.
async function say(page, text) {
  await page.evaluate((t) => {
    const editor = document.querySelector("trix-editor#message_body").editor
    editor.loadHTML("")
    editor.insertString(t)
  }, text)
  await page.focus("#message_body")
  await page.keyboard.press("Enter")
}
const composerHTML = (page) => page.evaluate(() => document.querySelector("trix-editor#message_body").value)
const composerText = (page) => page.evaluate(() => document.querySelector("trix-editor#message_body").editor.getDocument().toString().trim())
const clearComposer = (page) => page.evaluate(() => document.querySelector("trix-editor#message_body").editor.loadHTML(""))

const byId = (page, id) => page.locator(`#message-area .message[data-message-id="${id}"]`)
const box = (locator) => locator.boundingBox()
const shot = async (page, file) => {
  const path = join(args.artifacts, file)
  await page.screenshot({ path })
  out("SCREENSHOT", path)
}

// Every message id of the room, oldest first, read page by page as the page's script would.
async function roomIds(page) {
  return page.evaluate(async (room) => {
    const ids = []
    let html = await (await fetch(`/rooms/${room}/messages`)).text()
    // Back to the first page, then forward through all of them.
    for (;;) {
      const found = [...html.matchAll(/data-message-id="(\d+)"/g)].map((m) => Number(m[1]))
      ids.unshift(...found.filter((id) => !ids.includes(id)))
      const response = await fetch(`/rooms/${room}/messages?before=${found[0]}`)
      if (response.status === 204) break
      html = await response.text()
    }
    return ids
  }, ROOM)
}

// The local day and clock of a time in `zone`, as the page writes them.
function inZone(ms, zone) {
  const parts = Object.fromEntries(new Intl.DateTimeFormat("en-US", {
    timeZone: zone, year: "numeric", month: "long", day: "numeric", hour: "numeric", minute: "2-digit", hour12: true,
  }).formatToParts(new Date(ms)).map((p) => [p.type, p.value]))
  return {
    day: `${parts.year}-${parts.month}-${parts.day}`,
    date: `${parts.month} ${parts.day}, ${parts.year}`,
    clock: `${parts.hour}:${parts.minute}${parts.dayPeriod.toLowerCase()}`,
  }
}

// What the list shows: per message its id, author, time text, classes.
const listState = (page) => page.evaluate(() =>
  [...document.querySelectorAll("#message-area .messages > .message")].map((m) => ({
    id: Number(m.dataset.messageId),
    user: Number(m.dataset.userId),
    at: Number(m.dataset.messageCreatedAt),
    clock: m.querySelector(".message__timestamp")?.textContent.trim(),
    date: m.querySelector(".message__day-separator time")?.textContent.trim(),
    firstOfDay: m.classList.contains("message--first-of-day"),
    threaded: m.classList.contains("message--threaded"),
  })))

// Opens the "…" menu of `message` and checks the menu's box is inside the window and the
// visible part of the list, next to its button.
async function openMenuInView(page, message, label) {
  await message.hover()
  await message.locator("summary").click()
  const menu = message.locator(".message__actions-menu")
  await menu.waitFor()
  const [m, b, area] = [await box(menu), await box(message.locator("summary")), await box(page.locator("#message-area"))]
  const viewport = page.viewportSize()
  const inside = m.y >= 0 && m.x >= 0 && m.y + m.height <= viewport.height && m.x + m.width <= viewport.width &&
    m.y >= area.y - 1 && m.y + m.height <= area.y + area.height + 1
  const near = Math.abs(m.y - (b.y + b.height)) < 12 || Math.abs(m.y + m.height - b.y) < 12
  await check(inside && near, `${label}: the menu at ${JSON.stringify(m)}, its button at ${JSON.stringify(b)}, list ${JSON.stringify(area)}, window ${JSON.stringify(viewport)}`)
  return { menu: m, button: b }
}

// --- the scenario ----------------------------------------------------------------------------

try {
  await startScenario(ENV)
  const address = base.slice("http://".length)
  out("HEARTH", base)

  // The bot fills the room to 500 messages, 25 posts at a time.
  const seeded = 169
  for (let i = seeded; i < ROOM_SIZE; i += 25) {
    const batch = Array.from({ length: Math.min(25, ROOM_SIZE - i) }, (_, k) =>
      fetch(`${base}/rooms/${ROOM}/${BOT_KEY}/messages`, { method: "POST", body: `Filler message number ${i + k + 1} of the big room` }))
    const answers = await Promise.all(batch)
    if (answers.some((r) => r.status !== 201)) await fail(`filling answered ${answers.map((r) => r.status)}`)
  }

  out("CHROMIUM", browser.version())
  const wide = { width: 1280, height: 900 }
  const davidContext = await browser.newContext({ viewport: wide, timezoneId: ZONE })
  const jasonContext = await browser.newContext({ viewport: wide, timezoneId: "UTC" })
  await jasonContext.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base })
  const david = await signIn(davidContext, "david", "david@example.com")
  const jason = await signIn(jasonContext, "jason", "jason@example.com")
  await Promise.all([live(david), live(jason)])
  const ids = await roomIds(jason)
  await check(ids.length === ROOM_SIZE, `the room holds ${ids.length} messages`)
  out("FILLED", ids.length)

  // Posting: pending at once, then the server's copy in its place.
  await jason.route(`${base}/rooms/${ROOM}/messages`, async (route) => {
    await new Promise((r) => setTimeout(r, 700))
    await route.continue()
  })
  await jason.waitForSelector("trix-editor#message_body")
  const ownText = "My own message, pending first"
  await say(jason, ownText)
  const pending = jason.locator("#message-area .message.message--pending", { hasText: ownText })
  await pending.waitFor({ timeout: 600 })
  const pendingId = await pending.getAttribute("id")
  await jason.waitForFunction((id) => {
    const m = document.getElementById(id)
    return m && !m.classList.contains("message--pending") && m.dataset.messageId
  }, pendingId)
  await check((await jason.locator(`[id="${pendingId}"]`).count()) === 1, "the pending message stayed beside the server's")
  await jason.unroute(`${base}/rooms/${ROOM}/messages`)
  const ownId = Number(await jason.locator(`[id="${pendingId}"]`).getAttribute("data-message-id"))
  out("PENDING-THEN-SERVER", pendingId)
  await byId(david, ownId).waitFor()

  // The menu of a message inside the window: one in the middle, and the last one.
  const visible = await jason.evaluate(() => {
    const area = document.getElementById("message-area").getBoundingClientRect()
    return [...document.querySelectorAll("#message-area .message[data-message-id]")]
      .filter((m) => { const r = m.getBoundingClientRect(); return r.top > area.top + 200 && r.bottom < area.bottom - 200 })
      .map((m) => Number(m.dataset.messageId))
  })
  await check(visible.length > 0, "no message in the middle of the window")
  const middle = byId(jason, visible[0])
  const opened = await openMenuInView(jason, middle, "a message in the middle")
  await shot(jason, "room-menu-1280x900.png")
  // Edit/Delete: not on the bot's message for Jason.
  await check(!(await middle.locator('a[data-message-action="edit"]').isVisible()), "Jason is offered Edit on the bot's message")
  await check(!(await middle.locator("button.btn--negative").isVisible()), "Jason is offered Delete on the bot's message")
  await jason.keyboard.press("Escape")
  await check(!(await middle.locator("details").evaluate((d) => d.open)), "Esc left the menu open")
  out("MENU-ESC-CLOSES")
  const lastOther = byId(jason, ids.at(-1))
  const lastOpened = await openMenuInView(jason, byId(jason, ownId), "the last message")
  await check(!!(await byId(jason, ownId).locator('a[data-message-action="edit"]').isVisible()), "Jason is not offered Edit on his own message")
  await jason.keyboard.press("Escape")
  out("MENU-IN-VIEWPORT", `middle: button y=${Math.round(opened.button.y)} menu y=${Math.round(opened.menu.y)};`,
    `last: button y=${Math.round(lastOpened.button.y)} menu y=${Math.round(lastOpened.menu.y)}-${Math.round(lastOpened.menu.y + lastOpened.menu.height)}`)
  const forbidden = await jason.evaluate(async (url) => (await fetch(url)).status, `/rooms/${ROOM}/messages/${ids.at(-1)}/edit`)
  await check(forbidden === 403, `the bot message's edit form answered ${forbidden} to Jason`)
  out("EDIT-OWN-ONLY", "Jason: Edit on his own message only; the server still answers 403")

  // Reply.
  await clearComposer(jason)
  await openMenuInView(jason, lastOther, "the bot's last message")
  await lastOther.locator('[data-message-action="reply"]').click()
  const replied = await composerHTML(jason)
  const quotedText = (await lastOther.locator(".trix-content").textContent()).trim()
  const backLink = `${base}/rooms/${ROOM}/@${ids.at(-1)}`
  await check(/<blockquote>/.test(replied) && replied.includes(quotedText) && replied.includes("Bender") && replied.includes(`href="${backLink}"`),
    `the reply is ${JSON.stringify(replied)}`)
  await check(await jason.evaluate(() => document.activeElement?.id === "message_body"), "the composer lost the focus")
  out("REPLY-QUOTED", JSON.stringify(await composerText(jason)))
  await clearComposer(jason)

  // Copy link.
  await openMenuInView(jason, lastOther, "the bot's last message")
  await lastOther.locator('[data-message-action="copy-link"]').click()
  await jason.waitForFunction(() => document.documentElement.dataset.copiedLink !== undefined)
  const clip = await jason.evaluate(() => navigator.clipboard.readText())
  await check(clip === backLink, `the clipboard holds ${JSON.stringify(clip)}`)
  out("COPY-LINK", clip)

  // Up arrow in the empty composer edits one's last message; Esc puts it back; Ctrl+Enter saves.
  await jason.focus("#message_body")
  await jason.keyboard.press("ArrowUp")
  const ownFrame = jason.locator(`[id="presentation_${pendingId}"]`)
  await ownFrame.locator("trix-editor").waitFor()
  await jason.keyboard.press("Escape")
  await ownFrame.locator(".trix-content", { hasText: ownText }).waitFor()
  await check((await ownFrame.locator(".message__edit-form").count()) === 0, "Esc left the edit form open")
  await jason.focus("#message_body")
  await jason.keyboard.press("ArrowUp")
  await ownFrame.locator("trix-editor").waitFor()
  await ownFrame.locator("trix-editor").fill("My own message, edited with the keyboard")
  await jason.keyboard.press("Control+Enter")
  await byId(david, ownId).locator(".trix-content", { hasText: "edited with the keyboard" }).waitFor()
  out("UP-ARROW-EDITS", "Esc cancels, Ctrl+Enter saves")

  // David, an administrator, is offered Edit on every message.
  const davidLast = byId(david, ids.at(-1))
  await openMenuInView(david, davidLast, "David: the bot's last message")
  await check(await davidLast.locator('a[data-message-action="edit"]').isVisible(), "David is not offered Edit on the bot's message")
  await david.keyboard.press("Escape")
  out("EDIT-ADMIN-ALL")

  // /play and emoji.
  await say(jason, "/play tada")
  await jason.locator('#message-area .message__sound[data-sound="tada"]').last().waitFor()
  await david.locator('#message-area .message__sound[data-sound="tada"]').last().waitFor()
  await david.waitForFunction(() => document.documentElement.dataset.soundPlayed === "tada")
  out("PLAY-SOUND", "tada drawn on both pages, played on David's")
  await say(jason, "🎉🎉")
  const emoji = david.locator("#message-area .message.message--emoji", { hasText: "🎉🎉" }).last()
  await emoji.waitFor()
  const emojiSize = await emoji.locator(".trix-content").evaluate((e) => parseFloat(getComputedStyle(e).fontSize))
  await check(emojiSize >= 30, `the emoji-only message is ${emojiSize}px`)
  out("EMOJI-LARGE", `${emojiSize}px`)

  // A post that fails is marked, and Retry sends it.
  await jason.route(`${base}/rooms/${ROOM}/messages`, (route) => route.abort("connectionrefused"))
  const failedText = "This one fails at first"
  await say(jason, failedText)
  const failed = jason.locator("#message-area .message.message--failed", { hasText: failedText })
  await failed.waitFor()
  await jason.unroute(`${base}/rooms/${ROOM}/messages`)
  // Turbo rethrows the failed fetch of its form submission (an unhandled rejection): expected here.
  await new Promise((r) => setTimeout(r, 100))
  for (let i = pageErrors.length - 1; i >= 0; i--) if (pageErrors[i] === "jason: Failed to fetch") pageErrors.splice(i, 1)
  await failed.locator(".message__retry").click()
  await david.locator("#message-area .message[data-message-id]", { hasText: failedText }).waitFor()
  await jason.waitForFunction((t) => [...document.querySelectorAll("#message-area .message")]
    .some((m) => m.textContent.includes(t) && m.dataset.messageId && !m.classList.contains("message--pending")), failedText)
  out("FAILED-THEN-RETRIED")
  await shot(jason, "room-1280x900.png")

  // Times in David's time zone, day separators and threads.
  const davidList = await listState(david)
  const wrongClock = davidList.filter((m) => m.clock !== inZone(m.at, ZONE).clock)
  await check(wrongClock.length === 0, `times not in ${ZONE}: ${JSON.stringify(wrongClock.slice(0, 3))}`)
  const differsFromUtc = davidList.some((m) => inZone(m.at, "UTC").clock !== m.clock)
  await check(differsFromUtc, "every time reads the same as UTC")
  out("TIME-ZONE", ZONE, `${davidList.length} times, e.g. ${davidList.at(-1).clock} (UTC ${inZone(davidList.at(-1).at, "UTC").clock})`)
  const threaded = davidList.filter((m) => m.threaded).length
  await check(threaded > 0, "no message is threaded")
  out("THREADED", `${threaded} of ${davidList.length}`)

  // A permalink to the 2nd message lands on it, highlighted, with the days of that page.
  await david.goto(`${base}/rooms/${ROOM}/@${ids[1]}`)
  await live(david)
  const target = byId(david, ids[1])
  await target.waitFor()
  await check(await target.evaluate((m) => m.classList.contains("message--highlighted")), "the permalink's message is not highlighted")
  const [t, area] = [await box(target), await box(david.locator("#message-area"))]
  await check(t.y >= area.y && t.y + t.height <= area.y + area.height, `the message sits at ${JSON.stringify(t)}, the list ${JSON.stringify(area)}`)
  out("PERMALINK-LANDS", `message ${ids[1]} at y=${Math.round(t.y)} in a list from y=${Math.round(area.y)} to ${Math.round(area.y + area.height)}`)
  await shot(david, "room-permalink-1280x900.png")
  const around = await listState(david)
  let previousDay = null
  for (const m of around) {
    const local = inZone(m.at, ZONE)
    const expected = local.day !== previousDay
    await check(m.firstOfDay === expected, `message ${m.id}: first of day ${m.firstOfDay}, expected ${expected}`)
    if (expected) await check(m.date === local.date, `message ${m.id}'s separator reads ${m.date}, expected ${local.date}`)
    previousDay = local.day
  }
  const separators = around.filter((m) => m.firstOfDay)
  await check(separators.length >= 2, `${separators.length} day separators on the page around message 2 in ${ZONE}`)
  const separator = byId(david, separators[1].id).locator(".message__day-separator")
  await check(await separator.isVisible(), "the day separator is not visible")
  out("DAY-SEPARATOR", separators.map((m) => m.date).join(" | "))

  // After a deep link, the bottom of the list loads the newer pages.
  const before = around.length
  await david.evaluate(() => { const a = document.getElementById("message-area"); a.scrollTop = a.scrollHeight })
  await david.waitForFunction((n) => document.querySelectorAll("#message-area .messages > .message").length > n, before)
  out("SCROLL-LOADS-NEWER", `${before} → ${(await listState(david)).length}`)

  // A message arrives while the list lags behind: "Jump to newest" shows and brings the newest page.
  await check(await david.evaluate(() => document.querySelector("#message-area .messages").dataset.upToDate === "false"), "the deep link's list says it is up to date")
  const arrived = await fetch(`${base}/rooms/${ROOM}/${BOT_KEY}/messages`, { method: "POST", body: "Arrived below the fold" })
  const arrivedId = Number(arrived.headers.get("location").split("@")[1])
  const jump = david.locator("#message-area .jump-to-newest")
  await jump.waitFor()
  const jumpBox = await box(jump)
  await check(jumpBox.y + jumpBox.height <= 900 && jumpBox.y >= 0, `the jump button sits at ${JSON.stringify(jumpBox)}`)
  await check((await byId(david, arrivedId).count()) === 0, "the new message was shown after a gap")
  await jump.click()
  await byId(david, arrivedId).waitFor()
  await check(david.url() === `${base}/rooms/${ROOM}`, `after the jump the address is ${david.url()}`)
  await check(await jump.isHidden(), "the jump button stayed")
  out("JUMP-TO-NEWEST", `message ${arrivedId}`)

  // The newest page: scrolling to the top loads older messages by itself.
  await david.goto(`${base}/rooms/${ROOM}`)
  await live(david)
  const start = await listState(david)
  await david.evaluate(() => { document.getElementById("message-area").scrollTop = 0 })
  await david.waitForFunction((n) => document.querySelectorAll("#message-area .messages > .message").length > n, start.length)
  const grown = await listState(david)
  await check(grown[0].id < start[0].id, "the older page is not above")
  const kept = await david.evaluate(() => document.getElementById("message-area").scrollTop)
  await check(kept > 0, "the scroll position jumped to the top")
  out("SCROLL-LOADS-OLDER", `${start.length} → ${grown.length} messages, first ${start[0].id} → ${grown[0].id}, scrollTop ${kept}`)

  // A phone.
  const kevinContext = await browser.newContext({ viewport: { width: 390, height: 844 }, timezoneId: ZONE, isMobile: true, hasTouch: true })
  const kevin = await signIn(kevinContext, "kevin", "kevin@example.com")
  await live(kevin)
  await shot(kevin, "room-390x844.png")
  const kevinLast = kevin.locator("#message-area .messages > .message[data-message-id]").last()
  // The page frame at this width is the layout's concern; the menu's vertical place is this one's.
  await kevinLast.locator("summary").evaluate((summary) => summary.click())
  const km = await box(kevinLast.locator(".message__actions-menu"))
  await check(km.y >= 0 && km.y + km.height <= 844, `Kevin's menu at ${JSON.stringify(km)}`)
  await shot(kevin, "room-menu-390x844.png")
  out("MENU-IN-VIEWPORT-PHONE", JSON.stringify(km))

  // Disconnected: the composer is disabled after 5 s and enabled again after the catch-up.
  await stopHearth(server)
  await jason.waitForSelector("html.offline", { state: "attached", timeout: 15000 })
  await check(await jason.evaluate(() => document.querySelector("form.composer").inert && document.querySelector("form.composer button[type=submit]").disabled),
    "the composer is enabled while offline")
  out("COMPOSER-DISABLED-OFFLINE")
  const refreshes = await jason.evaluate(() => Number(document.documentElement.dataset.refreshes))
  await startHearth(address, ENV).listening
  await live(jason, refreshes + 1)
  await jason.waitForFunction(() => !document.querySelector("form.composer").inert && !document.querySelector("form.composer button[type=submit]").disabled)
  await say(jason, "Back online")
  await david.locator("#message-area .message[data-message-id]", { hasText: "Back online" }).waitFor()
  out("COMPOSER-ENABLED-AFTER-CATCH-UP")

  // Signed out, a permalink leads to the sign-in form, which then returns to it.
  const guest = await browser.newContext({ viewport: wide })
  const guestPage = await guest.newPage()
  await guestPage.goto(`${base}/rooms/${ROOM}/@${ids[1]}`)
  await check(guestPage.url().endsWith("/session/new"), `signed out, the permalink went to ${guestPage.url()}`)
  await guestPage.fill('input[name="email_address"]', "jz@example.com")
  await guestPage.fill('input[name="password"]', PASSWORD)
  await Promise.all([guestPage.waitForURL(`${base}/rooms/${ROOM}/@${ids[1]}`), guestPage.click('button[name="log_in"]')])
  await byId(guestPage, ids[1]).waitFor()
  out("SIGN-IN-RETURNS", guestPage.url())

  // Search results name their room and link to the message.
  await guestPage.goto(`${base}/searches?q=Filler+number+250`)
  const hit = guestPage.locator(".search-result", { hasText: "Filler message number 250 of" }).first()
  const roomLink = hit.locator("a.message__room")
  await check((await roomLink.textContent()).trim() === "All Talk", `the hit names ${await roomLink.textContent()}`)
  const href = await roomLink.getAttribute("href")
  await Promise.all([guestPage.waitForURL(`${base}${href}`), roomLink.click()])
  await guestPage.locator("#message-area .message.message--highlighted", { hasText: "Filler message number 250 of" }).waitFor()
  out("SEARCH-NAMES-ROOM", href)

  await finish()
} catch (error) {
  await fail(error.stack ?? String(error))
}
