// The small things of the room in a real browser (Debian's headless Chromium, playwright-core,
// the `hearth` binary). Run by tests/suite/browser_small_ones.rs:
//
//   node small_ones.mjs --hearth PATH --work DIR --artifacts DIR --image PNG [--timeout 240]
//
// One seeded server, then a second one without a seed for the first run:
// - SHARE: a file chip and the lightbox have a Share button where `navigator.share` exists (stubbed
//   here): the chip's shares the file's URL and name; the lightbox's shares the file itself where
//   `navigator.canShare({ files })` says so. Where the browser has no Web Share, neither shows.
// - INSTALL: the notifications page shows the iPhone's steps (Share › Add to Home Screen, and that
//   notifications need the installed app) to Safari on an iPhone, Firefox's to Firefox.
// - SKIP: Tab from the top of a page reaches the skip link first, shown on focus; Enter moves the
//   focus to the messages (the room) or the page's main.
// - GLOBE: the globe beside a prompt opens its translations.
// - TOO-OLD: an old browser gets the 406 page.
// - FIRST-RUN: a picture picked in the first-run form becomes the administrator's avatar.
// Screenshots at 1280×900 and 390×844, light and dark. Each step prints one line; "OK" at the end.
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { args, out, shot, fail, check, allowOrigin, start, startHearth, newPage, signIn, connected, finish, SEEDED, BOT_KEY, base } from "./harness.mjs"

const ROOM = 1
const WIDE = { width: 1280, height: 900 }
const PHONE = { width: 390, height: 844 }
const IPHONE_UA = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
const FIREFOX_UA = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
const OLD_CHROME_UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/109.0.0.0 Safari/537.36"

// A page whose `navigator.share` records what it was given (and `canShare` answers
// `window.canShareFiles` for files); `withShare: false` removes Web Share instead.
async function pageWith(who, viewport, { withShare, ...options }) {
  const page = await newPage(who, viewport, options)
  await page.addInitScript((withShare) => {
    if (withShare) {
      window.shared = []
      Navigator.prototype.share = function (data) {
        window.shared.push({ url: data.url ?? null, title: data.title ?? null, files: (data.files ?? []).map((f) => ({ name: f.name, type: f.type, size: f.size })) })
        return Promise.resolve()
      }
      Navigator.prototype.canShare = function (data) { return Boolean(window.canShareFiles) || !data?.files }
    } else {
      delete Navigator.prototype.share
      delete Navigator.prototype.canShare
    }
  }, withShare)
  return page
}

// Screenshots of `page` as it is, light and dark, as `name-WxH-{light,dark}.png`.
async function shots(page, name) {
  const { width, height } = page.viewportSize()
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme })
    await page.screenshot({ path: shot(`${name}-${width}x${height}-${scheme}.png`) })
  }
  await page.emulateMedia({ colorScheme: "light" })
}

const visibleBox = async (locator) => ((await locator.isVisible()) ? locator.boundingBox() : null)

