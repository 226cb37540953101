// Signing in by mail in a real browser (Debian's headless Chromium, playwright-core), against
// the `hearth` binary sending to the real SMTP server the test started. Run by
// tests/suite/browser_mail.rs:
//
//   node mail.mjs --hearth PATH --work DIR --artifacts DIR --smtp-url URL --smtp-ca FILE --maildir DIR
//
// David (administrator) sets the site address on the account page's mail panel and sends
// himself a test e-mail. Then, at 1280x900 and 390x844: a person asks for a code on the sign-in
// page ("Email me a code", the same form), reads it from the delivered mail, types it and lands
// in All Talk; another follows "Forgot password?", opens the e-mailed link, chooses a new
// password and lands in All Talk; the link then says it no longer works. Screenshots, light
// and dark, of the sign-in page, the code form, the new-password form and the mail panel.
// The person signed in by code finds their profile's digest time zone filled with the
// browser's (Europe/Paris), saves it, and a zone they chose stays theirs (screenshots of the
// profile with the digest settings).
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { out, shot, fail, check, start, newPage, signIn, boxInView, finish, SEEDED, base, args } from "./harness.mjs"

const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// The newest delivered mail to `to` whose subject has `needle`, waiting up to 20 s.
async function mailTo(to, needle, seen = 0) {
  for (let i = 0; i < 200; i++) {
    const found = readdirSync(args.maildir)
      .filter((n) => n.endsWith(".json"))
      .sort()
      .map((n) => JSON.parse(readFileSync(join(args.maildir, n), "utf8")))
      .filter((m) => m.rcpt_tos.includes(to) && (m.headers.Subject?.[0] ?? "").includes(needle))
    if (found.length > seen) return found[found.length - 1]
    await wait(100)
  }
  await fail(`no mail to ${to} about ${needle}`)
}

// Submits the profile's digest settings and opens the profile again once they are stored.
async function saveDigest(page) {
  await Promise.all([page.waitForResponse((r) => r.url().endsWith("/users/me/digest")), page.click('#digest_settings button[type="submit"]')])
  await page.goto(`${base}/users/me/profile`)
}

const shots = async (page, name) => {
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme })
    await page.screenshot({ path: shot(`mail-${name}-${scheme}.png`), fullPage: true })
  }
  await page.emulateMedia({ colorScheme: "light" })
}

