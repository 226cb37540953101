// The look of the room where a team spends its day, by element boxes, in a real browser:
// Debian's headless Chromium, driven by playwright-core, against the `hearth` binary. Run by
// tests/suite/browser_look.rs:
//
//   node campfire_look.mjs --hearth PATH --work DIR --artifacts DIR [--timeout 240]
//
// The bot posts into the first room, then David posts from the composer with its Send button.
// In the light and the dark colour scheme, at 1280×900 (a mouse) and at 390×844 (a phone:
// touch, a coarse pointer), David's room is measured:
//
// - OWN-RIGHT: his message's bubble sits at the right edge of the list, its avatar right of it;
// - OTHER-LEFT: the bot's message sits at the left edge, its avatar left of its bubble;
// - BUBBLES: both bubbles have a background of their own, unlike the page, and round corners;
// - MENU-HOVER: with a mouse the "…" button is invisible until the message is hovered (or holds
//   the focus), then shown; on a touch screen it is visible without hover, and a tap opens the menu;
// - ROOM-PILLS: the sidebar's rooms are pills (a radius of at least half their height) as wide
//   as their names, not the sidebar;
// - PEOPLE-FACES: direct rooms and the people one click away show an avatar image, loaded;
// - FOOTER: the administrator's own avatar in the sidebar's footer keeps its 32×32 beside the
//   five buttons, all inside the sidebar;
// - COMPOSER: the composer is a rounded field with the attach button and a round Send button
//   drawing an arrow (an SVG, no visible text) inside it, the search button left of it;
// - screenshots, light and dark, at both sizes: the room (campfire-look-<width>-<scheme>.png)
//   and a second view (the open "…" menu on a desktop, the open sidebar on a phone:
//   campfire-look-<width>-<scheme>-menu.png / -sidebar.png).
//
// Prints one line per step; exits 0 with "OK" when every step was seen.
import { out, shot, fail, check, start, newPage, signIn, connected, finish, SEEDED, BOT_KEY, base } from "./harness.mjs"

const ROOM = 1
const OTHER = "Deploy finished, all green."
const MINE = "Ship it!"

// Boxes and styles of the room, measured in the page.
function measure({ mine, other }) {
  const box = (e) => e?.getBoundingClientRect().toJSON() ?? null
  const messages = [...document.querySelectorAll("#message-area .message[data-message-id]:not(.message--pending)")]
  const find = (text) => messages.filter((m) => m.textContent.includes(text)).at(-1)
  const parts = (m) => m && {
    me: m.classList.contains("message--me"),
    row: box(m),
    body: box(m.querySelector(".message__body")),
    avatar: box(m.querySelector(".message__avatar img, .message__avatar svg")),
    background: getComputedStyle(m.querySelector(".message__body")).backgroundColor,
    radius: parseFloat(getComputedStyle(m.querySelector(".message__body")).borderTopLeftRadius),
  }
  const page = getComputedStyle(document.body).backgroundColor
  const area = getComputedStyle(document.getElementById("message-area")).backgroundColor
  return {
    list: box(document.querySelector("#message-area .messages")),
    mine: parts(find(mine)),
    other: parts(find(other)),
    page: area === "rgba(0, 0, 0, 0)" ? page : area,
  }
}

// The "…" button of the message holding `text`: how visible it is.
function menuButton(text) {
  const message = [...document.querySelectorAll("#message-area .message[data-message-id]")].filter((m) => m.textContent.includes(text)).at(-1)
  const summary = message.querySelector(".message__actions summary")
  const style = getComputedStyle(summary)
  return { opacity: Number(style.opacity), visibility: style.visibility, display: style.display, box: summary.getBoundingClientRect().toJSON() }
}

