// Threads in a real browser: Debian's headless Chromium, driven by playwright-core, against the
// `hearth` binary with the seed. Run by tests/suite/browser_threads.rs:
//
//   node threads.mjs --hearth PATH --work DIR --artifacts DIR [--timeout 240]
//
// Jason and David (two tabs) are on the main room at 1280×900. Jason opens the last message's
// menu and "Reply in thread": the thread opens in the panel beside the room (boxes measured),
// he replies there, and the parent's summary ("1 reply", his face) appears live in both of
// David's tabs. On a 390×844 phone, David follows the summary: the thread opens as its own
// page (no panel), with its composer. The panel's close button closes it. Screenshots at
// 1280×900 and 390×844, light and dark. Then the inbox: Jason mentions David in the thread
// and replies there again; both land in David's inbox and on the sidebar's badge of his two
// tabs, live; David opens the reply from his inbox in one tab (read there), and the badge of
// the other tab goes back. The inbox page is shot at 1280×900 and 390×844, light and dark.
// Each step prints one line; "OK" at the end.
import { out, shot, fail, check, start, newPage, signIn, connected, finish, SEEDED, base, browser, watch } from "./harness.mjs"

const ROOM = 1
const REPLY = "Tacos at noon?"

async function shots(page, name) {
  await page.screenshot({ path: shot(`${name}.png`) })
  await page.emulateMedia({ colorScheme: "dark" })
  await page.screenshot({ path: shot(`${name}-dark.png`) })
  await page.emulateMedia({ colorScheme: "light" })
}

try {
  await start(SEEDED)
  const jason = await newPage("jason")
  await signIn(jason, "jason@example.com")
  const david = await newPage("david")
  await signIn(david, "david@example.com")
  const davidAgain = await david.context().newPage()
  watch(davidAgain, "david's second tab")
  for (const page of [jason, david, davidAgain]) {
    await page.goto(`${base}/rooms/${ROOM}`)
    await connected(page)
  }

  // The last message of the room is the parent.
  const parent = jason.locator("#message-area .message[data-message-id]").last()
  const parentDom = await parent.getAttribute("id")
  await parent.hover()
  await parent.locator(".message__actions-button").click()
  await parent.locator(".message__action--thread button").click()
  const panel = jason.locator("#thread_panel")
  await panel.waitFor({ state: "visible", timeout: 10000 })
  const frame = jason.frameLocator("#thread_panel iframe")
  await frame.locator("#message_body").waitFor({ state: "visible", timeout: 10000 })
  const area = await jason.locator("#message-area").boundingBox()
  const side = await panel.boundingBox()
  await check(side.x >= area.x + area.width - 1 && side.width >= 300, `the panel ${JSON.stringify(side)} is beside the messages ${JSON.stringify(area)}`)
  await check(jason.url().endsWith(`/rooms/${ROOM}`), `the room stays: ${jason.url()}`)
  await check(!(await frame.locator("#sidebar").isVisible()), "the panel shows no sidebar")
  out("PANEL-BESIDE", JSON.stringify(side))

  // A reply in the panel: the parent's summary in David's two tabs.
  await frame.locator("#message_body").fill(REPLY)
  await frame.locator("#message_body").press("Enter")
  await frame.locator(`.message .trix-content:has-text("${REPLY}")`).waitFor({ timeout: 10000 })
  for (const page of [david, davidAgain, jason]) {
    const summary = page.locator(`#thread_summary_${parentDom} .thread-summary__count`)
    await summary.waitFor({ state: "visible", timeout: 10000 })
    await check((await summary.textContent()).trim() === "1 reply", "the summary counts one reply")
    await check(await page.locator(`#thread_summary_${parentDom} img[src^="/users/2/avatar"]`).count() === 1, "Jason's face on the summary")
  }
  out("LIVE-IN-EVERY-TAB", "1 reply")
  await jason.locator(`#thread_summary_${parentDom}`).scrollIntoViewIfNeeded()
  await shots(jason, "threads-1280x900")
  await shots(david, "threads-room-1280x900")

  // On a phone the summary opens the thread as its own page.
  const phone = await (await david.context().browser().newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true })).newPage()
  watch(phone, "david's phone")
  await signIn(phone, "david@example.com")
  await phone.goto(`${base}/rooms/${ROOM}`)
  await connected(phone)
  const link = phone.locator(`#thread_summary_${parentDom} a`)
  await link.scrollIntoViewIfNeeded()
  await Promise.all([phone.waitForURL((url) => url.pathname !== `/rooms/${ROOM}`), link.click()])
  await check(!phone.url().endsWith(`/rooms/${ROOM}`), `the thread's own page: ${phone.url()}`)
  await phone.locator(".room--thread .thread-parent .message").waitFor({ timeout: 10000 })
  await check(await phone.locator("#thread_panel").count() === 0, "no panel on the thread's page")
  const composer = await phone.locator("#message_body").boundingBox()
  await check(composer && composer.x >= 0 && composer.x + composer.width <= 391, `the composer fits: ${JSON.stringify(composer)}`)
  await check(await phone.locator(`.message .trix-content:has-text("${REPLY}")`).count() === 1, "the reply on the thread's page")
  await check(await phone.locator(".composer__also-send").isVisible(), "also send to the room")
  out("PHONE-OWN-PAGE", phone.url())
  await shots(phone, "threads-390x844")

  // The panel's close button closes it; the room stays.
  await frame.locator("[data-thread-close]").click()
  await panel.waitFor({ state: "hidden", timeout: 5000 })
  await check(jason.url().endsWith(`/rooms/${ROOM}`), "still in the room")
  out("PANEL-CLOSES")

  await inbox({ jason, david, davidAgain, phone, parentDom })
  await finish()
} catch (error) {
  await fail(error?.stack ?? String(error))
}

