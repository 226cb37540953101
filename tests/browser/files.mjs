// Files in a real browser: Debian's headless Chromium, driven by playwright-core, against the
// `hearth` binary. Run by tests/suite/browser_files.rs:
//
//   node files.mjs --hearth PATH --work DIR --artifacts DIR --image PNG [--timeout 180]
//
// David picks a PNG in the composer of the Designers room (4) and sends it; it goes up through
// @rails/activestorage's DirectUpload (the page's own vendored copy); Jason, watching the room,
// sees the message arrive and its thumbnail come by broadcast, at most 1200×800 and smaller than
// the original. Screenshots at 1280×900 and 390×844. Each step prints one line; "OK" at the end.
import { readFileSync } from "node:fs"
import { args, out, shot, fail, check, start, newPage, signIn, connected, finish, SEEDED, base } from "./harness.mjs"

const ROOM = 4
const uploads = []

// A new context of `options`, signed in as `email` and on the room, its Active Storage
// requests recorded.
async function signInAs(options, who, email) {
  const page = await newPage(who, options.viewport, options)
  page.on("request", (request) => { if (request.url().includes("/rails/active_storage/")) uploads.push(`${who} ${request.method()} ${new URL(request.url()).pathname.split("/").slice(0, 4).join("/")}`) })
  await signIn(page, email)
  await page.goto(`${base}/rooms/${ROOM}`)
  await connected(page)
  return page
}

try {
  await start(SEEDED)
  const wide = { viewport: { width: 1280, height: 900 } }
  const david = await signInAs(wide, "david", "david@example.com")
  const jason = await signInAs(wide, "jason", "jason@example.com")
  const kevin = await signInAs({ viewport: { width: 390, height: 844 }, isMobile: true }, "kevin", "kevin@example.com")
  const original = readFileSync(args.image)

  const attach = david.locator("label.composer__attach")
  const attachBox = await attach.boundingBox()
  await check(attachBox && attachBox.width > 10 && attachBox.y > 700, `the attach button is in the composer: ${JSON.stringify(attachBox)}`)
  out("ATTACH-BUTTON", JSON.stringify(attachBox))
  await david.setInputFiles("input.composer__file", { name: "mountains.png", mimeType: "image/png", buffer: original })
  // It waits in the composer until Send.
  await david.locator(".composer__staged .composer__staged-file").waitFor({ state: "visible" })
  await david.locator('form.composer button[type="submit"]').click()

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
  await jason.screenshot({ path: shot("files-1280x900.png") })
  await kevin.locator('#message-area img.message__attachment[src*="representations"]').first().waitFor({ state: "visible", timeout: 30000 })
  await kevin.locator('#message-area img.message__attachment').last().scrollIntoViewIfNeeded()
  await kevin.screenshot({ path: shot("files-390x844.png") })

  // The lightbox opens the original, with a download link.
  await thumb.first().click()
  const dialog = jason.locator("dialog.lightbox[open]")
  await dialog.waitFor({ state: "visible" })
  await jason.waitForFunction(() => document.querySelector("dialog.lightbox .lightbox__image")?.naturalWidth > 0)
  const full = await dialog.locator(".lightbox__image").evaluate((img) => img.naturalWidth)
  await check(full === 2400, `the lightbox shows the original (${full} px wide)`)
  await check((await dialog.locator("a.lightbox__download").getAttribute("href")).includes("disposition=attachment"), "download link")
  await jason.screenshot({ path: shot("files-lightbox-1280x900.png") })
  out("LIGHTBOX", full)
  await finish()
} catch (error) {
  await fail(error.stack ?? String(error))
}
