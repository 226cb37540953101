// An HTTP session against a running Hearth for the Node clients: a cookie jar kept across
// requests, fetch without following redirects, and the values of the page's <meta> tags.
//
//   const { jar, cookieHeader, http } = session("http://127.0.0.1:3000")
//   const csrf = meta(await (await http("/session/new")).text(), "csrf-token")

// A cookie jar (name → value), its `Cookie` header, and `http(path, init)`: fetch of
// `base + path` with the jar's cookies, keeping the ones the answer sets.
export function session(base) {
  const jar = new Map()
  const cookieHeader = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ")
  function keepCookies(res) {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";")
      const i = pair.indexOf("=")
      jar.set(pair.slice(0, i), pair.slice(i + 1))
    }
  }
  async function http(path, init = {}) {
    const res = await fetch(base + path, { redirect: "manual", ...init, headers: { Cookie: cookieHeader(), ...(init.headers ?? {}) } })
    keepCookies(res)
    return res
  }
  return { jar, cookieHeader, http }
}

// HTML's character references as the server writes them (&#x..; &#..; &quot; &amp;), decoded.
export const decode = (s) => s.replace(/&#x([0-9a-f]+);/gi, (_, h) => String.fromCharCode(parseInt(h, 16)))
  .replace(/&#(\d+);/g, (_, d) => String.fromCharCode(Number(d))).replace(/&quot;/g, '"').replace(/&amp;/g, "&")

// The content of `<meta name="NAME">` in `html`, decoded.
export const meta = (html, name) => decode(html.match(new RegExp(`<meta name="${name}" content="([^"]*)"`))[1])
