// A Campfire team after `hearth import campfire`, in a real browser (Debian's headless Chromium,
// playwright-core), against the `hearth` binary. Run by tests/suite/browser_import_campfire.rs,
// which builds the Campfire storage/ directory with Ruby, imports it into --work and passes
// what the fixture holds:
//
//   node import_campfire.mjs --hearth PATH --work DIR --artifacts DIR --facts JSON [--timeout 180]
//
// Ada signs in with the password she had in Campfire and lands on a room; her sidebar lists her
// rooms (open, closed and the direct one), Watercooler marked unread. The permalink of a
// Campfire message opens on it: its mention of Ben is a chip, its boosts show, and the photo
// posted next shows as Campfire's own thumbnail (the 1200-pixel variant, not the original).
// Screenshots at 1280×900 and 390×844.
import { out, shot, fail, start, newPage, connected, finish, base, args } from "./harness.mjs"

const facts = JSON.parse(args.facts)
const DESKTOP = { width: 1280, height: 900 }
const PHONE = { width: 390, height: 844 }
const ada = "ada@example.com"

// `page` at both sizes as `import-campfire-<name>-<w>x<h>.png`, left at the desktop size.
async function shots(page, name) {
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size)
    await page.waitForTimeout(200)
    await page.screenshot({ path: shot(`import-campfire-${name}-${size.width}x${size.height}.png`) })
  }
  await page.setViewportSize(DESKTOP)
}

try {
  await start({ HEARTH_LOG_LEVEL: "info" })
  const page = await newPage("ada", DESKTOP)
  await page.goto(`${base}/session/new`)
  await page.fill('input[name="email_address"]', ada)
  await page.fill('input[name="password"]', facts.passwords[ada])
  await Promise.all([page.waitForURL(/\/rooms\/\d+$/), page.click('button[name="log_in"]')])
  out("SIGNED-IN", page.url())

  const { all_talk, plans, direct, water } = facts.rooms
  const entry = (room) => `#user_sidebar .room-link[data-room-id="${room}"]`
  for (const room of [all_talk, plans, direct, water]) {
    await page.waitForSelector(entry(room), { state: "attached", timeout: 10000 }).catch(() => fail(`room ${room} is not in the sidebar`))
  }
  const names = await page.locator("#user_sidebar .room-link .room-link__name").allTextContents()
  for (const name of ["All Talk", "Secret Plans", "Watercooler", "Cleo Park"]) {
    if (!names.some((n) => n.trim() === name)) await fail(`${name} not in the sidebar: ${JSON.stringify(names)}`)
  }
  out("ROOMS", names.map((n) => n.trim()).join(", "))
  if (!(await page.locator(`${entry(water)}.room-link--unread`).count())) await fail("Watercooler is not unread")
  if (await page.locator(`${entry(plans)}.room-link--unread`).count()) await fail("Secret Plans is unread")
  out("UNREAD", "Watercooler")
  await shots(page, "landed")

  const { shout, photo } = facts.messages
  await page.goto(`${base}/rooms/${all_talk}/@${shout}`)
  await connected(page)
  const shouted = page.locator(`.message[data-message-id="${shout}"]`)
  await shouted.waitFor({ state: "visible" })
  const mention = shouted.locator(".mention")
  const chip = (await mention.first().textContent())?.trim()
  if (chip !== "@Ben Okafor" || !(await mention.first().isVisible())) await fail(`the mention shows ${JSON.stringify(chip)}`)
  out("MENTION", chip)
  const boosts = (await shouted.locator(".boost__content").allTextContents()).map((b) => b.trim())
  if (!boosts.includes("👍") || !boosts.includes("🔥🔥")) await fail(`boosts: ${JSON.stringify(boosts)}`)
  out("BOOSTS", boosts.join(" "))
  await shots(page, "permalink")

  const image = page.locator(`.message[data-message-id="${photo}"] img.message__attachment`)
  await image.scrollIntoViewIfNeeded()
  await page.waitForFunction((el) => el.complete && el.naturalWidth > 0, await image.elementHandle(), { timeout: 15000 }).catch(() => fail("the thumbnail does not load"))
  const size = await image.evaluate((el) => [el.naturalWidth, el.naturalHeight])
  if (size[0] !== 1200 || size[1] !== 750) await fail(`the thumbnail is ${size.join("x")}, not Campfire's 1200x750 variant`)
  out("THUMBNAIL", size.join("x"))
  await shots(page, "thumbnail")

  await finish()
} catch (e) {
  await fail(e.stack || String(e))
}
