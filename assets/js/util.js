// Small helpers shared by the page's modules.

// A random client message id (UUID v4). crypto.randomUUID exists only in secure contexts, so
// plain-HTTP deployments get the same shape from getRandomValues.
export function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID()
  const b = crypto.getRandomValues(new Uint8Array(16))
  b[6] = (b[6] & 0x0f) | 0x40
  b[8] = (b[8] & 0x3f) | 0x80
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("")
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

// Adds listeners and returns one function that removes them all.
export function listen(...specs) {
  for (const [target, type, handler, options] of specs) target.addEventListener(type, handler, options)
  return () => {
    for (const [target, type, handler, options] of specs) target.removeEventListener(type, handler, options)
  }
}

// A catch-up's failure worth asking again about: no answer at all (`null`: the network or the
// server went away), a server error (a busy database answers 503), a timeout or a rate limit.
// Not a refusal (400, 403, 404): asking again would change nothing.
export function worthRetrying(status) {
  return status === null || status >= 500 || status === 408 || status === 429
}

// The milliseconds an answer's Retry-After asks for (its delta-seconds form), or null.
export function retryAfterMs(response) {
  const seconds = Number(response?.headers.get("Retry-After"))
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : null
}
