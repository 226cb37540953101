// Turning web push on in this browser (Campfire's notifications_controller): the sidebar's
// bell button asks for permission, subscribes through the service worker's PushManager with
// the server's VAPID key (<meta name="vapid-public-key">) and stores the subscription with
// POST /users/me/push_subscriptions. The button shows whether this browser gets
// notifications (data-state="on|off|denied|unsupported"); once on, it leads to the list of
// subscriptions, where a test notification can be sent.
import { listen } from "./util.js"

function meta(name) {
  return document.querySelector(`meta[name="${name}"]`)?.content
}

function keyBytes(base64url) {
  const text = atob(base64url.replace(/-/g, "+").replace(/_/g, "/"))
  return Uint8Array.from(text, (c) => c.charCodeAt(0))
}

function base64url(buffer) {
  return btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
}

async function store(subscription) {
  const body = new URLSearchParams({
    "push_subscription[endpoint]": subscription.endpoint,
    "push_subscription[p256dh_key]": base64url(subscription.getKey("p256dh")),
    "push_subscription[auth_key]": base64url(subscription.getKey("auth")),
  })
  const response = await fetch("/users/me/push_subscriptions", {
    method: "POST",
    body,
    headers: { "X-CSRF-Token": meta("csrf-token") ?? "", Accept: "application/json" },
    credentials: "same-origin",
  })
  if (!response.ok) throw new Error(`push subscription refused: ${response.status}`)
}

export function startNotifications() {
  const button = document.querySelector("[data-notifications]")
  const key = meta("vapid-public-key")
  if (!button) return () => {}
  const supported = key && "serviceWorker" in navigator && "PushManager" in window && window.isSecureContext
  function show(state) {
    button.dataset.state = state
    button.classList.toggle("btn--on", state === "on")
    button.title = {
      on: "Notifications are on in this browser",
      off: "Turn on notifications",
      denied: "Notifications are blocked: allow them in this browser's site settings",
      unsupported: "This browser can't show notifications from Hearth",
    }[state]
  }
  if (!supported) {
    show("unsupported")
    return () => {}
  }
  async function refresh() {
    if (Notification.permission === "denied") return show("denied")
    const registration = await navigator.serviceWorker.ready
    const subscription = await registration.pushManager.getSubscription()
    show(subscription && Notification.permission === "granted" ? "on" : "off")
  }
  async function click(event) {
    event.preventDefault()
    if (button.dataset.state === "on") {
      window.Turbo ? window.Turbo.visit("/users/me/push_subscriptions") : (location.href = "/users/me/push_subscriptions")
      return
    }
    if ((await Notification.requestPermission()) !== "granted") return refresh()
    const registration = await navigator.serviceWorker.ready
    const subscription =
      (await registration.pushManager.getSubscription()) ??
      (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(key) }))
    await store(subscription)
    await refresh()
  }
  refresh().catch(() => show("off"))
  return listen([button, "click", (event) => click(event).catch(() => refresh())])
}

// Signing out forgets this browser's push subscription (Campfire's sessions_controller): the
// sign-out form's `push_subscription_endpoint` gets the subscription's endpoint and the
// browser unsubscribes; then the form goes, and the server deletes the user's subscription
// there. A browser without one (or without service workers) signs out at once.
async function forgetPush(field) {
  if (!("serviceWorker" in navigator)) return
  const registration = await navigator.serviceWorker.getRegistration(location.origin)
  const subscription = await registration?.pushManager.getSubscription()
  if (!subscription) return
  field.value = subscription.endpoint
  await subscription.unsubscribe()
}

document.addEventListener(
  "submit",
  (event) => {
    const form = event.target
    if (!(form instanceof HTMLFormElement) || !form.matches("form.sign-out") || form.dataset.pushForgotten) return
    const field = form.querySelector('input[name="push_subscription_endpoint"]')
    if (!field) return
    event.preventDefault()
    event.stopImmediatePropagation()
    const giveUp = new Promise((resolve) => setTimeout(resolve, 3000))
    Promise.race([forgetPush(field), giveUp])
      .catch(() => {})
      .finally(() => {
        form.dataset.pushForgotten = "true"
        form.requestSubmit()
      })
  },
  true,
)
