// The look in a real browser: Debian's headless Chromium, driven by playwright-core, against
// the `hearth` binary. Run by tests/browser.rs:
//
//   node look.mjs --hearth PATH --work DIR --artifacts DIR [--timeout 150]
//
// 1. Starts `hearth serve` on a free port with a fresh seeded database in --work.
// 2. David signs in. The room, his profile, the room's settings and the search page are
//    screenshot at 1280×900 and 390×844 (a phone: touch, coarse pointer), in the light and
//    the dark colour scheme, into --artifacts (look-<page>-<width>-<scheme>.png).
// 3. At 390 px (and at 360 px) by element boxes: nothing reaches past the right edge and
//    the page does not scroll sideways; the message column is at least 90 % of the width;
//    the sidebar sits behind the menu button, which opens it; the nav's and the composer's
//    controls are at least 44 px. At 1280 px the sidebar shows beside the messages.
//    The composer's toolbar: on a phone it stays hidden when the editor has focus until its
//    button (aria-expanded, aria-controls; Enter and Space toggle it) shows it, then sits
//    above the editor in the flow: the newest message's box is inside the message area, in
//    view, and does not meet the toolbar's; pressing Send (which takes the focus from the
//    editor at mousedown) moves nothing, and the click posts. At 1280 px the toolbar shows on
//    focus and the button is hidden. Screenshots of the focused composer, light and dark.
// 4. In the dark scheme every page's background is dark, in the light one light.
// 5. The room's bell cycles mentions → everything → nothing → invisible → mentions.
// 6. /webmanifest is JSON with icons of 192 and 512 px that are PNGs of that size; Chromium
//    registers the service worker at /service-worker.
// 7. No page threw.
//
// Prints one line per step; exits 0 with "OK" when every step was seen.
import { out, shot, fail, start, newPage, signIn, finish, SEEDED, BOT_KEY, browser, base } from "./harness.mjs"

// David, signed in, in a new context of `options`.
async function signedInContext(options) {
  const page = await signIn(await newPage("david", options.viewport, options), "david@example.com")
  return { context: page.context(), page }
}

// Everything on the page that reaches past the right edge of the viewport (boxes of zero size
// and the closed sidebar, which sits left of the viewport, excepted), and whether the page
// scrolls sideways.
function overflow() {
  const width = document.documentElement.clientWidth
  const offenders = []
  for (const element of document.querySelectorAll("body *")) {
    const box = element.getBoundingClientRect()
    if (box.width === 0 || box.height === 0 || box.right <= 0) continue
    if (element.closest("#sidebar") && !document.querySelector(".room--sidebar-open")) continue
    if (box.right > width + 1 || box.left < -1) {
      // inside a container that scrolls by itself (a wide table), the container counts
      let scroller = element.parentElement
      let contained = false
      while (scroller && scroller !== document.body) {
        const style = getComputedStyle(scroller)
        if (/(auto|scroll|hidden)/.test(style.overflowX) && scroller.getBoundingClientRect().right <= width + 1) {
          contained = true
          break
        }
        scroller = scroller.parentElement
      }
      if (!contained) offenders.push(`${element.tagName.toLowerCase()}${element.id ? "#" + element.id : ""}.${[...element.classList].join(".")} ${Math.round(box.left)}–${Math.round(box.right)}`)
    }
  }
  return { width, scrollWidth: document.documentElement.scrollWidth, offenders: offenders.slice(0, 8) }
}

// The boxes that matter with the composer focused and its toolbar shown, and whether the
// newest message is drawn at its centre (in view, not covered).
function composerBoxes() {
  const box = (e) => e?.getBoundingClientRect().toJSON()
  const messages = [...document.querySelectorAll("#message-area .message[data-message-id]")]
  const newest = messages[messages.length - 1]
  const n = newest.getBoundingClientRect()
  const hit = document.elementFromPoint(n.left + n.width / 2, n.top + n.height / 2)
  return {
    toolbar: box(document.querySelector("#composer trix-toolbar")),
    editor: box(document.querySelector("#composer trix-editor")),
    send: box(document.querySelector("#composer button[type=submit]")),
    area: box(document.getElementById("message-area")),
    newest: box(newest),
    newestText: newest.textContent.trim().replace(/\s+/g, " ").slice(0, 80),
    newestDrawn: newest.contains(hit),
    active: document.activeElement?.id ?? "",
  }
}

