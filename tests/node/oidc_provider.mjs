// A real OpenID Connect provider for Hearth's single sign-on tests: npm's `oidc-provider` (an
// OpenID-certified implementation) on loopback, plain http, with one confidential client for
// Hearth, a small login form of its own (any password; the login is the person's e-mail
// address; no outside fonts or scripts, unlike the provider's development form) and consent
// given once and for all.
//
//   node oidc_provider.mjs --port PORT --redirect URI[,URI…] --keys FILE [--sign KID] [--publish KID,KID…]
//
// Prints `listening ISSUER` once it accepts connections; SIGTERM stops it. Its signing keys (RSA,
// RS256) live in FILE as private JWKs by `kid`, made on first use: restarting it with another
// `--sign` rotates its key. `--publish` (default: the signing key) is the set its `jwks_uri`
// shows, so a key retired from it while still signing can be tried.
//
// People: `<name>@<domain>` signs in as that address, verified; a login that starts with
// `unverified.` has `email_verified: false`. Each gets `sub` = `sub-<login>`.
import { generateKeyPairSync } from "node:crypto"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { pathToFileURL } from "node:url"
import Provider from "oidc-provider"

/** Hearth's client as the tests register it. */
export const CLIENT_ID = "hearth"
export const CLIENT_SECRET = "hearth-test-client-secret-0123456789"

/** The private JWKs in `file` by kid, with `kids` made (and saved) when missing. */
function keys(file, kids) {
  const all = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : {}
  for (const kid of kids) {
    if (all[kid]) continue
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
    all[kid] = { ...privateKey.export({ format: "jwk" }), kid, alg: "RS256", use: "sig" }
  }
  writeFileSync(file, JSON.stringify(all))
  return all
}

/** The public half of a private RSA JWK. */
const publicJwk = ({ kty, n, e, kid, alg, use }) => ({ kty, n, e, kid, alg, use })

/** The login form of interaction `uid`: an e-mail address and any password. */
const loginPage = (uid) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Acme ID: sign in</title></head>
<body style="font-family: sans-serif; max-width: 22rem; margin: 10vh auto">
<h1>Acme ID</h1>
<form method="post" action="/interaction/${uid}/login" style="display: grid; gap: .75rem">
<label>E-mail address <input name="login" type="email" required autofocus></label>
<label>Password <input name="password" type="password" required></label>
<button type="submit">Sign in</button>
</form></body></html>`

/** GET: the login form; POST …/login: the interaction finished as the login typed. */
async function interaction(provider, req, res, uid, submit) {
  try {
    const details = await provider.interactionDetails(req, res)
    if (details.uid !== uid) throw new Error("not this browser's interaction")
    if (!submit) {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" })
      res.end(loginPage(uid))
      return
    }
    let body = ""
    for await (const chunk of req) body += chunk
    const accountId = new URLSearchParams(body).get("login")
    await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false })
  } catch (error) {
    res.writeHead(400, { "content-type": "text/plain" })
    res.end(String(error?.message ?? error))
  }
}

/** Starts the provider; resolves to `{ issuer, close }`. */
export async function startProvider({ port, redirectUris, keyFile, sign = "k1", publish = [sign] }) {
  const all = keys(keyFile, [sign, ...publish])
  const issuer = `http://127.0.0.1:${port}`
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: redirectUris,
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    jwks: { keys: [all[sign]] },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    scopes: ["openid", "email", "profile"],
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    pkce: { required: () => true },
    cookies: { keys: ["oidc-provider-test-cookie-key"] },
    async findAccount(_ctx, id) {
      return {
        accountId: id,
        async claims() {
          const local = id.split("@")[0]
          const name = local.replace(/^unverified\./, "").replace(/[._]/g, " ").replace(/\b\w/g, (c) => c.toUpperCase())
          return { sub: `sub-${id}`, email: id, email_verified: !id.startsWith("unverified."), name }
        },
      }
    },
    // Consent is given once and for all: the grant covers what Hearth asks for.
    async loadExistingGrant(ctx) {
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId })
      grant.addOIDCScope("openid email profile")
      await grant.save()
      return grant
    },
  })
  provider.proxy = false
  const published = JSON.stringify({ keys: publish.map((kid) => publicJwk(all[kid])) })
  const handle = provider.callback()
  const server = createServer((req, res) => {
    const login = req.url.match(/^\/interaction\/([\w-]+)(\/login)?$/)
    if (login) {
      interaction(provider, req, res, login[1], Boolean(login[2]))
      return
    }
    if (req.method === "GET" && req.url === "/jwks") {
      res.writeHead(200, { "content-type": "application/jwk-set+json" })
      res.end(published)
      return
    }
    handle(req, res)
  })
  await new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, "127.0.0.1", resolve)
  })
  const close = () => new Promise((resolve) => {
    server.closeAllConnections()
    server.close(resolve)
  })
  return { issuer, close }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = Object.fromEntries(
    process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
  )
  const sign = args.sign ?? "k1"
  const { issuer, close } = await startProvider({
    port: Number(args.port),
    redirectUris: args.redirect.split(","),
    keyFile: args.keys,
    sign,
    publish: args.publish ? args.publish.split(",") : [sign],
  })
  process.on("SIGTERM", () => close().then(() => process.exit(0)))
  process.stdout.write(`listening ${issuer}\n`)
}
