// Single sign-on in Chromium: a real OpenID Connect provider (npm's `oidc-provider`, through
// `tests/node/oidc_provider.mjs`) on loopback beside `hearth serve`. David (an administrator)
// names the provider and allows two domains on the account page; a new person clicks "Sign in
// with Acme ID", signs in at the provider's login form and lands in All Talk; a person of
// another domain is refused with a page saying why. The sign-in page and the refusal page are
// shot at 1280x900 and 390x844, light and dark, with their elements' boxes checked.
import { createServer } from "node:net"
import { join } from "node:path"
import { args, allowOrigin, base, boxInView, check, fail, finish, newPage, out, shot, signIn, start, SEEDED } from "./harness.mjs"
import { CLIENT_ID, CLIENT_SECRET, startProvider } from "../node/oidc_provider.mjs"

const freePort = () =>
  new Promise((resolve) => {
    const probe = createServer()
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address()
      probe.close(() => resolve(port))
    })
  })

const VIEWPORTS = [
  { width: 1280, height: 900 },
  { width: 390, height: 844 },
]

/** Signs in at the provider's dev login form as `login` from a page showing it. */
async function providerLogin(page, login) {
  await page.waitForSelector('input[name="login"]')
  await page.fill('input[name="login"]', login)
  await page.fill('input[name="password"]', "any password")
  await page.click('button[type="submit"]')
}

/** Screenshots of `page` at both sizes, light and dark, as `sso-<name>-<size>-<scheme>.png`,
 * checking `selectors`' boxes at each. */
async function shots(page, name, selectors) {
  for (const viewport of VIEWPORTS) {
    await page.setViewportSize(viewport)
    for (const scheme of ["light", "dark"]) {
      await page.emulateMedia({ colorScheme: scheme })
      for (const selector of selectors) await boxInView(page, selector, `${name} ${viewport.width} ${scheme}`)
      const path = shot(`sso-${name}-${viewport.width}x${viewport.height}-${scheme}.png`)
      await page.screenshot({ path })
      out("SCREENSHOT", path)
    }
  }
  await page.emulateMedia({ colorScheme: "light" })
  await page.setViewportSize(VIEWPORTS[0])
}

async function scenario() {
  const port = await freePort()
  const issuer = `http://127.0.0.1:${port}`
  await start({
    ...SEEDED,
    HEARTH_OIDC_ISSUER: issuer,
    HEARTH_OIDC_CLIENT_ID: CLIENT_ID,
    HEARTH_OIDC_CLIENT_SECRET: CLIENT_SECRET,
  })
  allowOrigin(issuer)
  const provider = await startProvider({ port, redirectUris: [`${base}/session/oidc/callback`], keyFile: join(args.work, "op-keys.json") })
  try {
    await steps(issuer)
  } finally {
    await provider.close()
  }
}

async function steps(issuer) {
  // The administrator's settings, through the account page's form.
  const david = await newPage("david")
  await signIn(david, "david@example.com")
  await david.goto(`${base}/account/edit`)
  await david.fill('input[name="sso[provider_name]"]', "Acme ID")
  await david.fill('textarea[name="sso[allowed_domains]"]', "allowed.test\nexample.com")
  await Promise.all([david.waitForURL(`${base}/account/edit`), david.click("text=Save single sign-on")])
  await check((await david.inputValue('textarea[name="sso[allowed_domains]"]')) === "allowed.test\nexample.com", "domains saved")
  out("SETTINGS-SAVED", "Acme ID, allowed.test and example.com")

  // A new person, from the sign-in page to All Talk.
  const grace = await newPage("grace")
  await grace.goto(`${base}/session/new`)
  const button = grace.locator("#sign_in_with_sso")
  await check((await button.innerText()).trim() === "Sign in with Acme ID", "the button names the provider")
  await shots(grace, "sign-in", ["#sign_in_with_sso", 'input[name="email_address"]', 'button[name="log_in"]'])
  const focusable = await grace.evaluate(() => {
    const b = document.getElementById("sign_in_with_sso")
    b.focus()
    return document.activeElement === b
  })
  await check(focusable, "the button takes the focus")
  await Promise.all([grace.waitForURL(new RegExp(`^${issuer}/interaction/`)), button.click()])
  await providerLogin(grace, "grace.hopper@allowed.test")
  await grace.waitForURL(/\/rooms\/\d+$/)
  const title = await grace.title()
  await check(title.startsWith("All Talk"), `landed in ${title}`)
  const cookies = await grace.context().cookies()
  await check(!cookies.some((c) => c.name === "oidc_sign_in"), "the flow cookie is gone")
  out("NEW-PERSON-IN-ALL-TALK", grace.url(), title)

  // Someone outside the allowed domains.
  const eve = await newPage("eve")
  await eve.goto(`${base}/session/new`)
  await Promise.all([eve.waitForURL(new RegExp(`^${issuer}/interaction/`)), eve.click("#sign_in_with_sso")])
  await providerLogin(eve, "eve@elsewhere.test")
  await eve.waitForSelector('main[data-refusal="outside-domains"]')
  const heading = await eve.locator("h1").innerText()
  const detail = await eve.locator(".sso-refused__detail").innerText()
  await check(heading === "This account can't sign in here", `heading ${heading}`)
  await check(detail.includes("eve@elsewhere.test") && detail.includes("allowed.test or example.com"), `detail ${detail}`)
  await shots(eve, "refused", ["main h1", ".sso-refused__detail", ".sso-refused__back"])
  await Promise.all([eve.waitForURL(`${base}/session/new`), eve.click(".sso-refused__back")])
  out("OUTSIDE-REFUSED", detail)
}

await scenario().catch((error) => fail(String(error?.message ?? error).split("\n")[0]))
await finish()
