// The first room, custom styles and the sidebar's people in a real browser (Debian's headless
// Chromium, playwright-core), against the `hearth` binary with an empty database. Run by
// tests/suite/account_settings.rs:
//
//   node first_room.mjs --hearth PATH --work DIR --artifacts DIR [--timeout 120]
//
// Ada fills in the first-run form and lands in the first room, which welcomes her with the
// invite block (the join URL, its QR code, copy and share), as Campfire's first room does. She
// adds a custom style; the room page's welcome text then has the rule's computed border and
// padding, and its border box is the border's 9 px wider than its padding box. Bea and Cal join through the
// welcome's URL. In Ada's sidebar they are one click away: a click on Bea opens the direct room
// with her, then one on Cal. Back in the first room Ada's direct rooms are Cal's then Bea's (by
// latest activity); Bea writes to Ada, and Ada's sidebar moves Bea's room to the top at once,
// without a reload. The search page runs the app's scripts: a hit's time is in Ada's time zone
// (Pacific/Auckland, emulated). Screenshots of the welcome and of the re-sorted sidebar.
import { out, shot, fail, start, newPage, boxInView, finish, PASSWORD } from "./harness.mjs"

const RULE = "#system_welcome .welcome__text { border-left: 9px solid rgb(1, 2, 3); padding-left: 11px; }"

