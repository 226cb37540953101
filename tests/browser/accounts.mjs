// Accounts in a real browser (Debian's headless Chromium, playwright-core), against the
// `hearth` binary. Run by tests/suite/account_settings.rs:
//
//   node accounts.mjs --hearth PATH --work DIR --artifacts DIR [--timeout 120]
//
// David opens "New direct message", types "Jas" in the people picker: the suggestion from
// /autocompletable/users lists Jason; a click checks Jason (shown as a chosen chip, the other
// people hidden) and "Start" opens the direct room. In room 1 he adds a custom boost through the
// "New boost" form: the chip shows his initials, the text, and (to him only) a remove button,
// which removes it. His profile and the account page (the invite block with its QR code) are
// drawn with their boxes checked. Screenshots at 1280x900 and 390x844.
import { out, shot, fail, start, newPage as blankPage, signIn, boxInView, finish, SEEDED, base } from "./harness.mjs"

// David, signed in, in a new context of `viewport`.
const newPage = async (who, viewport) => signIn(await blankPage(who, viewport), "david@example.com")

try {
  await start(SEEDED)
  for (const [tag, viewport] of [["desktop", { width: 1280, height: 900 }], ["mobile", { width: 390, height: 844 }]]) {
    const page = await newPage(`david-${tag}`, viewport)

    // The people picker.
    await page.goto(`${base}/rooms/directs/new`)
    await boxInView(page, "[data-people-query]", "picker input")
    const visibleBefore = await page.locator(".people-picker__person:visible").count()
    if (visibleBefore > 1) await fail(`the picker shows ${visibleBefore} people before any is chosen`)
    await page.fill("[data-people-query]", "Jas")
    await boxInView(page, ".people-picker__suggestion", "suggestion")
    const suggested = (await page.locator(".people-picker__suggestion").allTextContents()).join("|")
    if (!suggested.includes("Jason")) await fail(`suggestions: ${suggested}`)
    out("SUGGESTED", JSON.stringify(suggested))
    await page.screenshot({ path: shot(`accounts-picker-${tag}.png`) })
    await page.locator(".people-picker__suggestion", { hasText: "Jason" }).first().click()
    const checked = await page.locator('input[name="user_ids[]"][value="2"]').isChecked()
    if (!checked) await fail("Jason is not checked")
    await boxInView(page, '.people-picker__person:has(input[value="2"])', "chosen Jason")
    out("PICKED Jason")
    await Promise.all([page.waitForURL(/\/rooms\/\d+$/), page.click('#room_form button[type="submit"]')])
    out("DIRECT-ROOM", page.url())

    // A custom boost on the newest message of room 1, and its removal.
    await page.goto(`${base}/rooms/1`)
    const messageId = await page.locator(".message[data-message-id]").last().getAttribute("data-message-id")
    const content = tag === "desktop" ? "nice one!" : "wow"
    await page.goto(`${base}/messages/${messageId}/boosts/new`)
    await page.fill('input[name="boost[content]"]', content)
    await Promise.all([page.waitForURL(new RegExp(`/rooms/1/@${messageId}$`)), page.click('.boost-new__form button[type="submit"]')])
    const chip = `.message[data-message-id="${messageId}"] .boost:has-text("${content}")`
    await boxInView(page, chip, "boost chip")
    await boxInView(page, `${chip} .boost__avatar`, "booster avatar")
    await boxInView(page, `${chip} .boost__delete-button`, "own boost's remove button")
    await page.screenshot({ path: shot(`accounts-boost-${tag}.png`) })
    await page.locator(`${chip} .boost__delete-button`).click()
    await page.locator(chip).waitFor({ state: "detached", timeout: 10000 }).catch(() => fail("the boost stayed"))
    out("BOOST-REMOVED", content)

    // The profile and the account page.
    await page.goto(`${base}/users/me/profile`)
    await boxInView(page, "#memberships .membership__bell", "a bell")
    await boxInView(page, "#transfer_link .share-link__qr", "transfer QR code")
    await page.screenshot({ path: shot(`accounts-profile-${tag}.png`), fullPage: true })
    await page.goto(`${base}/account/edit`)
    await boxInView(page, "#invite .share-link__qr", "invite QR code")
    const qrLoaded = await page.locator("#invite .share-link__qr").evaluate((img) => img.complete && img.naturalWidth > 0)
    if (!qrLoaded) await fail("the invite QR code did not load")
    await page.screenshot({ path: shot(`accounts-account-${tag}.png`), fullPage: true })
    out("PAGES", tag)
    await page.context().close()
  }
  await finish()
} catch (e) {
  await fail(e.stack || String(e))
}
