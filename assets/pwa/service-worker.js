// Hearth's service worker, served at /service-worker with scope "/".
//
// A push carries JSON {title, options: {body, icon, tag, data: {path, badge}}} (encrypted on
// the way, RFC 8291; the browser has decrypted it by now). The worker shows it as a
// notification and sets the app's badge to the number of unread rooms it carries. A click on
// the notification focuses an open Hearth window and takes it to the message, or opens one.
self.addEventListener("install", () => self.skipWaiting())
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()))

self.addEventListener("push", (event) => {
  let data = {}
  try {
    data = event.data ? event.data.json() : {}
  } catch {
    data = { title: "Hearth", options: { body: event.data?.text() ?? "" } }
  }
  const options = { icon: "/account/logo?size=small", badge: "/icons/icon-192.png", ...(data.options ?? {}) }
  const badge = Number(options.data?.badge ?? 0)
  event.waitUntil(Promise.all([
    self.registration.showNotification(data.title ?? "Hearth", options),
    setBadge(badge),
  ]))
})

function setBadge(count) {
  if (!("setAppBadge" in self.navigator)) return Promise.resolve()
  return (count > 0 ? self.navigator.setAppBadge(count) : self.navigator.clearAppBadge()).catch(() => {})
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close()
  const path = event.notification.data?.path ?? "/"
  const url = new URL(path, self.location.origin)
  if (url.origin !== self.location.origin) return
  event.waitUntil(open(url.href))
})

async function open(url) {
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true })
  const existing = windows.find((client) => client.focused) ?? windows[0]
  if (existing) {
    await existing.focus()
    return existing.navigate(url)
  }
  return self.clients.openWindow(url)
}