try {
  const base = await start({ HEARTH_NO_SEED: "true" })

  // The first run, and the first room's welcome.
  const ada = await newPage("ada", { width: 1280, height: 900 }, { timezoneId: "Pacific/Auckland" })
  await ada.goto(`${base}/`)
  await ada.waitForURL(/\/first_run$/).catch(() => fail(`no first run: ${ada.url()}`))
  await ada.fill('input[name="user[name]"]', "Ada Admin")
  await ada.fill('input[name="user[email_address]"]', "ada@example.com")
  await ada.fill('input[name="user[password]"]', PASSWORD)
  await Promise.all([ada.waitForURL(/\/rooms\/\d+$/), ada.click('button[type="submit"]')])
  const firstRoom = ada.url()
  await boxInView(ada, "#system_welcome .welcome__text", "welcome text")
  await boxInView(ada, "#system_welcome .share-link__qr", "invite QR code")
  await boxInView(ada, "#system_welcome .share-link__copy", "copy button")
  const qrLoaded = await ada.locator("#system_welcome .share-link__qr").evaluate((img) => img.complete && img.naturalWidth > 0)
  if (!qrLoaded) await fail("the welcome's QR code did not load")
  const joinUrl = (await ada.locator("#system_welcome .share-link__url a").textContent()).trim()
  if (!joinUrl.startsWith(`${base}/join/`)) await fail(`join URL ${joinUrl}`)
  out("WELCOME", joinUrl)
  await ada.screenshot({ path: shot("first-room-welcome.png") })

  // A custom style, applied to the room page.
  await ada.goto(`${base}/account/custom_styles/edit`)
  await ada.fill('textarea[name="account[custom_styles]"]', RULE)
  await Promise.all([ada.waitForLoadState("load"), ada.click('.custom-styles__form button[type="submit"]')])
  await ada.goto(firstRoom)
  const applied = await ada.locator("#system_welcome .welcome__text").evaluate((p) => {
    const style = getComputedStyle(p)
    // The box: the border box is wider than the padding box by the border alone.
    const border = p.getBoundingClientRect().width - p.clientWidth
    return { width: style.borderLeftWidth, color: style.borderLeftColor, padding: style.paddingLeft, border }
  })
  if (applied.width !== "9px" || applied.color !== "rgb(1, 2, 3)" || applied.padding !== "11px") await fail(`computed style ${JSON.stringify(applied)}`)
  if (Math.abs(applied.border - 9) > 0.5) await fail(`the border box is ${applied.border}px wider than the padding box, not 9px`)
  out("CUSTOM-CSS", JSON.stringify(applied))

  // Two people join through the welcome's link.
  const joined = {}
  for (const [name, email] of [["Bea Bright", "bea@example.com"], ["Cal Cole", "cal@example.com"]]) {
    const page = await newPage(name)
    await page.goto(joinUrl)
    await page.fill('input[name="user[name]"]', name)
    await page.fill('input[name="user[email_address]"]', email)
    await page.fill('input[name="user[password]"]', PASSWORD)
    await Promise.all([page.waitForURL(/\/rooms\/\d+$/), page.click('button[type="submit"]')])
    joined[name.split(" ")[0]] = page
  }
  out("JOINED", Object.keys(joined).join(","))

  // One click on a person in the sidebar opens the direct room with them.
  const directs = {}
  for (const first of ["Bea", "Cal"]) {
    await ada.goto(firstRoom)
    const person = `#direct_placeholders .room-link--person:has-text("${first}") button`
    await boxInView(ada, person, `${first} in the sidebar`)
    await Promise.all([ada.waitForURL((url) => /\/rooms\/\d+$/.test(url.pathname) && url.href !== firstRoom), ada.click(person)])
    directs[first] = Number(new URL(ada.url()).pathname.split("/").pop())
    await ada.locator(`#direct_rooms .room-link[data-room-id="${directs[first]}"]`).waitFor({ timeout: 10000 }).catch(() => fail(`no direct room with ${first} in the sidebar`))
    if (await ada.locator(`#direct_placeholders .room-link--person:has-text("${first}")`).count()) await fail(`${first} is still offered`)
    out("PING", first, directs[first])
  }

  // Ada in the first room: Cal's direct room (the newer) first; Bea writes, and hers moves up.
  await ada.goto(firstRoom)
  // People are faces in rows: the order is the reading order of their boxes (row, then left to right).
  // Both read in one frame: each box checked in view first, then both positions taken at the
  // same scroll (checking one scrolls the sidebar, which moved the other between two reads).
  const places = async () => {
    for (const first of ["Bea", "Cal"]) await boxInView(ada, `#direct_rooms .room-link[data-room-id="${directs[first]}"]`, `${first}'s direct room`)
    return ada.evaluate((ids) => ids.map((id) => {
      const r = document.querySelector(`#direct_rooms .room-link[data-room-id="${id}"]`).getBoundingClientRect()
      return Math.round(r.y) * 10000 + r.x
    }), [directs.Bea, directs.Cal])
  }
  const [beaBefore, calBefore] = await places()
  if (!(calBefore < beaBefore)) await fail("the direct rooms are not by latest activity")
  const bea = joined.Bea
  await bea.goto(`${base}/rooms/${directs.Bea}`)
  const editor = bea.locator("trix-editor#message_body")
  await editor.waitFor({ state: "visible" })
  await bea.waitForFunction(() => document.querySelector("trix-editor#message_body")?.editor)
  await editor.click()
  await editor.pressSequentially("hi Ada", { delay: 10 })
  await bea.keyboard.press("Enter")
  await ada.waitForFunction(
    (id) => document.querySelector("#direct_rooms > .room-link")?.dataset.roomId === String(id),
    directs.Bea,
    { timeout: 10000 },
  ).catch(() => fail("Bea's direct room did not move to the top"))
  const [beaY, calY] = await places()
  if (!(beaY < calY)) await fail(`after the message Bea's room is at ${beaY}, Cal's at ${calY} (row × 10000 + x)`)
  out("RESORTED", `bea=${beaY}`, `cal=${calY}`)
  await ada.screenshot({ path: shot("first-room-sidebar-resorted.png") })

  // The search page runs the app's scripts: the hit's time is written in Ada's zone.
  await ada.goto(`${base}/searches?q=Ada`)
  const time = ada.locator('#search_results .search-result time[data-local-time="time"]').first()
  await time.waitFor({ state: "attached" })
  await ada.waitForFunction(() => document.documentElement.dataset.timeZone === "Pacific/Auckland").catch(() => fail("the search page ran no scripts"))
  const shown = await time.evaluate((el) => ({ text: el.textContent.trim(), title: el.title, at: el.getAttribute("datetime") }))
  const expected = new Intl.DateTimeFormat("en-US", { hour: "numeric", minute: "2-digit", hour12: true, timeZone: "Pacific/Auckland" })
    .format(new Date(shown.at)).replace(/\s/g, "").toLowerCase()
  if (shown.text !== expected || !shown.title) await fail(`search hit time ${JSON.stringify(shown)}, expected ${expected}`)
  out("SEARCH-LOCAL-TIME", shown.text, shown.at)

  // Signing out (through the script that first forgets the browser's push subscription).
  await ada.goto(firstRoom)
  await Promise.all([ada.waitForURL(/\/session\/new$/), ada.click("form.sign-out button[type=submit]")])
  await ada.goto(firstRoom)
  await ada.waitForURL(/\/session\/new/).catch(() => fail(`signed out, yet ${ada.url()}`))
  out("SIGNED-OUT")
  await finish()
} catch (e) {
  await fail(e.stack || String(e))
}

