// Copy and share buttons of links (the transfer link, the join link, a bot's curl lines) and of
// files (a file chip's button, the lightbox's): `<button data-copy="text">` copies its text;
// `<button data-share-url="url">` opens the system share sheet where the browser has one and is
// hidden elsewhere. A button that also has `data-share-file` shares the file itself where the
// browser can share files (`navigator.canShare({ files })`), else the file's address. One click
// listener on the document, so buttons that Turbo renders or a broadcast adds later work too;
// the `web-share` class on <html> (set here) is what shows file buttons, so those added later
// need no script of their own.

function hideShareButtonsWithoutSupport() {
  document.documentElement.classList.toggle("web-share", Boolean(navigator.share))
  if (navigator.share) return
  for (const button of document.querySelectorAll("[data-share-url]:not([data-share-file])")) button.hidden = true
}

// The file at `url` as a File named `filename`, when the browser can share it; else null.
async function shareableFile(url, filename) {
  if (!navigator.canShare) return null
  try {
    const response = await fetch(url, { credentials: "same-origin" })
    if (!response.ok) return null
    const blob = await response.blob()
    const file = new File([blob], filename || "file", { type: blob.type })
    return navigator.canShare({ files: [file] }) ? file : null
  } catch {
    return null
  }
}

async function share(button) {
  const url = new URL(button.dataset.shareUrl, location.href).href
  const title = button.dataset.shareTitle || document.title
  const data = { url, title }
  if (button.hasAttribute("data-share-file")) {
    const file = await shareableFile(url, button.dataset.shareTitle)
    if (file) {
      delete data.url
      data.files = [file]
    }
  }
  await navigator.share(data)
}

async function onClick(event) {
  const copy = event.target.closest("[data-copy]")
  if (copy) {
    event.preventDefault()
    try {
      await navigator.clipboard.writeText(copy.dataset.copy)
      copy.dataset.copied = "true"
      setTimeout(() => delete copy.dataset.copied, 1500)
    } catch {
      // No clipboard (an insecure origin): the text stays selectable on the page.
    }
    return
  }
  const button = event.target.closest("[data-share-url]")
  if (button && navigator.share) {
    event.preventDefault()
    share(button).catch(() => {})
  }
}

if (!window.hearthShareStarted) {
  window.hearthShareStarted = true
  document.addEventListener("click", onClick)
  addEventListener("turbo:load", hideShareButtonsWithoutSupport)
  if (document.readyState !== "loading") hideShareButtonsWithoutSupport()
  else addEventListener("DOMContentLoaded", hideShareButtonsWithoutSupport)
}
