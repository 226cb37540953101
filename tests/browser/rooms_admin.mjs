// Rooms and the account in a real browser (Debian's headless Chromium, playwright-core), against
// the `hearth` binary. Run by tests/suite/browser_rooms_admin.rs:
//
//   node rooms_admin.mjs --hearth PATH --work DIR --artifacts DIR [--timeout 180]
//
// Jason, a member, on a 390×844 phone in All Talk: when David posts in HQ, the menu button shows
// a dot (its box on the button); when Jason reads HQ in another tab, the dot goes. His sidebar
// has a gear to the account page, which shows him the join link and no administrators' form.
// Once David restricts room creation to administrators, Jason's sidebar has no "+" and no "New
// closed room" (David's still has both). David, on a desktop, turns Pets' "Everyone" switch off
// (the closed form with every member checked), leaves Jason out and saves: Jason's sidebar loses
// Pets live; turned on again and saved, Jason's sidebar gets it back live. "Delete room" asks
// first: dismissed, nothing is sent and the room stays; accepted, the room is gone. Screenshots
// at 1280×900 and 390×844, light and dark.
import { out, shot, fail, start, newPage, signIn, boxInView, connected, finish, SEEDED, base } from "./harness.mjs"

const PHONE = { width: 390, height: 844 }
const DESKTOP = { width: 1280, height: 900 }

// `page` at both sizes, light and dark, as `<name>-<w>x<h>[-dark].png`, its own size first;
// left at its size (a phone's sidebar closes on the way).
async function shots(page, name) {
  const was = page.viewportSize()
  for (const size of was.width < 768 ? [PHONE, DESKTOP] : [DESKTOP, PHONE]) {
    await page.setViewportSize(size)
    for (const scheme of ["light", "dark"]) {
      await page.emulateMedia({ colorScheme: scheme })
      const suffix = scheme === "dark" ? "-dark" : ""
      await page.screenshot({ path: shot(`rooms-admin-${name}-${size.width}x${size.height}${suffix}.png`) })
    }
  }
  await page.emulateMedia({ colorScheme: "light" })
  await page.setViewportSize(was)
}

// Posts `body` to room `room` from `page` (signed in), as the composer's form would.
async function post(page, room, body) {
  const status = await page.evaluate(async ({ room, body }) => {
    const token = document.querySelector('meta[name="csrf-token"]').content
    const form = new URLSearchParams({ authenticity_token: token, "message[body]": body, "message[client_message_id]": crypto.randomUUID() })
    const r = await fetch(`/rooms/${room}/messages`, { method: "POST", body: form, redirect: "manual" })
    return r.status
  }, { room, body })
  if (status >= 400) await fail(`posting to room ${room}: ${status}`)
}

const sidebarEntry = (room) => `#user_sidebar #shared_rooms .room-link[data-room-id="${room}"]`

