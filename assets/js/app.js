// The installable app: registers the service worker (/service-worker, which shows pushes and
// keeps the app's badge) and offers the browser's install prompt from the button marked
// [data-install], shown only while the browser has one to offer.
let deferredPrompt = null

function showInstallButtons() {
  for (const button of document.querySelectorAll("[data-install]")) button.hidden = !deferredPrompt
}

export function startApp() {
  if ("serviceWorker" in navigator && window.isSecureContext) {
    navigator.serviceWorker.register("/service-worker", { scope: "/" }).catch(() => {})
  }
  addEventListener("beforeinstallprompt", (event) => {
    event.preventDefault()
    deferredPrompt = event
    showInstallButtons()
  })
  addEventListener("appinstalled", () => {
    deferredPrompt = null
    showInstallButtons()
  })
  addEventListener("turbo:load", showInstallButtons)
  document.addEventListener("click", async (event) => {
    const button = event.target.closest?.("[data-install]")
    if (!button || !deferredPrompt) return
    const prompt = deferredPrompt
    deferredPrompt = null
    showInstallButtons()
    await prompt.prompt()
  })
}
