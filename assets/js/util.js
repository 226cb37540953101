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