try {
  await start({ ...SEEDED, HEARTH_SMTP_URL: args["smtp-url"], HEARTH_SMTP_CA_FILE: args["smtp-ca"], HEARTH_MAIL_FROM: "Hearth <hearth@example.com>" })
  const viewports = [["1280x900", { width: 1280, height: 900 }], ["390x844", { width: 390, height: 844 }]]
  for (const [tag, viewport] of viewports) {
    const david = await signIn(await newPage(`david-${tag}`, viewport), "david@example.com")
    await david.goto(`${base}/account/edit`)
    await boxInView(david, "#mail_settings", "mail panel")
    await david.fill('input[name="mail[site_url]"]', base)
    await Promise.all([david.waitForURL(/\/account\/edit$/), david.click('#mail_settings form.account__form button[type="submit"]')])
    await boxInView(david, 'button[name="send_test_email"]', "test e-mail button")
    await shots(david, `account-${tag}`)
    await Promise.all([david.waitForURL(/\/account\/edit$/), david.click('button[name="send_test_email"]')])
    // The server's answer, not a bare "Saved": the letter was sent while the page waited.
    await check((await david.locator(".flash-notice").textContent()).includes("Test e-mail sent"), "the test e-mail's notice")
    const test = await mailTo("david@example.com", "Test e-mail", tag === "1280x900" ? 0 : 1)
    await check(test.html.includes("Mail works"), "the test e-mail's HTML")
    out("TEST-EMAIL", tag)
    await david.context().close()
  }
  // Generated people of the seed: the other mail tests of the suite share the SMTP server and
  // write to the named ones.
  const people = { "1280x900": ["user2@example.com", "user3@example.com"], "390x844": ["user4@example.com", "user5@example.com"] }
  for (const [tag, viewport] of viewports) {
    const [coder, resetter] = people[tag]
    const page = await newPage(`code-${tag}`, viewport, { timezoneId: "Europe/Paris" })
    await page.goto(`${base}/session/new`)
    const button = await boxInView(page, 'button[name="email_code"]', "Email me a code")
    const signInButton = await boxInView(page, 'button[name="log_in"]', "Sign in")
    await check(button.y > signInButton.y, "the code button sits under Sign in")
    await boxInView(page, ".sign-in__forgot a", "Forgot password?")
    await shots(page, `sign-in-${tag}`)
    await page.fill('input[name="email_address"]', coder)
    await Promise.all([page.waitForURL(/\/session\/code$/), page.click('button[name="email_code"]')])
    const input = await boxInView(page, 'input[name="code"]', "code input")
    await check(await page.locator('input[name="code"]').evaluate((el) => el === document.activeElement), "the code input has the focus")
    await check(input.width > 100, `code input width ${input.width}`)
    await shots(page, `code-${tag}`)
    const letter = await mailTo(coder, "sign-in code")
    const code = letter.headers.Subject[0].slice(0, 6)
    await page.fill('input[name="code"]', code)
    await Promise.all([page.waitForURL(/\/rooms\/\d+$/), page.click('button[name="sign_in_with_code"]')])
    await boxInView(page, "#composer, .composer", "the composer")
    out("CODE-SIGN-IN", tag, page.url())
    // No time zone stored yet: the digest settings come filled with the browser's.
    await page.goto(`${base}/users/me/profile`)
    const zone = 'input[name="user[time_zone]"]'
    await boxInView(page, "#digest_settings", "digest settings")
    await check((await page.getAttribute(zone, "value")) === "", "no zone stored yet")
    await check((await page.inputValue(zone)) === "Europe/Paris", `prefilled zone ${await page.inputValue(zone)}`)
    await shots(page, `digest-${tag}`)
    await saveDigest(page)
    await check((await page.getAttribute(zone, "value")) === "Europe/Paris", "the browser's zone stored")
    // A stored zone is kept as it is.
    await page.fill(zone, "Asia/Tokyo")
    await saveDigest(page)
    await check((await page.inputValue(zone)) === "Asia/Tokyo", `stored zone ${await page.inputValue(zone)}`)
    out("DIGEST-TIME-ZONE", tag)
    await page.context().close()

    const forgot = await newPage(`reset-${tag}`, viewport)
    await forgot.goto(`${base}/session/new`)
    await Promise.all([forgot.waitForURL(/\/password_reset\/new$/), forgot.click(".sign-in__forgot a")])
    await forgot.fill('input[name="email_address"]', resetter)
    await forgot.click('button[name="send_reset_link"]')
    await forgot.getByText("Check your e-mail").waitFor()
    const reset = await mailTo(resetter, "Reset your")
    const link = reset.text.split(/\s+/).find((w) => w.includes("/password_reset/edit?token="))
    await forgot.goto(link)
    await boxInView(forgot, 'input[name="password"]', "new password input")
    await shots(forgot, `reset-${tag}`)
    await forgot.fill('input[name="password"]', "a brand new secret")
    await Promise.all([forgot.waitForURL(/\/rooms\/\d+$/), forgot.click('button[name="reset_password"]')])
    out("RESET-SIGN-IN", tag)
    const again = await forgot.goto(link)
    await check(again.status() === 404, `a used link answered ${again.status()}`)
    await forgot.getByText("This link no longer works").waitFor()
    out("RESET-LINK-DEAD", tag)
    await forgot.context().close()
  }
  await finish()
} catch (e) {
  await fail(e.stack || String(e))
}