const meets = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1

// The composer's toolbar on a phone, shown by its button, by element boxes.
async function checkToolbarShown(page, what) {
  const b = await page.evaluate(composerBoxes)
  if (meets(b.newest, b.toolbar)) await fail(`${what}: the toolbar covers the newest message: ${JSON.stringify(b)}`)
  if (b.toolbar.top < b.area.bottom - 1) await fail(`${what}: the toolbar reaches into the message area: ${JSON.stringify(b)}`)
  if (b.newest.top < b.area.top - 1 || b.newest.bottom > b.area.bottom + 1 || !b.newestDrawn) await fail(`${what}: the newest message is not in view: ${JSON.stringify(b)}`)
  if (b.toolbar.bottom > b.editor.top + 1) await fail(`${what}: the toolbar overlaps the editor: ${JSON.stringify(b)}`)
  if (b.toolbar.right > page.viewportSize().width + 1) await fail(`${what}: the toolbar overflows: ${JSON.stringify(b.toolbar)}`)
  return b
}

function luminance() {
  const [r, g, b] = getComputedStyle(document.body).backgroundColor.match(/\d+(\.\d+)?/g).map(Number)
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255
}

try {
  await start(SEEDED)
  out("HEARTH", base)
  out("CHROMIUM", browser.version())

  // A few messages in room 1, one long word among them.
  for (const body of ["Morning all! Coffee is on.", "Pushed the new build, have a look when you can 🙂",
    "Averyveryverylongwordwithoutanyspacesthatmustwrapinsteadofpushingthepagesidewaysatall", "Lunch at noon?"]) {
    const r = await fetch(`${base}/rooms/1/${BOT_KEY}/messages`, { method: "POST", body })
    if (r.status !== 201) await fail(`bot post answered ${r.status}`)
  }

  const pages = [
    ["room", "/rooms/1"],
    ["profile", "/users/me/profile"],
    ["settings", "/rooms/opens/1/edit"],
    ["search", "/searches?q=build"],
  ]
  const viewports = [
    ["1280", { viewport: { width: 1280, height: 900 } }],
    ["390", { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 }],
  ]
  for (const scheme of ["light", "dark"]) {
    for (const [width, options] of viewports) {
      const { context, page } = await signedInContext({ ...options, colorScheme: scheme })
      for (const [name, path] of pages) {
        await page.goto(`${base}${path}`)
        if (name === "room") await page.waitForSelector("#shared_rooms li", { state: "attached" })
        const file = shot(`look-${name}-${width}-${scheme}.png`)
        await page.screenshot({ path: file })
        const light = await page.evaluate(luminance)
        if (scheme === "dark" && light > 0.2) await fail(`${name} at ${width} in the dark scheme has a light background (${light.toFixed(2)})`)
        if (scheme === "light" && light < 0.8) await fail(`${name} at ${width} in the light scheme has a dark background (${light.toFixed(2)})`)
        if (width === "390") {
          const o = await page.evaluate(overflow)
          if (o.scrollWidth > o.width || o.offenders.length > 0) await fail(`${name} at 390 px overflows: ${JSON.stringify(o)}`)
        }
        out("SCREENSHOT", file, `background luminance ${light.toFixed(2)}`)
        if (name === "room") {
          // The composer focused, its toolbar shown (on a phone by its button).
          if (width === "390") await page.click("#composer .composer__format")
          await page.click("#composer trix-editor")
          await page.waitForSelector("#composer trix-toolbar", { state: "visible" })
          await page.waitForTimeout(300)
          const focused = shot(`look-room-${width}-${scheme}-composer.png`)
          await page.screenshot({ path: focused })
          if (width === "390") {
            await checkToolbarShown(page, `${scheme} 390`)
            const o = await page.evaluate(overflow)
            if (o.scrollWidth > o.width || o.offenders.length > 0) await fail(`the room at 390 px with the toolbar overflows: ${JSON.stringify(o)}`)
          }
          out("SCREENSHOT", focused)
        }
      }
      await context.close()
    }
  }
  out("DARK-IS-DARK")
  out("NO-OVERFLOW-390")

  // The phone's room page by its boxes.
  {
    const { context, page } = await signedInContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true })
    await page.goto(`${base}/rooms/1`)
    await page.waitForSelector("#shared_rooms li", { state: "attached" })
    const boxes = await page.evaluate(() => {
      const box = (s) => document.querySelector(s)?.getBoundingClientRect().toJSON()
      const small = [...document.querySelectorAll("#nav button, #nav a.btn, #composer button, #composer textarea")]
        .map((e) => [e.className || e.tagName, e.getBoundingClientRect()])
        .filter(([, b]) => b.width > 0 && (b.width < 44 || b.height < 44))
        .map(([n, b]) => `${n} ${Math.round(b.width)}×${Math.round(b.height)}`)
      return { width: innerWidth, area: box("#message-area"), sidebar: box("#sidebar"), composer: box("#composer"), small }
    })
    if (boxes.area.width < 0.9 * boxes.width) await fail(`the message column is ${boxes.area.width} of ${boxes.width} px`)
    if (boxes.sidebar.right > 0) await fail(`the closed sidebar shows: ${JSON.stringify(boxes.sidebar)}`)
    if (boxes.small.length > 0) await fail(`touch targets under 44 px: ${boxes.small.join(", ")}`)
    if (boxes.composer.bottom > 844 + 1) await fail(`the composer ends below the viewport: ${boxes.composer.bottom}`)
    out("PHONE-COLUMN", `${Math.round(boxes.area.width)} of ${boxes.width} px (${Math.round((100 * boxes.area.width) / boxes.width)} %)`)
    out("PHONE-TARGETS", "nav and composer controls ≥ 44 px")
    await page.click("[data-sidebar-toggle]")
    await page.waitForFunction(() => document.getElementById("sidebar").getBoundingClientRect().left >= 0)
    await page.waitForTimeout(300)
    await page.screenshot({ path: shot("look-room-390-sidebar-open.png") })
    await page.keyboard.press("Escape")
    await page.waitForFunction(() => document.getElementById("sidebar").getBoundingClientRect().right <= 0)
    out("PHONE-SIDEBAR", "opens from the menu button, closes with Escape")

    // The toolbar behind its button.
    const format = page.locator("#composer .composer__format")
    const editor = page.locator("#composer trix-editor")
    const toolbar = page.locator("#composer trix-toolbar")
    await editor.click()
    await page.waitForTimeout(200)
    if (await toolbar.isVisible()) await fail("on a phone the toolbar shows on focus, before its button is pressed")
    if ((await format.getAttribute("aria-expanded")) !== "false") await fail(`the button says aria-expanded=${await format.getAttribute("aria-expanded")} with the toolbar hidden`)
    await format.click()
    await toolbar.waitFor({ state: "visible", timeout: 5000 }).catch(() => fail("the button did not show the toolbar"))
    const controls = await format.getAttribute("aria-controls")
    const toolbarId = await toolbar.getAttribute("id")
    if (!controls || controls !== toolbarId) await fail(`the button controls ${controls}, the toolbar is ${toolbarId}`)
    if ((await format.getAttribute("aria-expanded")) !== "true") await fail("the button does not say aria-expanded=true with the toolbar shown")
    await page.waitForTimeout(300)
    const shown = await checkToolbarShown(page, "toolbar shown")
    if (shown.active !== "message_body") await fail(`pressing the button took the focus from the editor to ${shown.active}`)
    out("PHONE-TOOLBAR-SHOWN", `${Math.round(shown.toolbar.height)} px above the editor; the newest message ${Math.round(shown.newest.top)}–${Math.round(shown.newest.bottom)} in the area ${Math.round(shown.area.top)}–${Math.round(shown.area.bottom)}, the toolbar from ${Math.round(shown.toolbar.top)}`)

    // Send after the editor loses focus: the mousedown takes the focus, nothing moves, the
    // click lands on Send and posts; the new message shows above the toolbar.
    await editor.pressSequentially("Sent from a phone", { delay: 10 })
    await page.waitForTimeout(200)
    const before = await page.evaluate(composerBoxes)
    const [x, y] = [before.send.left + before.send.width / 2, before.send.top + before.send.height / 2]
    await page.mouse.move(x, y)
    await page.mouse.down()
    await page.waitForTimeout(200)
    const down = await page.evaluate(([x, y]) => ({
      active: document.activeElement?.id ?? "",
      send: document.querySelector("#composer button[type=submit]").getBoundingClientRect().toJSON(),
      hit: !!document.elementFromPoint(x, y)?.closest("#composer button[type=submit]"),
      toolbar: document.querySelector("#composer trix-toolbar").getBoundingClientRect().toJSON(),
    }), [x, y])
    if (down.active === "message_body") await fail("the mousedown on Send left the focus in the editor (the check would prove nothing)")
    if (Math.abs(down.send.top - before.send.top) > 1 || Math.abs(down.send.left - before.send.left) > 1 || !down.hit) await fail(`Send moved when the editor lost focus: ${JSON.stringify(before.send)} → ${JSON.stringify(down.send)}`)
    if (Math.abs(down.toolbar.top - before.toolbar.top) > 1 || down.toolbar.height < 1) await fail(`the toolbar moved when the editor lost focus: ${JSON.stringify(before.toolbar)} → ${JSON.stringify(down.toolbar)}`)
    await page.mouse.up()
    await page.locator("#message-area .message[data-message-id]:not(.message--pending)", { hasText: "Sent from a phone" }).last()
      .waitFor({ state: "attached", timeout: 10000 }).catch(() => fail("the click on Send did not post"))
    await page.waitForTimeout(500)
    const posted = await checkToolbarShown(page, "after Send")
    if (!posted.newestText.includes("Sent from a phone")) await fail(`the newest message is ${posted.newestText}`)
    await page.screenshot({ path: shot("look-room-390-sent-with-toolbar.png") })
    out("PHONE-SEND-AFTER-BLUR", "the layout held when the editor lost focus; the click posted, the post in view above the toolbar")

    // The keyboard: Enter and Space on the button hide and show the toolbar.
    await format.focus()
    await page.keyboard.press("Enter")
    await toolbar.waitFor({ state: "hidden", timeout: 5000 }).catch(() => fail("Enter on the button did not hide the toolbar"))
    if ((await format.getAttribute("aria-expanded")) !== "false") await fail("hidden by Enter, the button says aria-expanded=true")
    const closed = await page.evaluate(composerBoxes)
    if (!closed.newestDrawn || closed.newest.bottom > closed.area.bottom + 1) await fail(`with the toolbar hidden again the newest message is not in view: ${JSON.stringify(closed)}`)
    await page.keyboard.press(" ")
    await toolbar.waitFor({ state: "visible", timeout: 5000 }).catch(() => fail("Space on the button did not show the toolbar"))
    await page.keyboard.press(" ")
    await toolbar.waitFor({ state: "hidden", timeout: 5000 }).catch(() => fail("Space on the button did not hide the toolbar"))
    out("PHONE-TOOLBAR-KEYS", "Enter and Space toggle it, aria-expanded follows")
    await page.setViewportSize({ width: 360, height: 740 })
    for (const [name, path] of [...pages, ["sign-in", "/session/new"], ["people", "/account/users"], ["bots", "/account/bots"],
      ["new-direct", "/rooms/directs/new"], ["new-room", "/rooms/closeds/new"], ["involvement", "/rooms/1/involvement"]]) {
      await page.goto(`${base}${path}`)
      const o = await page.evaluate(overflow)
      if (o.scrollWidth > o.width || o.offenders.length > 0) await fail(`${name} at 360 px overflows: ${JSON.stringify(o)}`)
    }
    out("NO-OVERFLOW-360")
    await context.close()
  }

  // The desktop room: the sidebar beside the messages; the bell cycles.
  {
    const { context, page } = await signedInContext({ viewport: { width: 1280, height: 900 } })
    await page.goto(`${base}/rooms/1`)
    const sidebar = await page.evaluate(() => document.getElementById("sidebar").getBoundingClientRect().toJSON())
    const area = await page.evaluate(() => document.getElementById("message-area").getBoundingClientRect().toJSON())
    if (sidebar.left < 0 || sidebar.width < 200 || area.left < sidebar.right - 1) await fail(`desktop sidebar ${JSON.stringify(sidebar)} area ${JSON.stringify(area)}`)
    out("DESKTOP-SIDEBAR", `${Math.round(sidebar.width)} px beside ${Math.round(area.width)} px of messages`)
    // A desktop keeps the toolbar on focus, without the phone's button.
    await page.click("#composer trix-editor")
    await page.locator("#composer trix-toolbar").waitFor({ state: "visible", timeout: 5000 }).catch(() => fail("at 1280 px the toolbar does not show on focus"))
    if (await page.locator("#composer .composer__format").isVisible()) await fail("at 1280 px the toolbar's button shows")
    out("DESKTOP-TOOLBAR", "shown on focus, no button")
    const seen = [await page.getAttribute(".nav__bell", "data-involvement")]
    for (let i = 0; i < 4; i++) {
      const before = seen[seen.length - 1]
      await page.click(".nav__bell button")
      await page.waitForFunction((prev) => document.querySelector(".nav__bell")?.dataset.involvement !== prev, before)
      if (!page.url().endsWith("/rooms/1")) await fail(`the bell left the room: ${page.url()}`)
      seen.push(await page.getAttribute(".nav__bell", "data-involvement"))
    }
    if (seen.join(" ") !== "mentions everything nothing invisible mentions") await fail(`the bell went ${seen.join(" → ")}`)
    out("BELL", seen.join(" → "))

    // Installable: the manifest, its icons, the service worker.
    const manifest = await (await page.request.get(`${base}/webmanifest`)).json()
    const sizes = manifest.icons.map((i) => i.sizes)
    for (const size of ["192x192", "512x512"]) {
      const icon = manifest.icons.find((i) => i.sizes === size && i.type === "image/png")
      if (!icon) await fail(`the manifest has no ${size} PNG icon: ${JSON.stringify(manifest.icons)}`)
      const png = await (await page.request.get(`${base}${icon.src}`)).body()
      const [w, h] = [png.readUInt32BE(16), png.readUInt32BE(20)]
      if (png.toString("latin1", 1, 4) !== "PNG" || `${w}x${h}` !== size) await fail(`${icon.src} is not a ${size} PNG`)
    }
    if (manifest.display !== "standalone" || manifest.start_url !== "/" || !manifest.name) await fail(`manifest ${JSON.stringify(manifest)}`)
    out("MANIFEST", manifest.name, sizes.join(" "))
    const worker = await page.evaluate(async () => {
      const registration = await navigator.serviceWorker.ready
      return { scope: registration.scope, script: registration.active?.scriptURL }
    })
    if (worker.script !== `${base}/service-worker`) await fail(`service worker ${JSON.stringify(worker)}`)
    out("SERVICE-WORKER", worker.script, "scope", worker.scope)
    await context.close()
  }

  await finish()
} catch (error) {
  await fail(error.stack ?? String(error))
}
