// Boosts added in place, the notice after saving and the author's bio, in a real browser:
// Debian's headless Chromium, driven by playwright-core, against the `hearth` binary. Run by
// tests/suite/browser_boosts.rs:
//
//   node boosts_inline.mjs --hearth PATH --work DIR --artifacts DIR [--timeout 240]
//
// David opens a permalink to an old message of the seeded main room (not on its latest page)
// and boosts it: the menu's "+" opens the form inside that message, Escape closes it, a sent
// boost shows on the message at once and for Jason (on the same permalink) by broadcast, the
// "Add a boost" button beside the boosts opens the form again, and David's page stays where it
// was (same URL, same scroll, the message in view). Then the profile's "Saved" notice shows once, and an author's name carries
// "name – bio" as its title. Screenshots at 1280×900 and 390×844, light and dark. Each step
// prints one line; "OK" at the end.
import { out, shot, fail, check, start, newPage, signIn, connected, finish, SEEDED, base } from "./harness.mjs"

const ROOM = 1
const BOOST = "ship it 🚀"
const SECOND = "again!"

const messageOf = (page, id) => page.locator(`#message-area .message[data-message-id="${id}"]`)
const box = async (locator) => {
  const b = await locator.boundingBox()
  if (!b) await fail(`no box for ${locator}`)
  return b
}
const inside = (inner, outer, slack = 1) =>
  inner.x >= outer.x - slack && inner.y >= outer.y - slack &&
  inner.x + inner.width <= outer.x + outer.width + slack && inner.y + inner.height <= outer.y + outer.height + slack
const scrollTop = (page) => page.evaluate(() => document.getElementById("message-area").scrollTop)

