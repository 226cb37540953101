// Link previews (Campfire's unfurler): a URL pasted alone into the composer is sent to
// `POST /unfurl_link`; when the server answers with the page's Open Graph title, description
// and image, a card is inserted into the editor as a Trix attachment of content type
// `application/vnd.actiontext.opengraph-embed` (href, filename = title, caption =
// description, url = image), so it is sent, and stored, with the message. A later paste aborts
// the one still waiting; a card is only inserted while the editor still holds the URL. A
// server with link previews off answers 404, and nothing is inserted.
import Trix from "trix"
import { listen } from "./util.js"

export const OPENGRAPH_EMBED = "application/vnd.actiontext.opengraph-embed"
const URL_PATTERN = /^(?:[a-z0-9]+:\/\/|www\.)[^\s]+$/i

function meta(name) {
  return document.querySelector(`meta[name="${name}"]`)?.content ?? ""
}

// The card as the editor shows it (the server draws its own when the message is shown).
function card({ title, description, image }) {
  const figure = document.createElement("div")
  figure.className = "og-embed"
  const content = Object.assign(document.createElement("div"), { className: "og-embed__content" })
  content.append(
    Object.assign(document.createElement("div"), { className: "og-embed__title", textContent: title }),
    Object.assign(document.createElement("div"), { className: "og-embed__description", textContent: description }),
  )
  figure.append(content)
  if (image) {
    const box = Object.assign(document.createElement("div"), { className: "og-embed__image" })
    box.append(Object.assign(document.createElement("img"), { src: image, alt: "" }))
    figure.append(box)
  }
  return figure.outerHTML
}

export function startUnfurl({ form }) {
  const element = form?.querySelector("trix-editor")
  if (!element) return () => {}
  let pending = null

  async function unfurl(url) {
    pending?.abort()
    const controller = new AbortController()
    pending = controller
    try {
      const response = await fetch("/unfurl_link", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": meta("csrf-token") },
        body: JSON.stringify({ url }),
        signal: controller.signal,
      })
      if (response.status !== 200) return
      const preview = await response.json()
      const editor = element.editor
      if (!editor || !editor.getDocument().toString().includes(url)) return
      const attachment = new Trix.Attachment({
        contentType: OPENGRAPH_EMBED,
        content: card(preview),
        href: preview.url,
        filename: preview.title,
        caption: preview.description,
        url: preview.image ?? undefined,
      })
      const selection = editor.getSelectedRange()
      editor.recordUndoEntry("Insert the link's preview")
      editor.insertAttachment(attachment)
      editor.setSelectedRange(selection)
      element.dispatchEvent(new CustomEvent("hearth:unfurled", { bubbles: true, detail: preview }))
    } catch (error) {
      if (error.name !== "AbortError") console.warn(error)
    } finally {
      if (pending === controller) pending = null
    }
  }

  function paste(event) {
    const range = event.paste?.range
    if (!range || !element.editor) return
    const text = element.editor.getDocument().getStringAtRange(range).trim()
    if (URL_PATTERN.test(text)) unfurl(text)
  }

  const unlisten = listen([element, "trix-paste", paste])
  return () => {
    unlisten()
    pending?.abort()
  }
}
