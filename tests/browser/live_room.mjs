// Two people in a real browser: Debian's headless Chromium, driven by playwright-core, against
// the `hearth` binary. Run by tests/browser.rs (so `cargo test` and scripts/test run it):
//
//   node live_room.mjs --hearth PATH --work DIR --artifacts DIR [--assets DIR] [--timeout 150]
//
// 1. Starts `hearth serve` on a free port with a fresh database in --work, from inside --work:
//    the page's scripts are the ones built into the binary (no checkout, no node_modules), or
//    with --assets the page's own scripts from DIR/js.
// 2. David and Jason sign in through the sign-in form, each in their own browser context,
//    and open room 1. Jason types: David sees "Jason is typing…"; Jason clears the field and
//    the notice goes. David posts with Enter: Jason's page shows it live, David's field clears,
//    and each page holds the message once. A screenshot of both windows side by side is kept.
//    A bot posts 32 messages at once: both pages hold them in the order of their ids. David
//    edits his message through its Edit link: the form opens in place, and the saved text
//    shows on both pages.
// 3. Hearth is stopped with SIGTERM (both pages get `server_restart` and show
//    data-cable="disconnected") and started again on the same port and database. A bot posts
//    while the pages are still disconnected; once @rails/actioncable reconnects, each page
//    catches up through /rooms/1/refresh and shows it, with an edit and a delete the bot made
//    meanwhile. Then a post is live again.
// 4. David creates a closed room with Jason and Kevin, then a direct room with both, through
//    the new-room forms: the room and the direct message appear live in Jason's and Kevin's
//    sidebars (the direct room named by the other members). A screenshot is kept.
// 5. Kevin, with JavaScript off, posts through the plain form (POST, redirect): his page shows
//    the message and Jason's shows it live.
// 6. No page threw, and no request left the server's origin (no CDN).
//
// Prints one line per step; exits 0 with "OK" when every step was seen.
import { args, out, fail, start, startHearth, stopHearth, watch, signedIn, sideBySide, finish, SEEDED, BOT_KEY, browser, base, server } from "./harness.mjs"

const ROOM = 1
const nonce = Math.random().toString(36).slice(2, 8)

const signIn = (context, who, email) => signedIn(context, who, email, ROOM)

// The page is live: the heartbeat subscription is connected, the room's stream source is
// subscribed, and the first catch-up has run.
async function live(page, refreshesAtLeast = 1) {
  await page.waitForSelector('html[data-cable="connected"]', { state: "attached" })
  await page.waitForSelector('turbo-cable-stream-source[channel="RoomMessagesChannel"][connected]', { state: "attached" })
  await page.waitForFunction((n) => Number(document.documentElement.dataset.refreshes) >= n, refreshesAtLeast)
}

const message = (page, text) => page.locator("#message-area .message", { hasText: text })
const typingNotice = (page) => page.evaluate(() => document.getElementById("typing_notifications").textContent)

// --- the scenario ----------------------------------------------------------------------------

