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