try {
  await start(SEEDED)
  const image = readFileSync(args.image)

  // Two files in the room, posted by the bot: a text file (a chip) and a picture (the lightbox).
  for (const [name, type, bytes] of [["notes.txt", "text/plain", Buffer.from("Agenda: ship it.\n")], ["photo.png", "image/png", image]]) {
    const form = new FormData()
    form.append("attachment", new Blob([bytes], { type }), name)
    const r = await fetch(`${base}/rooms/${ROOM}/${BOT_KEY}/messages`, { method: "POST", body: form })
    await check(r.ok, `the bot posts ${name}: ${r.status}`)
  }

  // SHARE, where the browser has a share sheet.
  const david = await pageWith("david", WIDE, { withShare: true })
  await signIn(david, "david@example.com")
  await david.goto(`${base}/rooms/${ROOM}`)
  await connected(david)
  const chip = david.locator(".message__file", { hasText: "notes.txt" }).last()
  await chip.waitFor({ state: "visible" })
  const chipShare = chip.locator("button.message__file-share")
  const chipBox = await visibleBox(chipShare)
  const chipOuter = await chip.boundingBox()
  await check(chipBox && chipBox.width >= 16 && chipBox.x >= chipOuter.x && chipBox.x + chipBox.width <= chipOuter.x + chipOuter.width + 1, `the chip's Share button sits in the chip: ${JSON.stringify(chipBox)} in ${JSON.stringify(chipOuter)}`)
  await chipShare.click()
  await david.waitForFunction(() => window.shared.length === 1)
  const download = await chip.locator("a.message__file-download").getAttribute("href")
  let shared = await david.evaluate(() => window.shared)
  await check(shared[0].url === new URL(download, base).href && shared[0].title === "notes.txt" && shared[0].files.length === 0, `the chip shares the file's URL and name: ${JSON.stringify(shared)} (download ${download})`)
  out("SHARE-CHIP", JSON.stringify(shared[0]))

  const thumb = david.locator("a.message__attachment-link--image").last()
  await thumb.waitFor({ state: "visible", timeout: 60000 })
  await thumb.click()
  const dialog = david.locator("dialog.lightbox[open]")
  await dialog.waitFor({ state: "visible" })
  const lightboxShare = dialog.locator("button.lightbox__share")
  const lightboxBox = await visibleBox(lightboxShare)
  await check(lightboxBox && lightboxBox.width > 20, `the lightbox's Share button shows: ${JSON.stringify(lightboxBox)}`)
  await david.evaluate(() => { window.canShareFiles = true })
  await lightboxShare.click()
  await david.waitForFunction(() => window.shared.length === 2)
  shared = await david.evaluate(() => window.shared)
  await check(shared[1].files.length === 1 && shared[1].files[0].name === "photo.png" && shared[1].files[0].type === "image/png" && shared[1].files[0].size === image.length && shared[1].url === null, `the lightbox shares the picture itself: ${JSON.stringify(shared[1])}`)
  out("SHARE-LIGHTBOX", JSON.stringify(shared[1]))
  await shots(david, "small-ones-lightbox")
  await david.keyboard.press("Escape")

  // SKIP on the room at 1280: the focused skip link shows at the top; Enter focuses the messages.
  await david.locator("a.skip-link").focus()
  const skipWide = await visibleBox(david.locator("a.skip-link"))
  await check(skipWide && skipWide.y >= 0 && skipWide.y < 60 && skipWide.width > 40, `the focused skip link shows at the top: ${JSON.stringify(skipWide)}`)
  await shots(david, "small-ones-skip-link")
  await david.keyboard.press("Enter")
  const focusedWide = await david.evaluate(() => document.activeElement?.id)
  await check(focusedWide === "message-area", `Enter on the skip link focuses the messages, not ${focusedWide}`)
  out("SKIP-LINK-WIDE", JSON.stringify(skipWide), focusedWide)

  // No Web Share: no Share buttons.
  const jason = await pageWith("jason", PHONE, { withShare: false, isMobile: true, hasTouch: true })
  await signIn(jason, "jason@example.com")
  await jason.goto(`${base}/rooms/${ROOM}`)
  await connected(jason)
  const jasonChip = jason.locator(".message__file", { hasText: "notes.txt" }).last()
  await jasonChip.waitFor({ state: "visible" })
  // SKIP on the room: Tab from the top (nothing focused yet) reaches the skip link first, shown;
  // Enter focuses the messages, and the next Tab goes on from there.
  await check(await jason.evaluate(() => document.activeElement === document.body), "nothing focused on a phone's room")
  await jason.keyboard.press("Tab")
  const skip = await jason.evaluate(() => {
    const a = document.activeElement
    const r = a.getBoundingClientRect()
    return { cls: a.className, x: r.x, y: r.y, w: r.width, h: r.height, first: document.querySelector("a[href], button, input, select, textarea, summary, [tabindex]") === a }
  })
  await check(skip.cls.includes("skip-link") && skip.first && skip.y >= 0 && skip.w > 40 && skip.h > 16 && skip.x >= 0 && skip.x + skip.w <= 390, `Tab from the top focuses the skip link, in view: ${JSON.stringify(skip)}`)
  await shots(jason, "small-ones-skip-link")
  await jason.keyboard.press("Enter")
  const focused = await jason.evaluate(() => document.activeElement?.id)
  await check(focused === "message-area", `Enter on the skip link focuses the messages, not ${focused}`)
  await jason.keyboard.press("Tab")
  const next = await jason.evaluate(() => document.getElementById("message-area").contains(document.activeElement))
  await check(next, "the next Tab goes on inside the messages")
  out("SKIP-LINK", JSON.stringify(skip), focused)
  await check(!(await jasonChip.locator("button.message__file-share").isVisible()), "no Share button on the chip without Web Share")
  await jasonChip.scrollIntoViewIfNeeded()
  await shots(jason, "small-ones-room")
  await jason.locator("a.message__attachment-link--image").last().click()
  await jason.locator("dialog.lightbox[open]").waitFor({ state: "visible" })
  await check(!(await jason.locator("dialog.lightbox button.lightbox__share").isVisible()), "no Share button in the lightbox without Web Share")
  out("SHARE-HIDDEN")

  // INSTALL: Safari on an iPhone, then Firefox on a computer.
  const iphone = await pageWith("iphone", PHONE, { withShare: true, userAgent: IPHONE_UA, isMobile: true, hasTouch: true })
  await signIn(iphone, "jz@example.com")
  await iphone.goto(`${base}/users/me/push_subscriptions`)
  const help = iphone.locator("details.install-help")
  await help.locator("summary").click()
  const iphoneSteps = (await help.locator("[data-install-steps]:visible").allInnerTexts()).join("\n")
  await check(/Add to Home Screen/.test(iphoneSteps) && /iPhone or iPad, notifications only reach/.test(iphoneSteps) && /Share/.test(iphoneSteps), `the iPhone's steps: ${iphoneSteps}`)
  await check(!/Firefox|Edge|Dock/.test(iphoneSteps), `only the iPhone's steps: ${iphoneSteps}`)
  await check((await help.getAttribute("data-platform")) === "ios", "iPhone detected")
  const helpBox = await help.boundingBox()
  await check(helpBox && helpBox.x >= 0 && helpBox.x + helpBox.width <= 391, `the steps fit the phone: ${JSON.stringify(helpBox)}`)
  await help.scrollIntoViewIfNeeded()
  await shots(iphone, "small-ones-install-iphone")
  out("INSTALL-IPHONE", iphoneSteps.split("\n")[0])

  const firefox = await pageWith("firefox", WIDE, { withShare: false, userAgent: FIREFOX_UA })
  await signIn(firefox, "kevin@example.com")
  await firefox.goto(`${base}/users/me/push_subscriptions`)
  // SKIP on another page: Tab from the top, Enter focuses the page's main.
  await firefox.keyboard.press("Tab")
  await check(await firefox.evaluate(() => document.activeElement?.classList.contains("skip-link")), "Tab focuses the skip link on the notifications page")
  await firefox.keyboard.press("Enter")
  await check(await firefox.evaluate(() => document.activeElement?.tagName === "MAIN"), "Enter focuses the page's main")
  out("SKIP-LINK-PAGE", "main")
  const ffHelp = firefox.locator("details.install-help")
  await ffHelp.locator("summary").click()
  const ffSteps = (await ffHelp.locator("[data-install-steps]:visible").allInnerTexts()).join("\n")
  await check(/Firefox on a computer/.test(ffSteps) && !/Home Screen/.test(ffSteps), `Firefox's steps: ${ffSteps}`)
  await shots(firefox, "small-ones-install-firefox")
  out("INSTALL-FIREFOX", ffSteps.slice(0, 60))

  // GLOBE: the sign-in page's prompts, at both sizes.
  for (const viewport of [WIDE, PHONE]) {
    const page = await pageWith(`globe-${viewport.width}`, viewport, { withShare: false })
    await page.goto(`${base}/session/new`)
    const globe = page.locator('details.translation[data-translation="email_address"]')
    const list = globe.locator(".translation__list")
    await check(!(await list.isVisible()), "the translations wait behind the globe")
    const label = await page.locator('label:has(input[name="email_address"])').boundingBox()
    const button = await globe.locator("summary").boundingBox()
    await check(button && label && Math.abs(button.y - label.y) < 24 && button.x > label.x + label.width / 2, `the globe sits at the end of the prompt's label line: ${JSON.stringify(button)} ${JSON.stringify(label)}`)
    await globe.locator("summary").click()
    await list.waitFor({ state: "visible" })
    const spanish = await list.locator('dd[lang="es"]').innerText()
    const box = await list.boundingBox()
    await check(spanish === "Escribe tu dirección de correo" && box.x >= 0 && box.x + box.width <= viewport.width + 1, `the globe opens the translations, in view: ${spanish} ${JSON.stringify(box)}`)
    const languages = await list.locator("dd").count()
    await shots(page, "small-ones-globe")
    out("GLOBE", viewport.width, languages, spanish)
    await page.context().close()
  }

  // TOO-OLD: an old Chrome gets 406 and the page.
  for (const viewport of [WIDE, PHONE]) {
    const page = await pageWith(`old-${viewport.width}`, viewport, { withShare: false, userAgent: OLD_CHROME_UA })
    const response = await page.goto(`${base}/session/new`)
    const heading = await page.locator("h1").innerText()
    await check(response.status() === 406 && heading === "This browser is too old", `406 page: ${response.status()} ${heading}`)
    await shots(page, "small-ones-too-old")
    out("TOO-OLD", viewport.width, response.status())
    await page.context().close()
  }

  // FIRST-RUN: a server without a seed; the picture picked in the form becomes the avatar.
  const fresh = startHearth("127.0.0.1:0", { HEARTH_NO_SEED: "true", HEARTH_DATABASE: join(args.work, "first-run.sqlite3"), HEARTH_DATA_DIR: join(args.work, "first-run") })
  const freshBase = `http://${await fresh.listening}`
  allowOrigin(freshBase)
  allowOrigin(`blob:${freshBase}`)
  const admin = await pageWith("first-run", PHONE, { withShare: false, isMobile: true, hasTouch: true })
  await admin.goto(`${freshBase}/first_run`)
  await admin.setInputFiles('input[name="user[avatar]"]', { name: "me.png", mimeType: "image/png", buffer: image })
  await admin.waitForFunction(() => document.querySelector("[data-first-run-preview]")?.naturalWidth > 0)
  await admin.fill('input[name="user[name]"]', "Grace Hopper")
  await admin.fill('input[name="user[email_address]"]', "grace@example.com")
  await admin.fill('input[name="user[password]"]', "compiler1952")
  await shots(admin, "small-ones-first-run")
  const posted = admin.waitForRequest((r) => r.url().endsWith("/first_run") && r.method() === "POST")
  await admin.click('button[type="submit"]')
  const request = await posted
  await check(/multipart\/form-data/.test(request.headers()["content-type"] ?? "") && Boolean(request.headers()["x-csrf-token"]), `the form went as multipart with the token: ${JSON.stringify(request.headers())}`)
  await admin.waitForURL(/\/rooms\/\d+$/)
  await admin.goto(`${freshBase}/users/me/profile`)
  const photo = admin.locator("img.profile__avatar, .profile__avatar img.avatar__image--photo").first()
  await photo.waitFor({ state: "visible" })
  const natural = await photo.evaluate((img) => img.complete && img.naturalWidth)
  await check(natural > 0, `the profile shows the picture (${natural} px)`)
  out("FIRST-RUN-AVATAR", natural)
  await finish()
} catch (error) {
  await fail(error.stack ?? String(error))
}
