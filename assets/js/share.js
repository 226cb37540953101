// Copy and share buttons of links (the transfer link, the join link, a bot's curl lines):
// `<button data-copy="text">` copies its text; `<button data-share-url="url">` opens the
// system share sheet where the browser has one and is hidden elsewhere. One click listener on
// the document, so buttons that Turbo renders later work too.

function hideShareButtonsWithoutSupport() {
  if (navigator.share) return
  for (const button of document.querySelectorAll("[data-share-url]")) button.hidden = true
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
  const share = event.target.closest("[data-share-url]")
  if (share && navigator.share) {
    event.preventDefault()
    navigator.share({ url: share.dataset.shareUrl, title: share.dataset.shareTitle || document.title }).catch(() => {})
  }
}

if (!window.hearthShareStarted) {
  window.hearthShareStarted = true
  document.addEventListener("click", onClick)
  addEventListener("turbo:load", hideShareButtonsWithoutSupport)
  if (document.readyState !== "loading") hideShareButtonsWithoutSupport()
  else addEventListener("DOMContentLoaded", hideShareButtonsWithoutSupport)
}
