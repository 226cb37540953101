// The lightbox: a click on a message's thumbnail opens the original in a dialog, with a
// zoom toggle (click the image), a download link and a share button (shown where the browser
// has a share sheet: see share.js); Esc or the close button ends it.
import { listen } from "./util.js"

export function startLightbox() {
  let dialog = null

  function build() {
    dialog = document.createElement("dialog")
    dialog.className = "lightbox"
    dialog.innerHTML =
      '<div class="lightbox__bar"><a class="btn btn--plain lightbox__download" download>Download</a>' +
      '<button type="button" class="btn btn--plain lightbox__share" data-share-url="" data-share-file>Share</button>' +
      '<button type="button" class="btn btn--plain lightbox__close">Close</button></div>' +
      '<img class="lightbox__image" alt="">'
    dialog.querySelector(".lightbox__close").addEventListener("click", () => dialog.close())
    const image = dialog.querySelector(".lightbox__image")
    image.addEventListener("click", () => dialog.classList.toggle("lightbox--zoomed"))
    dialog.addEventListener("click", (event) => { if (event.target === dialog) dialog.close() })
    document.body.append(dialog)
  }

  function open(event) {
    const link = event.target.closest?.("a.message__attachment-link--image")
    if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return
    event.preventDefault()
    if (!dialog || !dialog.isConnected) build()
    dialog.classList.remove("lightbox--zoomed")
    const image = dialog.querySelector(".lightbox__image")
    image.src = link.href
    image.alt = link.dataset.lightboxFilename ?? ""
    const download = dialog.querySelector(".lightbox__download")
    download.href = link.dataset.lightboxDownload
    download.setAttribute("download", link.dataset.lightboxFilename ?? "")
    const share = dialog.querySelector(".lightbox__share")
    share.dataset.shareUrl = link.dataset.lightboxDownload
    share.dataset.shareTitle = link.dataset.lightboxFilename ?? ""
    dialog.showModal()
  }

  const stop = listen([document, "click", open])
  return () => {
    stop()
    dialog?.remove()
  }
}