// The sidebar's rooms and people.
function sidebarBoxes() {
  const rooms = [...document.querySelectorAll("#shared_rooms .room-link a")].map((a) => {
    const b = a.getBoundingClientRect()
    return { name: a.textContent.trim(), width: b.width, height: b.height, radius: parseFloat(getComputedStyle(a).borderTopLeftRadius), border: getComputedStyle(a).borderTopStyle }
  })
  const faces = (selector) => [...document.querySelectorAll(selector)].map((item) => {
    const img = item.querySelector("img.room-link__face")
    const b = img?.getBoundingClientRect()
    return { name: item.textContent.trim(), img: !!img, loaded: !!img && img.complete && img.naturalWidth > 0, width: b?.width ?? 0, height: b?.height ?? 0, src: img?.getAttribute("src") ?? "" }
  })
  return {
    sidebar: document.getElementById("sidebar").getBoundingClientRect().toJSON(),
    rooms,
    directs: faces("#direct_rooms .room-link"),
    people: faces("#direct_placeholders .room-link"),
  }
}

// The composer's row.
function composerBoxes() {
  const box = (s) => document.querySelector(s)?.getBoundingClientRect().toJSON() ?? null
  const send = document.querySelector("#composer form.composer button[type=submit]")
  const form = document.querySelector("#composer form.composer")
  const visibleText = [...send.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent.trim()).join("")
  const svg = send.querySelector("svg")
  return {
    form: box("#composer form.composer"),
    formRadius: parseFloat(getComputedStyle(form).borderTopLeftRadius),
    formBorder: getComputedStyle(form).borderTopStyle,
    send: send.getBoundingClientRect().toJSON(),
    sendRadius: parseFloat(getComputedStyle(send).borderTopLeftRadius),
    sendType: send.type,
    sendText: visibleText,
    sendLabel: send.textContent.trim(),
    arrow: svg ? { box: svg.getBoundingClientRect().toJSON(), paths: svg.querySelectorAll("path, line, polyline").length } : null,
    attach: box("#composer .composer__attach"),
    editor: box("#composer trix-editor"),
    search: box("#composer .composer__search"),
  }
}

const inside = (inner, outer, slack = 1) => inner && outer && inner.left >= outer.left - slack && inner.right <= outer.right + slack && inner.top >= outer.top - slack && inner.bottom <= outer.bottom + slack
const rgb = (color) => (color.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number)
const distinct = (a, b) => rgb(a).reduce((sum, v, i) => sum + Math.abs(v - rgb(b)[i]), 0) >= 12