try {
  await start(SEEDED)
  const david = await signIn(await newPage("david", DESKTOP), "david@example.com")
  const jason = await signIn(await newPage("jason", PHONE, { hasTouch: true, isMobile: true }), "jason@example.com")

  // Jason reads every shared room once, then stays in All Talk: no room is unread.
  // A room is read once its page's cable connection is present (the presence write is
  // coalesced, and arrives late under load), so each visit waits for the connection, and the
  // check waits for the last read marks to reach the sidebar.
  for (const room of [2, 3, 4, 1]) {
    await jason.goto(`${base}/rooms/${room}`)
    await connected(jason)
  }
  await jason.waitForSelector(`${sidebarEntry(3)}`, { state: "attached" })
  const dot = ".nav__menu .nav__menu-dot"
  await jason.waitForSelector(dot, { state: "attached" })
  await jason.locator(dot).waitFor({ state: "hidden", timeout: 10000 }).catch(() => fail("the menu shows a dot with every room read"))

  // David posts in HQ: the dot appears on Jason's menu button.
  await david.goto(`${base}/rooms/3`)
  await post(david, 3, "Anyone up for lunch?")
  await jason.locator(dot).waitFor({ state: "visible", timeout: 10000 }).catch(() => fail("no dot after a message in HQ"))
  const dotBox = await boxInView(jason, dot, "unread dot")
  const menuBox = await boxInView(jason, ".nav__menu", "menu button")
  const inside = dotBox.x >= menuBox.x - 1 && dotBox.y >= menuBox.y - 1 && dotBox.x + dotBox.width <= menuBox.x + menuBox.width + 1 && dotBox.y + dotBox.height <= menuBox.y + menuBox.height + 1
  if (!inside || dotBox.width < 6) await fail(`dot ${JSON.stringify(dotBox)} not on the menu button ${JSON.stringify(menuBox)}`)
  out("DOT-SHOWN", JSON.stringify(dotBox))
  await shots(jason, "unread-dot")

  // Jason reads HQ in another tab: the dot goes.
  const other = await jason.context().newPage()
  await other.goto(`${base}/rooms/3`)
  await connected(other)
  await jason.locator(dot).waitFor({ state: "hidden", timeout: 10000 }).catch(() => fail("the dot stayed after HQ was read"))
  await other.close()
  out("DOT-GONE")

  // The gear in Jason's sidebar leads to the account page with the join link.
  await jason.click(".nav__menu")
  const gear = await boxInView(jason, "#sidebar .sidebar__account", "account gear")
  if (gear.width < 24 || gear.height < 24) await fail(`gear too small: ${JSON.stringify(gear)}`)
  await shots(jason, "sidebar-member")
  await jason.click(".nav__menu")
  await boxInView(jason, "#sidebar .sidebar__account", "account gear, again")
  await Promise.all([jason.waitForURL(/\/account\/edit$/), jason.click("#sidebar .sidebar__account")])
  const join = await jason.locator("#invite .share-link__url a").textContent()
  if (!/\/join\/\S+$/.test(join.trim())) await fail(`join link: ${join}`)
  await boxInView(jason, "#invite .share-link__url", "join link")
  if (await jason.locator(".account__form, .account__join-code, form[action='/account/logo']").count()) await fail("a member sees administrators' forms")
  out("GEAR", join.trim())
  await shots(jason, "account-member")

  // David restricts room creation: Jason's sidebar has no "+" and no "New closed room".
  await david.goto(`${base}/account/edit`)
  await david.check('input[name="account[settings][restrict_room_creation_to_administrators]"][type="checkbox"]')
  await Promise.all([david.waitForURL(/\/account\/edit$/), david.click(".account__form button[type=submit]")])
  await jason.goto(`${base}/rooms/1`)
  await jason.waitForSelector(sidebarEntry(1), { state: "attached" })
  const memberLinks = await jason.locator('#sidebar a[href="/rooms/opens/new"], #sidebar a[href="/rooms/closeds/new"]').count()
  if (memberLinks) await fail(`Jason's sidebar has ${memberLinks} new-room links while restricted`)
  await david.goto(`${base}/rooms/1`)
  await boxInView(david, '#sidebar a.rooms__add[href="/rooms/opens/new"]', "David's +")
  await boxInView(david, '#sidebar a[href="/rooms/closeds/new"]', "David's New closed room")
  out("PLUS-HIDDEN")

  // The Everyone switch: Pets closed without Jason, then open again; Jason's sidebar follows.
  await connected(jason)
  await jason.waitForSelector(sidebarEntry(2), { state: "attached" })
  await david.goto(`${base}/rooms/2`)
  await Promise.all([david.waitForURL(/\/rooms\/opens\/2\/edit$/), david.click(".room-settings")])
  const on = await boxInView(david, ".room-form__everyone .switch", "Everyone switch")
  if ((await david.locator(".room-form__everyone .switch").getAttribute("aria-checked")) !== "true") await fail("an open room's switch is off")
  await shots(david, "switch-on")
  await Promise.all([david.waitForURL(/\/rooms\/closeds\/2\/edit$/), david.mouse.click(on.x + on.width / 2, on.y + on.height / 2)])
  if ((await david.locator(".room-form__everyone .switch").getAttribute("aria-checked")) !== "false") await fail("the closed form's switch is on")
  const boxes = david.locator('#room_form input[name="user_ids[]"]')
  const total = await boxes.count()
  const checked = await david.locator('#room_form input[name="user_ids[]"]:checked').count()
  if (total < 5 || checked !== total) await fail(`the closed form has ${checked} of ${total} people checked`)
  await shots(david, "switch-off")
  await david.locator('#room_form input[name="user_ids[]"][value="2"]').uncheck()
  await Promise.all([david.waitForURL(/\/rooms\/2$/), david.click('#room_form button[type="submit"]')])
  await jason.locator(sidebarEntry(2)).waitFor({ state: "detached", timeout: 10000 }).catch(() => fail("Pets stayed in Jason's sidebar"))
  out("SWITCH-CLOSED", `${checked} kept, Jason left out`)
  await david.goto(`${base}/rooms/closeds/2/edit`)
  await Promise.all([david.waitForURL(/\/rooms\/opens\/2\/edit$/), david.click(".room-form__everyone .switch")])
  await Promise.all([david.waitForURL(/\/rooms\/2$/), david.click('#room_form button[type="submit"]')])
  await jason.locator(sidebarEntry(2)).waitFor({ state: "attached", timeout: 10000 }).catch(() => fail("Pets did not come back to Jason's sidebar"))
  out("SWITCH-OPEN", "Jason's sidebar has Pets again")

  // "Delete room" asks first. Reached through Turbo from the room page: dismissed, nothing is
  // sent and the room stays.
  const deletes = []
  david.on("request", (r) => {
    if (r.method() === "POST" && /\/rooms\/4$/.test(new URL(r.url()).pathname)) deletes.push(r.url())
  })
  const asked = []
  await david.goto(`${base}/rooms/4`)
  await Promise.all([david.waitForURL(/\/rooms\/closeds\/4\/edit$/), david.click(".room-settings")])
  await boxInView(david, ".room-form__destroy button", "Delete room")
  // The dialog is awaited (not a fixed pause: under load it can take longer to open), then a
  // pause lets any request the dismissal failed to stop show up.
  const dismissed = new Promise((resolve) => {
    david.once("dialog", async (d) => {
      asked.push(`${d.type()}: ${d.message()}`)
      await d.dismiss()
      resolve()
    })
  })
  await david.click(".room-form__destroy button")
  await Promise.race([dismissed, david.waitForTimeout(15000)])
  await david.waitForTimeout(800)
  if (asked.length !== 1 || !asked[0].startsWith("confirm: Delete this room")) await fail(`asked: ${JSON.stringify(asked)}`)
  if (deletes.length) await fail(`dismissed, yet sent ${deletes.join(", ")}`)
  if (!/\/rooms\/closeds\/4\/edit$/.test(david.url())) await fail(`dismissed, yet on ${david.url()}`)
  const still = await david.evaluate(async () => (await fetch("/rooms/4", { redirect: "manual" })).status)
  if (still !== 200) await fail(`room 4 answers ${still} after cancelling`)
  out("DELETE-DISMISSED", asked[0])
  await shots(david, "delete")

  // Loaded directly (no Turbo on the page): accepted, the room is gone.
  await david.goto(`${base}/rooms/closeds/4/edit`)
  david.once("dialog", (d) => {
    asked.push(`${d.type()}: ${d.message()}`)
    d.accept()
  })
  await Promise.all([david.waitForURL(/\/rooms\/\d+$/), david.click(".room-form__destroy button")])
  if (asked.length !== 2 || !asked[1].startsWith("confirm: Delete this room")) await fail(`asked: ${JSON.stringify(asked)}`)
  if (deletes.length !== 1) await fail(`accepted: ${deletes.length} delete requests`)
  const gone = await david.evaluate(async () => (await fetch("/rooms/4", { redirect: "manual" })).status)
  if (gone === 200) await fail("room 4 is still there")
  if (await david.locator(sidebarEntry(4)).count()) await fail("room 4 is still in the sidebar")
  out("DELETE-ACCEPTED", `room 4 answers ${gone}`)

  await finish()
} catch (e) {
  await fail(e.stack || String(e))
}