// The count the badge of `page` shows (`data-count`).
async function badge(page) {
  return Number(await page.locator("#inbox_badge").getAttribute("data-count"))
}

async function badgeAt(page, count, what) {
  const deadline = Date.now() + 10000
  while ((await badge(page)) !== count) {
    if (Date.now() > deadline) throw new Error(`${what}: the badge shows ${await badge(page)}, not ${count}`)
    await page.waitForTimeout(50)
  }
}

// Jason posts `html` in room `room` as the composer would, through the page's own session.
async function postHtml(page, room, html) {
  const status = await page.evaluate(async ({ room, html }) => {
    const token = document.querySelector('meta[name="csrf-token"]').content
    const body = new URLSearchParams({ "message[body]": html, "message[body_format]": "html", authenticity_token: token })
    return (await fetch(`/rooms/${room}/messages`, { method: "POST", body, redirect: "manual" })).status
  }, { room, html })
  await check(status < 400, `the post answered ${status}`)
}

async function inbox({ jason, david, davidAgain, phone, parentDom }) {
  await davidAgain.locator("#inbox_badge").waitFor({ state: "attached", timeout: 10000 })
  const before = await badge(davidAgain)
  const thread = Number((await jason.locator(`#thread_summary_${parentDom} a`).first().getAttribute("href")).split("/").pop())
  const sgid = await jason.evaluate(async () => {
    const people = await (await fetch("/autocompletable/users?query=David")).json()
    return people.find((p) => p.value === 1).sgid
  })
  await postHtml(jason, thread, `<div><action-text-attachment sgid="${sgid}" content-type="application/vnd.campfire.mention"></action-text-attachment> can you taste-test?</div>`)
  await postHtml(jason, thread, "<div>Salsa verde or roja?</div>")
  for (const page of [david, davidAgain]) await badgeAt(page, before + 2, "David's tab")
  out("INBOX-BADGE-LIVE", `${before} → ${before + 2}`)

  await david.goto(`${base}/inbox`)
  await david.locator("#inbox_items .inbox-item--unread").first().waitFor({ timeout: 10000 })
  const first = david.locator("#inbox_items .inbox-item").first()
  await check((await first.textContent()).includes("Salsa verde or roja?"), "the newest item first")
  await check(await david.locator('.inbox-item--mentions.inbox-item--unread:has-text("can you taste-test?")').count() === 1, "the mention, unread")
  await check(await david.locator('.inbox-item--replies.inbox-item--unread:has-text("Salsa verde")').count() === 1, "the reply, unread")
  await shots(david, "inbox-1280x900")
  out("INBOX-LISTS", await david.locator("#inbox_items .inbox-item").count())

  // Reading the items in their thread in one tab clears the badge of the other.
  await check((await first.locator("a").getAttribute("href")).startsWith(`/rooms/${thread}`), "the item links into the thread")
  await first.locator("a").first().click()
  await david.waitForURL(new RegExp(`/rooms/${thread}`), { timeout: 10000 })
  await badgeAt(davidAgain, before, "the other tab after the read")
  out("READ-CLEARS-OTHER-TAB", `${before + 2} → ${before}`)

  await phone.goto(`${base}/inbox`)
  await phone.locator("#inbox_items").waitFor({ timeout: 10000 })
  const width = await phone.evaluate(() => document.documentElement.scrollWidth)
  await check(width <= 390, `the inbox fits the phone: ${width}px`)
  await shots(phone, "inbox-390x844")
  out("INBOX-PHONE", width)
}
