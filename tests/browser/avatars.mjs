// Avatars in a real browser: Debian's headless Chromium, driven by playwright-core, against the
// `hearth` binary. Run by tests/suite/browser_avatars.rs:
//
//   node avatars.mjs --hearth PATH --work DIR --artifacts DIR --image PNG [--timeout 180]
//
// David picks a picture on his profile page (the "Change your picture" field); the page comes
// back showing it, a square of 512 px. In All Talk (1) his avatar is then the picture in the
// sidebar's footer and beside his messages, including one he posts while Jason watches: Jason's
// page gets it by broadcast. Each place is checked by its element's box and by the image having
// loaded at 512 px. Screenshots at 1280×900 and 390×844 (sidebar open), light and dark.
// Each step prints one line; "OK" at the end.
import { readFileSync } from "node:fs"
import { args, out, shot, fail, check, start, newPage, signIn, connected, finish, SEEDED, base } from "./harness.mjs"

const ROOM = 1

// A new context with `options`, signed in as `email` (errors recorded under `who`).
const signInAs = async (options, who, email) => signIn(await newPage(who, options.viewport, options), email)

async function openRoom(page) {
  await page.goto(`${base}/rooms/${ROOM}`)
  await connected(page)
}

// The box of `selector`'s last match and whether its image loaded at 512 px. Every match near
// the viewport must have loaded; message avatars are `loading="lazy"`, so those far above it
// (a long list, more than Chromium's lazy-load distance away) are not fetched yet.
async function avatarBox(page, selector) {
  const img = page.locator(selector).last()
  await img.waitFor({ state: "visible", timeout: 30000 })
  await page.waitForFunction((s) => [...document.querySelectorAll(s)]
    .filter((i) => { const b = i.getBoundingClientRect(); return b.bottom > -600 && b.top < innerHeight + 600 })
    .every((i) => i.complete && i.naturalWidth > 0), selector)
  const box = await img.boundingBox()
  const natural = await img.evaluate((i) => ({ w: i.naturalWidth, h: i.naturalHeight, src: i.getAttribute("src") }))
  return { box, natural }
}
const near = (a, b) => Math.abs(a - b) <= 1
const inside = (box, page) => box.x >= 0 && box.y >= 0 && box.x + box.width <= page.viewportSize().width && box.y + box.height <= page.viewportSize().height

try {
  await start(SEEDED)
  const wide = { viewport: { width: 1280, height: 900 } }
  const david = await signInAs(wide, "david", "david@example.com")
  const jason = await signInAs(wide, "jason", "jason@example.com")
  await openRoom(jason)
  await check(await jason.locator('#message-area .message[data-user-id="1"] .message__avatar svg').count() > 0, "David's messages show his initials before")

  // The profile page's picture field.
  await david.goto(`${base}/users/me/profile`)
  const pick = david.locator("label.image-form__pick")
  const pickBox = await pick.boundingBox()
  await check(pickBox && pickBox.width >= 44 && pickBox.height >= 30 && inside(pickBox, david), `the picture field: ${JSON.stringify(pickBox)}`)
  out("PICK-FIELD", JSON.stringify(pickBox))
  await Promise.all([
    david.waitForEvent("load"),
    david.setInputFiles("input.image-form__input", { name: "david.png", mimeType: "image/png", buffer: readFileSync(args.image) }),
  ])
  const profile = await avatarBox(david, ".profile__avatar img.avatar__image--photo")
  await check(profile.natural.w === 512 && profile.natural.h === 512, `profile avatar ${JSON.stringify(profile.natural)}`)
  await check(near(profile.box.width, 96) && near(profile.box.height, 96), `profile avatar box ${JSON.stringify(profile.box)}`)
  await check(/^\/users\/1\/avatar\?v=[1-9]\d*$/.test(profile.natural.src), `versioned URL ${profile.natural.src}`)
  out("PROFILE", JSON.stringify(profile))

  // The room: the sidebar's footer and David's messages.
  await openRoom(david)
  const sidebar = await avatarBox(david, ".sidebar__me img.avatar__image--photo")
  await check(near(sidebar.box.width, 32) && near(sidebar.box.height, 32) && inside(sidebar.box, david), `sidebar avatar box ${JSON.stringify(sidebar.box)}`)
  await check(sidebar.natural.w === 512 && sidebar.natural.src === profile.natural.src, `sidebar avatar ${JSON.stringify(sidebar.natural)}`)
  out("SIDEBAR", JSON.stringify(sidebar.box))

  // A post while Jason watches: his page gets the partial, with the picture, by broadcast.
  const text = `A new face ${Date.now()}`
  await david.fill("#message_body", text)
  await david.press("#message_body", "Enter")
  const live = jason.locator('.message[data-user-id="1"]', { hasText: text })
  await live.waitFor({ state: "visible", timeout: 30000 })
  await live.scrollIntoViewIfNeeded()
  const jasonSees = await avatarBox(jason, `#${await live.getAttribute("id")} .message__avatar img.avatar__image--photo`)
  await check(near(jasonSees.box.width, 36) && near(jasonSees.box.height, 36) && inside(jasonSees.box, jason), `broadcast avatar box ${JSON.stringify(jasonSees.box)}`)
  await check(jasonSees.natural.w === 512 && jasonSees.natural.src === profile.natural.src, `broadcast avatar ${JSON.stringify(jasonSees.natural)}`)
  out("MESSAGE-BROADCAST", JSON.stringify(jasonSees.box))
  // Before the reload Jason's older messages from David still show initials; after it, the picture.
  await openRoom(jason)
  const older = await jason.locator('#message-area .message[data-user-id="1"] .message__avatar svg').count()
  const photos = await jason.locator('#message-area .message[data-user-id="1"] .message__avatar img.avatar__image--photo').count()
  await check(older === 0 && photos > 1, `after a reload: ${photos} pictures, ${older} initials`)
  out("MESSAGES", photos)

  // Screenshots: wide and narrow, light and dark; the narrow one with the sidebar open.
  for (const scheme of ["light", "dark"]) {
    for (const viewport of [{ width: 1280, height: 900 }, { width: 390, height: 844 }]) {
      const narrow = viewport.width < 600
      const page = await signInAs({ viewport, colorScheme: scheme, isMobile: narrow, hasTouch: narrow }, `david-${scheme}-${viewport.width}`, "david@example.com")
      await openRoom(page)
      const msg = await avatarBox(page, '#message-area .message[data-user-id="1"] .message__avatar img.avatar__image--photo')
      const size = narrow ? 28 : 36
      await check(near(msg.box.width, size) && near(msg.box.height, size) && inside(msg.box, page), `${scheme} ${viewport.width}: message avatar ${JSON.stringify(msg.box)}`)
      if (narrow) {
        await page.click("[data-sidebar-toggle]")
        await page.waitForFunction(() => document.getElementById("sidebar").getBoundingClientRect().left >= 0)
        await page.waitForTimeout(400)
      }
      const side = await avatarBox(page, ".sidebar__me img.avatar__image--photo")
      await check(near(side.box.width, 32) && inside(side.box, page), `${scheme} ${viewport.width}: sidebar avatar ${JSON.stringify(side.box)}`)
      const name = `avatars-${viewport.width}x${viewport.height}-${scheme}.png`
      await page.screenshot({ path: shot(name) })
      out("SCREENSHOT", name, JSON.stringify({ message: msg.box, sidebar: side.box }))
      await page.context().close()
    }
  }
  await finish()
} catch (error) {
  await fail(error.stack ?? String(error))
}