try {
  await start(SEEDED)
  const david = await newPage("david")
  await signIn(david, "david@example.com")
  const jason = await newPage("jason")
  await signIn(jason, "jason@example.com")

  // An old message: the first of the page before the latest one.
  await david.goto(`${base}/rooms/${ROOM}`)
  const latestFirst = await david.locator("#message-area .message[data-message-id]").first().getAttribute("data-message-id")
  await david.goto(`${base}/rooms/${ROOM}/@${latestFirst}`)
  const old = await david.locator("#message-area .message[data-message-id]").first().getAttribute("data-message-id")
  await check(Number(old) < Number(latestFirst), `an older message than ${latestFirst}: ${old}`)
  const permalink = `${base}/rooms/${ROOM}/@${old}`
  for (const page of [david, jason]) {
    await page.goto(permalink)
    await connected(page)
  }
  const target = messageOf(david, old)
  await check(await target.evaluate((m) => m.classList.contains("message--highlighted")), "the permalink's message is highlighted")

  const before = { url: david.url(), top: await scrollTop(david) }
  const requests = []
  david.on("request", (r) => {
    if (r.url().includes(`/messages/${old}/boosts`)) requests.push({ method: r.method(), path: new URL(r.url()).pathname, frame: r.headers()["turbo-frame"] ?? null, accept: r.headers()["accept"] ?? "" })
  })
  const add = target.locator(".message__boosts .boosts__add")
  const input = target.locator(".boost-form .boost-form__input")
  const openFromMenu = async () => {
    await target.hover()
    await target.locator(".message__actions-button").click()
    await target.locator(".boost-picker__new").click()
    await input.waitFor({ state: "visible", timeout: 10000 })
    await check(!(await target.locator("details.message__actions[open]").count()), "the menu closed as the form opened")
  }
  // A message without boosts shows no row; with some, the button sits beside them.
  const hadBoosts = (await target.locator(".boost").count()) > 0
  await check(hadBoosts === (await add.isVisible()), `the add button shows only beside boosts (boosts: ${hadBoosts})`)
  out("ROW-ONLY-WITH-BOOSTS", hadBoosts ? "had boosts" : "no boosts: no row")

  // The menu's "+" opens the form inside the message, focused; Escape closes it.
  await openFromMenu()
  const menuForm = await box(target.locator(".boost-form"))
  await check(inside(menuForm, await box(target)), `the form ${JSON.stringify(menuForm)} is inside the message`)
  await david.waitForFunction(() => document.activeElement?.matches(".boost-form__input"))
  await check(requests.some((r) => r.method === "GET" && r.path === `/messages/${old}/boosts/new` && r.frame?.startsWith("new_boost_message_")), `the form came in its frame: ${JSON.stringify(requests)}`)
  out("MENU-OPENS-FORM", JSON.stringify(menuForm))
  await input.fill("never sent")
  await david.keyboard.press("Escape")
  await input.waitFor({ state: "detached", timeout: 5000 })
  await david.waitForFunction(() => document.activeElement?.matches(".boosts__add, .message__actions-button"))
  await check(!(await target.locator(".boost", { hasText: "never sent" }).count()), "Escape sent nothing")
  out("ESCAPE-CLOSES")

  // Opened again and sent with Enter: the boost shows, the button beside it has the focus.
  await openFromMenu()
  await input.fill(BOOST)
  await david.screenshot({ path: shot("boosts-1280x900.png") })
  await david.emulateMedia({ colorScheme: "dark" })
  await david.screenshot({ path: shot("boosts-1280x900-dark.png") })
  await david.emulateMedia({ colorScheme: "light" })
  await input.press("Enter")
  const chip = `.boost:has-text("${BOOST}")`
  await target.locator(chip).waitFor({ state: "visible", timeout: 10000 })
  await input.waitFor({ state: "detached", timeout: 5000 })
  await add.waitFor({ state: "visible" })
  await david.waitForFunction(() => document.activeElement?.matches(".boosts__add"))
  const post = requests.find((r) => r.method === "POST")
  await check(post && post.path === `/messages/${old}/boosts` && post.frame?.startsWith("new_boost_message_") && post.accept.includes("text/vnd.turbo-stream.html"), `the boost was posted from the frame for a stream: ${JSON.stringify(post)}`)
  out("BOOST-POSTED", JSON.stringify(post))

  // The button beside the boosts opens the form in place too; its check button sends.
  const [addBox, messageBox] = [await box(add), await box(target)]
  await check(inside(addBox, messageBox) && addBox.width >= 16, `the add button ${JSON.stringify(addBox)} is inside the message ${JSON.stringify(messageBox)}`)
  await check((await add.getAttribute("title")) === "Add a boost", "the add button's title")
  await add.click()
  await input.waitFor({ state: "visible", timeout: 10000 })
  const formBox = await box(target.locator(".boost-form"))
  await check(inside(formBox, await box(target)), `the form ${JSON.stringify(formBox)} is inside the message`)
  const chipBox = await box(target.locator(chip))
  await check(formBox.x > chipBox.x, `the form ${JSON.stringify(formBox)} is beside the boosts ${JSON.stringify(chipBox)}`)
  out("ADD-BUTTON", JSON.stringify(addBox), "form", JSON.stringify(formBox))
  await input.fill(SECOND)
  await target.locator(".boost-form__submit").click()
  const chip2 = `.boost:has-text("${SECOND}")`
  await target.locator(chip2).waitFor({ state: "visible", timeout: 10000 })
  await input.waitFor({ state: "detached", timeout: 5000 })
  out("SECOND-BOOST", requests.filter((r) => r.method === "POST").length, "posts")

  // The page kept its place.
  await david.waitForTimeout(300)
  const after = { url: david.url(), top: await scrollTop(david) }
  const [targetBox, areaBox] = [await box(target), await box(david.locator("#message-area"))]
  await check(after.url === before.url && after.url === permalink, `the URL stayed ${before.url}: ${after.url}`)
  await check(Math.abs(after.top - before.top) <= 60, `the scroll stayed ${before.top}: ${after.top}`)
  await check(targetBox.y < areaBox.y + areaBox.height && targetBox.y + targetBox.height > areaBox.y, `the message is still in view: ${JSON.stringify(targetBox)} in ${JSON.stringify(areaBox)}`)
  await check((await david.locator(`#message-area ${chip}`).count()) === 1, "the boost shows once")
  out("PAGE-KEPT-ITS-PLACE", after.url, `scrollTop ${before.top} → ${after.top}`)

  // Jason gets it live on the same message.
  await messageOf(jason, old).locator(chip).waitFor({ state: "visible", timeout: 10000 })
  await messageOf(jason, old).locator(chip2).waitFor({ state: "visible", timeout: 10000 })
  out("LIVE-FOR-OTHERS")

  // A phone, light and dark, with the form open.
  const phone = await newPage("kevin", { width: 390, height: 844 }, { isMobile: true, hasTouch: true })
  await signIn(phone, "kevin@example.com")
  await phone.goto(permalink)
  await connected(phone)
  const phoneTarget = messageOf(phone, old)
  await phoneTarget.locator(chip).waitFor({ state: "visible" })
  await phoneTarget.locator(".boosts__add").tap()
  const phoneInput = phoneTarget.locator(".boost-form__input")
  await phoneInput.waitFor({ state: "visible", timeout: 10000 })
  const [phoneForm, phoneMessage] = [await box(phoneTarget.locator(".boost-form")), await box(phoneTarget)]
  await check(inside(phoneForm, phoneMessage) && phoneForm.x + phoneForm.width <= 390, `the phone's form ${JSON.stringify(phoneForm)} is inside ${JSON.stringify(phoneMessage)}`)
  await phone.screenshot({ path: shot("boosts-390x844.png") })
  await phone.emulateMedia({ colorScheme: "dark" })
  await phone.screenshot({ path: shot("boosts-390x844-dark.png") })
  out("PHONE-FORM", JSON.stringify(phoneForm))

  // The author's bio on hover: "name – bio" for people with one, the name alone otherwise.
  const titles = await jason.evaluate(() => Object.fromEntries(
    [...document.querySelectorAll("#message-area .message .message__author")].map((a) => [a.closest(".message").dataset.userId, a.title]),
  ))
  await check(titles["1"] === "David – Runs the place. Mostly harmless.", `David's title: ${titles["1"]}`)
  const plain = Object.entries(titles).find(([, t]) => !t.includes(" – "))
  out("BIO-TITLE", JSON.stringify(titles["1"]), plain ? `and ${JSON.stringify(plain[1])}` : "")

  // The notice after saving the profile: shown, announced, then gone on the next page.
  await jason.goto(`${base}/users/me/profile`)
  await check(!(await jason.locator(".flash-notice").count()), "a notice before saving")
  await Promise.all([jason.waitForURL(`${base}/users/me/profile`), jason.click('.profile__form button[type="submit"]')])
  const notice = jason.locator('.flash-notice[role="status"]')
  await notice.waitFor({ state: "visible", timeout: 5000 })
  const noticeText = (await notice.textContent()).trim()
  await check(noticeText === "Saved", `the notice says ${noticeText}`)
  const noticeBox = await box(notice)
  await check(noticeBox.y >= 0 && noticeBox.y < 100 && noticeBox.width > 40, `the notice at the top: ${JSON.stringify(noticeBox)}`)
  await jason.screenshot({ path: shot("boosts-notice-1280x900.png") })
  await jason.emulateMedia({ colorScheme: "dark" })
  await jason.screenshot({ path: shot("boosts-notice-1280x900-dark.png") })
  await jason.emulateMedia({ colorScheme: "light" })
  await jason.goto(`${base}/rooms/${ROOM}`)
  await check(!(await jason.locator(".flash-notice").count()), "the notice came back on the next page")
  await jason.goto(`${base}/users/me/profile`)
  await check(!(await jason.locator(".flash-notice").count()), "the notice came back on the profile")
  out("NOTICE-ONCE", JSON.stringify(noticeBox))

  await finish()
} catch (error) {
  await fail(error.stack ?? String(error))
}
