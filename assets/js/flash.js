// The notice after a saved change is shown once: it leaves the page before Turbo keeps a copy
// of it, so going back does not show it again.
addEventListener("turbo:before-cache", () => {
  for (const notice of document.querySelectorAll(".flash-notice")) notice.remove()
})