try {
  // launch() starts Chromium on a new, empty --user-data-dir of its own (removed at close);
  // each person gets an isolated context with its own cookies.
  await start(SEEDED)
  const address = base.slice("http://".length)
  out("HEARTH", base)
  out("CHROMIUM", browser.version())
  const viewport = { width: 760, height: 600 }
  const davidContext = await browser.newContext({ viewport })
  const jasonContext = await browser.newContext({ viewport })
  const david = await signIn(davidContext, "david", "david@example.com")
  const jason = await signIn(jasonContext, "jason", "jason@example.com")
  await Promise.all([live(david), live(jason)])
  out("LIVE-PAGES", "david", "jason")

  // Typing notices.
  await jason.locator("#message_body").pressSequentially("Hi Dav", { delay: 40 })
  await david.waitForFunction(() => document.getElementById("typing_notifications").textContent === "Jason is typing…")
  out("TYPING-SEEN", JSON.stringify(await typingNotice(david)))
  const ownNotice = await typingNotice(jason)
  if (ownNotice !== "") await fail(`Jason sees his own typing notice: ${JSON.stringify(ownNotice)}`)
  await jason.fill("#message_body", "")
  await david.waitForFunction(() => document.getElementById("typing_notifications").textContent === "")
  out("TYPING-STOPPED")

  // A live post.
  const text = `Hello Jason, this is live (${nonce})`
  await david.fill("#message_body", text)
  const posted = Date.now()
  await david.press("#message_body", "Enter")
  await message(jason, text).waitFor()
  out("LIVE", `seen by Jason ${Date.now() - posted} ms after David pressed Enter (as observed by the driver)`)
  await message(david, text).waitFor()
  await david.waitForFunction(() => document.getElementById("message_body").value === "")
  out("COMPOSER-CLEARED")
  for (const [who, page] of [["david", david], ["jason", jason]]) {
    const count = await message(page, text).count()
    if (count !== 1) await fail(`${who}'s page holds the message ${count} times`)
  }
  out("ONCE-EACH")

  // A burst of posts at once: both pages hold them in the order of the messages' ids.
  const BURST = 32
  const burst = await Promise.all(
    Array.from({ length: BURST }, (_, i) =>
      fetch(`${base}/rooms/${ROOM}/${BOT_KEY}/messages`, { method: "POST", body: `Burst ${i} (${nonce})` }),
    ),
  )
  if (burst.some((r) => r.status !== 201)) await fail(`burst answered ${burst.map((r) => r.status)}`)
  const burstIds = burst.map((r) => Number(r.headers.get("location").split("@")[1]))
  for (const [who, page] of [["david", david], ["jason", jason]]) {
    await page.waitForFunction(
      ([tag, n]) => [...document.querySelectorAll("#message-area .message")].filter((m) => m.textContent.includes(tag)).length === n,
      [`(${nonce})`, BURST + 1],
    )
    const ids = await page.evaluate(() =>
      [...document.querySelectorAll("#message-area .message[data-message-id]")].map((m) => Number(m.dataset.messageId)),
    )
    const swapped = ids.filter((id, i) => i > 0 && ids[i - 1] >= id).length
    if (swapped > 0) await fail(`${who}'s page holds ${swapped} messages out of id order: ${ids.slice(-BURST - 2)}`)
  }
  out("ORDERED", `${BURST} concurrent posts in id order on both pages`)

  // The message's Edit link opens the edit form in place (a turbo frame); saving replaces the
  // message on both pages, without leaving the room.
  const ownId = await message(david, text).getAttribute("id")
  const own = david.locator(`#${ownId}`)
  await own.locator("summary").click()
  await own.locator("a.message__action", { hasText: "Edit" }).click()
  // The edit form's textarea becomes a Trix editor holding the body.
  const field = own.locator("turbo-frame trix-editor")
  await field.waitFor()
  await david.waitForFunction((id) => document.querySelector(`#${id} trix-editor`)?.editor, ownId)
  const held = await field.evaluate((el) => el.editor.getDocument().toString().trim())
  if (held !== text) await fail(`the edit form holds ${JSON.stringify(held)}`)
  const editedLive = `Edited in place (${nonce})`
  await field.fill(editedLive)
  await own.locator('button[type="submit"]', { hasText: "Save changes" }).click()
  await Promise.all([message(david, editedLive).waitFor(), message(jason, editedLive).waitFor()])
  if (!david.url().endsWith(`/rooms/${ROOM}`)) await fail(`editing left the room: ${david.url()}`)
  if ((await david.locator("#message-area .message__edit-form").count()) !== 0) await fail("the edit form stayed open")
  out("EDITED-IN-PLACE")
  out("SCREENSHOT", await sideBySide([["David (posted)", david], ["Jason (live)", jason]], "live-message.png"))

  // A restart: both pages are told, reconnect by themselves and catch up.
  await stopHearth(server)
  await Promise.all([
    david.waitForSelector('html[data-cable="disconnected"]', { state: "attached" }),
    jason.waitForSelector('html[data-cable="disconnected"]', { state: "attached" }),
  ])
  out("DISCONNECTED", "server_restart")
  await startHearth(address, SEEDED).listening
  const restarted = Date.now()
  out("RESTARTED", base)
  const awayText = `Posted while you were away (${nonce})`
  const bot = await fetch(`${base}/rooms/${ROOM}/${BOT_KEY}/messages`, { method: "POST", body: awayText })
  if (bot.status !== 201) await fail(`bot post answered ${bot.status}`)
  const states = await Promise.all([david, jason].map((p) => p.evaluate(() => document.documentElement.dataset.cable)))
  if (states.some((s) => s !== "disconnected")) {
    await fail(`a page reconnected before the bot's post (${states}); the catch-up was not exercised`)
  }
  // An edit and a delete while away, too.
  const editedText = `Edited while you were away (${nonce})`
  const botMessage = (id) => `${base}/rooms/${ROOM}/${BOT_KEY}/messages/${id}`
  const edited = await fetch(botMessage(burstIds[0]), { method: "PATCH", body: editedText })
  const deleted = await fetch(botMessage(burstIds[1]), { method: "DELETE" })
  if (edited.status !== 204 || deleted.status !== 204) await fail(`bot edit/delete answered ${edited.status}/${deleted.status}`)
  out("POSTED-WHILE-DISCONNECTED")
  await Promise.all([message(david, awayText).waitFor(), message(jason, awayText).waitFor()])
  for (const page of [david, jason]) {
    await message(page, editedText).waitFor()
    await page.waitForFunction((id) => !document.querySelector(`#message-area .message[data-message-id="${id}"]`), burstIds[1])
  }
  out("CAUGHT-UP-CHANGES", "an edit and a delete made while away")
  await Promise.all([live(david, 2), live(jason, 2)])
  out("CAUGHT-UP", `${Date.now() - restarted} ms after the restart`)
  const again = `Live again after the restart (${nonce})`
  // The composer (a Trix editor, which Playwright does not see as disabled) is enabled again
  // after the catch-up.
  await jason.waitForFunction(() => !document.querySelector("form.composer").inert)
  await jason.fill("#message_body", again)
  await jason.press("#message_body", "Enter")
  await message(david, again).waitFor().catch(async () => {
    // Say what each side saw, so an intermittent failure here can be told apart: the post
    // never sent (composer state), sent and failed (marked), or sent and not delivered.
    const state = (page) =>
      page.evaluate((text) => {
        const root = document.documentElement
        const form = document.querySelector("form.composer")
        const mine = [...document.querySelectorAll("#message-area .message")].filter((m) => m.textContent.includes(text))
        return JSON.stringify({
          cable: root.dataset.cable,
          refreshes: root.dataset.refreshes,
          offline: root.classList.contains("offline"),
          inert: form?.inert,
          composer: document.getElementById("message_body")?.textContent,
          messages: mine.map((m) => m.className),
        })
      }, again)
    await fail(`the post after the restart did not reach David: jason ${await state(jason)}, david ${await state(david)}`)
  })
  out("LIVE-AFTER-RESTART")
  out("SCREENSHOT", await sideBySide([["David", david], ["Jason", jason]], "after-restart.png"))

  // New rooms appear live in the members' sidebars.
  const kevinLiveContext = await browser.newContext({ viewport })
  const kevinLive = await signIn(kevinLiveContext, "kevin", "kevin@example.com")
  await live(kevinLive)
  for (const page of [jason, kevinLive]) {
    await page.waitForFunction(
      () => document.querySelectorAll("#user_sidebar turbo-cable-stream-source[connected]").length === 3,
    )
  }
  const creator = await davidContext.newPage()
  watch(creator, "david")
  await creator.goto(`${base}/rooms/closeds/new`)
  const roomName = `Closed room ${nonce}`
  await creator.fill("#room_name", roomName)
  // Members are chosen through the people picker (its suggestions come from /autocompletable/users).
  for (const [id, name] of [[2, "Jason"], [4, "Kevin"]]) {
    await creator.fill("[data-people-query]", name.slice(0, 3))
    await creator.locator(".people-picker__suggestion", { hasText: name }).first().click()
    await creator.waitForFunction((v) => document.querySelector(`input[name="user_ids[]"][value="${v}"]`)?.checked, id)
  }
  await Promise.all([creator.waitForURL(/\/rooms\/\d+$/), creator.click('#room_form button[type="submit"]')])
  await Promise.all(
    [jason, kevinLive].map((page) => page.locator("#shared_rooms li", { hasText: roomName }).waitFor()),
  )
  out("CLOSED-ROOM-LIVE", roomName)
  await creator.goto(`${base}/rooms/directs/new`)
  // Members are chosen through the people picker (its suggestions come from /autocompletable/users).
  for (const [id, name] of [[2, "Jason"], [4, "Kevin"]]) {
    await creator.fill("[data-people-query]", name.slice(0, 3))
    await creator.locator(".people-picker__suggestion", { hasText: name }).first().click()
    await creator.waitForFunction((v) => document.querySelector(`input[name="user_ids[]"][value="${v}"]`)?.checked, id)
  }
  await Promise.all([creator.waitForURL(/\/rooms\/\d+$/), creator.click('#room_form button[type="submit"]')])
  await Promise.all([
    jason.locator("#direct_rooms li", { hasText: "David, Kevin" }).waitFor(),
    kevinLive.locator("#direct_rooms li", { hasText: "David, Jason" }).waitFor(),
  ])
  out("DIRECT-ROOM-LIVE")
  out("SCREENSHOT", await sideBySide([["Jason", jason], ["Kevin", kevinLive]], "new-rooms.png"))
  await kevinLiveContext.close()

  // Without JavaScript the form posts and redirects.
  const kevinContext = await browser.newContext({ viewport, javaScriptEnabled: false })
  const kevin = await signIn(kevinContext, "kevin", "kevin@example.com")
  const plain = `Sent without JavaScript (${nonce})`
  await kevin.fill("#message_body", plain)
  await Promise.all([kevin.waitForURL(`${base}/rooms/${ROOM}`), kevin.click('form.composer button[type="submit"]')])
  await message(kevin, plain).waitFor({ state: "attached" })
  await message(jason, plain).waitFor()
  out("NO-JS-POST")

  await finish()
} catch (error) {
  await fail(error.stack ?? String(error))
}