try {
  await start(SEEDED)
  out("HEARTH", base)
  const r = await fetch(`${base}/rooms/${ROOM}/${BOT_KEY}/messages`, { method: "POST", body: OTHER })
  await check(r.status === 201, `the bot's post answered ${r.status}`)

  const sizes = [
    ["1280", { viewport: { width: 1280, height: 900 } }],
    ["390", { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 }],
  ]
  let posted = false
  for (const scheme of ["light", "dark"]) {
    for (const [width, options] of sizes) {
      const what = `${width} ${scheme}`
      const phone = width === "390"
      const page = await signIn(await newPage(`david ${what}`, options.viewport, { ...options, colorScheme: scheme }), "david@example.com")
      await page.goto(`${base}/rooms/${ROOM}`)
      await connected(page)
      await page.waitForSelector("#shared_rooms li", { state: "attached" })

      // David posts with the composer's Send button (once: the other passes find it posted).
      if (!posted) {
        await page.click("#composer trix-editor")
        await page.keyboard.type(MINE)
        await page.click("#composer form.composer button[type=submit]")
        posted = true
      }
      await page.locator("#message-area .message[data-message-id]:not(.message--pending)", { hasText: MINE }).last()
        .waitFor({ state: "attached", timeout: 15000 }).catch(() => fail(`${what}: David's message did not arrive`))
      await page.mouse.move(2, 2)
      await page.evaluate(() => { const area = document.getElementById("message-area"); area.scrollTop = area.scrollHeight })
      await page.waitForTimeout(400)

      const m = await page.evaluate(measure, { mine: MINE, other: OTHER })
      await check(m.mine && m.other, `${what}: the two messages are not both on the page: ${JSON.stringify(m)}`)
      const { list, mine, other } = m
      await check(mine.me && !other.me, `${what}: message--me is ${mine.me} on David's, ${other.me} on the bot's`)
      // One's own: at the right edge, the avatar right of the bubble.
      await check(list.right - mine.avatar.right <= 12, `${what}: David's avatar is ${Math.round(list.right - mine.avatar.right)} px from the list's right edge: ${JSON.stringify(m)}`)
      await check(mine.avatar.left >= mine.body.right - 1 && mine.avatar.left - mine.body.right <= 16, `${what}: David's avatar is not just right of his bubble: ${JSON.stringify(mine)}`)
      await check(mine.body.left - list.left > list.width * 0.25, `${what}: David's short message does not sit right: ${JSON.stringify(mine.body)} in ${JSON.stringify(list)}`)
      out("OWN-RIGHT", what, `bubble ${Math.round(mine.body.left)}–${Math.round(mine.body.right)}, avatar ${Math.round(mine.avatar.left)}–${Math.round(mine.avatar.right)}, list ${Math.round(list.left)}–${Math.round(list.right)}`)
      // Another's: at the left edge, the avatar left of the bubble.
      await check(other.avatar.left - list.left <= 12, `${what}: the bot's avatar is ${Math.round(other.avatar.left - list.left)} px from the list's left edge`)
      await check(other.body.left >= other.avatar.right - 1 && other.body.left - other.avatar.right <= 16, `${what}: the bot's bubble is not just right of its avatar: ${JSON.stringify(other)}`)
      await check(list.right - other.body.right > list.width * 0.1, `${what}: the bot's short message reaches the right: ${JSON.stringify(other.body)}`)
      out("OTHER-LEFT", what, `avatar ${Math.round(other.avatar.left)}–${Math.round(other.avatar.right)}, bubble ${Math.round(other.body.left)}–${Math.round(other.body.right)}`)
      // Bubbles.
      for (const [who, b] of [["David's", mine], ["the bot's", other]]) {
        await check(b.background !== "rgba(0, 0, 0, 0)" && distinct(b.background, m.page), `${what}: ${who} bubble ${b.background} is not distinct from the page ${m.page}`)
        await check(b.radius >= 8, `${what}: ${who} bubble has corners of ${b.radius} px`)
      }
      out("BUBBLES", what, `page ${m.page}, others ${other.background}, own ${mine.background}, radius ${other.radius} px`)

      // The "…" button: hover on a desktop, always on a touch screen.
      const media = await page.evaluate(() => ({ fine: matchMedia("(hover: hover) and (pointer: fine)").matches, coarse: matchMedia("(pointer: coarse)").matches }))
      const rest = await page.evaluate(menuButton, MINE)
      if (phone) {
        await check(media.coarse && !media.fine, `${what}: the phone context is not a touch screen: ${JSON.stringify(media)}`)
        await check(rest.opacity >= 0.5 && rest.visibility === "visible" && rest.display !== "none" && rest.box.width >= 28, `${what}: the "…" button is not shown on a touch screen: ${JSON.stringify(rest)}`)
        await page.tap("#message-area .message:last-child .message__actions summary")
        await page.locator("#message-area .message:last-child .message__actions-menu").waitFor({ state: "visible", timeout: 5000 }).catch(() => fail(`${what}: a tap on "…" did not open the menu`))
        const menu = await page.evaluate(() => document.querySelector("#message-area .message:last-child .message__actions-menu").getBoundingClientRect().toJSON())
        await check(menu.left >= -1 && menu.right <= options.viewport.width + 1, `${what}: the open menu leaves the screen: ${JSON.stringify(menu)}`)
        await page.keyboard.press("Escape")
        out("MENU-HOVER", what, `shown without hover (opacity ${rest.opacity}), a tap opens the menu`)
      } else {
        await check(media.fine, `${what}: the desktop context has no fine pointer: ${JSON.stringify(media)}`)
        await check(rest.opacity === 0 || rest.visibility === "hidden", `${what}: the "…" button shows without hover: ${JSON.stringify(rest)}`)
        const otherRest = await page.evaluate(menuButton, OTHER)
        await check(otherRest.opacity === 0 || otherRest.visibility === "hidden", `${what}: the bot's "…" button shows without hover: ${JSON.stringify(otherRest)}`)
        await page.locator("#message-area .message[data-message-id]", { hasText: MINE }).last().hover()
        await page.waitForTimeout(450)
        const hovered = await page.evaluate(menuButton, MINE)
        await check(hovered.opacity === 1 && hovered.visibility === "visible", `${what}: hovered, the "…" button is not shown: ${JSON.stringify(hovered)}`)
        await check(hovered.box.right <= mine.body.left + 1, `${what}: David's "…" is not left of his bubble: ${JSON.stringify(hovered.box)}`)
        await page.mouse.move(2, 2)
        await page.waitForTimeout(450)
        const left = await page.evaluate(menuButton, MINE)
        await check(left.opacity === 0 || left.visibility === "hidden", `${what}: the "…" button stays after the pointer left: ${JSON.stringify(left)}`)
        out("MENU-HOVER", what, `opacity ${rest.opacity} at rest, ${hovered.opacity} on hover, ${left.opacity} after`)
      }

      // The composer.
      const c = await page.evaluate(composerBoxes)
      await check(c.formBorder !== "none" && c.formRadius >= 16, `${what}: the composer is not a rounded field: radius ${c.formRadius}, border ${c.formBorder}`)
      await check(c.sendType === "submit" && c.sendText === "" && c.sendLabel === "Send", `${what}: the Send button shows text or lacks its name: ${JSON.stringify(c)}`)
      await check(c.arrow && c.arrow.paths >= 1 && inside(c.arrow.box, c.send) && c.arrow.box.width >= 12, `${what}: the Send button draws no arrow: ${JSON.stringify(c.arrow)}`)
      await check(Math.abs(c.send.width - c.send.height) <= 1 && c.sendRadius >= c.send.height / 2 - 1, `${what}: the Send button is not round: ${JSON.stringify(c.send)} radius ${c.sendRadius}`)
      await check(inside(c.send, c.form) && inside(c.attach, c.form) && inside(c.editor, c.form), `${what}: the editor, attach and Send are not inside the composer: ${JSON.stringify(c)}`)
      await check(c.send.left >= c.attach.right - 1 && c.attach.left >= c.editor.right - 1, `${what}: not editor, attach, Send from left to right: ${JSON.stringify(c)}`)
      await check(c.search && c.search.right <= c.form.left + 1 && c.search.bottom > c.form.top && c.search.top < c.form.bottom, `${what}: the search button is not left of the composer: ${JSON.stringify(c)}`)
      if (phone) await check(c.send.width >= 44 && c.attach.width >= 44 && c.search.width >= 44, `${what}: touch targets under 44 px: ${JSON.stringify(c)}`)
      out("COMPOSER", what, `field ${Math.round(c.form.width)}×${Math.round(c.form.height)} radius ${c.formRadius}; Send ${Math.round(c.send.width)} px round with an arrow; search left of it`)

      await page.screenshot({ path: shot(`campfire-look-${width}-${scheme}.png`) })
      out("SCREENSHOT", `campfire-look-${width}-${scheme}.png`)

      // The sidebar: beside the messages on a desktop, behind the menu button on a phone.
      if (phone) {
        await page.click("[data-sidebar-toggle]")
        await page.waitForFunction(() => document.getElementById("sidebar").getBoundingClientRect().left >= 0)
        await page.waitForTimeout(300)
      }
      await page.waitForFunction(() => [...document.querySelectorAll("#sidebar img.room-link__face")].every((img) => img.complete), null, { timeout: 10000 })
        .catch(() => fail(`${what}: the sidebar's faces did not load`))
      const s = await page.evaluate(sidebarBoxes)
      await check(s.rooms.length >= 3, `${what}: ${s.rooms.length} rooms in the sidebar`)
      for (const room of s.rooms) {
        await check(room.border !== "none" && room.radius >= room.height / 2 - 1, `${what}: the room ${room.name} is not a pill: ${JSON.stringify(room)}`)
        await check(room.height >= 36, `${what}: the room ${room.name} is ${room.height} px high`)
      }
      const short = s.rooms.find((room) => room.name === "HQ") ?? s.rooms[0]
      await check(short.width < s.sidebar.width * 0.6, `${what}: the room ${short.name} is as wide as the sidebar: ${short.width} of ${s.sidebar.width}`)
      out("ROOM-PILLS", what, s.rooms.map((room) => `${room.name} ${Math.round(room.width)}×${Math.round(room.height)} r${room.radius}`).join(", "))
      await check(s.directs.length >= 2 && s.people.length >= 1, `${what}: ${s.directs.length} direct rooms, ${s.people.length} people in the sidebar`)
      for (const face of [...s.directs, ...s.people]) {
        await check(face.img && face.loaded && face.width >= 32 && face.height >= 32, `${what}: ${face.name} has no avatar image: ${JSON.stringify(face)}`)
      }
      out("PEOPLE-FACES", what, `${s.directs.length} direct rooms (${s.directs.map((d) => d.name).join(", ")}) and ${s.people.length} people, each with a loaded avatar ≥ 32 px`)
      // The footer of an administrator (the most buttons): the avatar keeps its size and every
      // button stays inside the sidebar.
      const f = await page.evaluate(() => {
        const side = document.getElementById("sidebar").getBoundingClientRect().toJSON()
        const me = document.querySelector(".sidebar__footer .sidebar__me .avatar__image").getBoundingClientRect().toJSON()
        const buttons = [...document.querySelectorAll(".sidebar__footer .btn--icon")].map((b) => b.getBoundingClientRect().toJSON()).filter((b) => b.width > 0)
        return { side, me, buttons }
      })
      await check(Math.abs(f.me.width - 32) <= 1 && Math.abs(f.me.height - 32) <= 1, `${what}: the footer's own avatar is ${f.me.width}×${f.me.height}, not 32×32`)
      await check(f.buttons.length >= 5 && f.buttons.every((b) => b.right <= f.side.right + 1 && b.left >= f.me.right), `${what}: the footer's buttons leave the sidebar or cover the avatar: ${JSON.stringify(f)}`)
      out("FOOTER", what, `avatar ${Math.round(f.me.width)}×${Math.round(f.me.height)}, ${f.buttons.length} buttons inside the sidebar`)

      if (phone) {
        await page.screenshot({ path: shot(`campfire-look-${width}-${scheme}-sidebar.png`) })
        out("SCREENSHOT", `campfire-look-${width}-${scheme}-sidebar.png`)
      } else {
        await page.locator("#message-area .message[data-message-id]", { hasText: MINE }).last().hover()
        await page.click("#message-area .message:last-child .message__actions summary")
        await page.locator("#message-area .message:last-child .message__actions-menu").waitFor({ state: "visible", timeout: 5000 }).catch(() => fail(`${what}: a click on "…" did not open the menu`))
        const menu = await page.evaluate(() => ({ menu: document.querySelector("#message-area .message:last-child .message__actions-menu").getBoundingClientRect().toJSON(), area: document.getElementById("message-area").getBoundingClientRect().toJSON() }))
        await check(menu.menu.left >= menu.area.left - 1 && menu.menu.right <= menu.area.right + 1, `${what}: the open menu leaves the message area: ${JSON.stringify(menu)}`)
        await page.waitForTimeout(200)
        await page.screenshot({ path: shot(`campfire-look-${width}-${scheme}-menu.png`) })
        out("SCREENSHOT", `campfire-look-${width}-${scheme}-menu.png`)
      }
      await page.context().close()
    }
  }
  await finish()
} catch (error) {
  await fail(error.stack ?? String(error))
}
