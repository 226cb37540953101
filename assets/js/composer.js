// The composer: the page's textarea becomes a Trix editor (a page without JavaScript posts the
// textarea's plain text instead). The editor's HTML goes in `message[body]` with
// `message[body_format]=html`; the server sanitizes it to Action Text's allowlist. The form
// posts through Turbo (the turbo-stream answer appends the message), and after a successful
// post the editor is emptied and the form gets a fresh client message id for the next one.
//
// As Campfire's composer does:
// - On a desktop the editor has the focus as soon as a room opens (the first load and every
//   Turbo visit, e.g. a room picked in the sidebar) and again after sending; a touch device
//   is left alone, so opening a room does not raise its soft keyboard. The desktop's toolbar
//   (shown while the editor has the focus) waits for the first key or click in the form.
// - On a desktop Enter sends (Shift+Enter starts a new line, Ctrl/⌘+Enter sends too). On a
//   touch device Enter starts a new line and only the Send button sends.
// - A submit with nothing typed posts no message (files waiting in the composer are posted by
//   uploads.js on the same submit); Trix never takes files into the text.
//
// Other modules extend the composer through the editor element (`form.querySelector(
// "trix-editor")`, its `editor` is Trix's API) and Trix's events (`trix-change`,
// `trix-attachment-add`, `trix-file-accept`); keydown listeners that must run before Trix's
// take the form's capture phase, as the Enter key and the mention picker here do.
import "trix"
import { listen, uuid } from "./util.js"
import { startMentions } from "./mentions.js"

// True on a device with a touch screen (a phone, a tablet), as Campfire decides it.
function usingTouchDevice() {
  return "ontouchstart" in window || navigator.maxTouchPoints > 0
}

export function startComposer({ form, roomId }) {
  if (!form) return () => {}
  const element = upgrade(form)
  const clientId = form.querySelector('input[name="message[client_message_id]"]')
  const mentions = startMentions({ form, element, roomId })
  const focus = () => element.focus({ preventScroll: true })

  // Something to post: text, or an attachment Trix holds (a mention is one).
  const hasContent = () =>
    element.editor.getDocument().toString().trim() !== "" ||
    element.value.includes("<action-text-attachment") ||
    element.value.includes("data-trix-attachment")

  function keydown(event) {
    if (event.target !== element || event.key !== "Enter" || event.shiftKey || event.isComposing) return
    if (usingTouchDevice()) return // Trix starts a new line; the Send button sends
    if (mentions.handlesEnter()) return
    event.preventDefault()
    event.stopPropagation()
    // Trix copies its document into the form's hidden input only when it renders after a
    // change; a submit right after typing (and, every few runs, the first post after a
    // reconnect) posted the input's previous value, an empty body refused with 422, and the
    // message was lost. Copy the document the editor shows now.
    element.editorController?.updateInputElement?.()
    form.requestSubmit()
  }

  // Every submit (Enter or the Send button) leaves the focus in the editor; one with nothing
  // typed stops here (files waiting in the composer went on the same event, see uploads.js).
  function submit(event) {
    if (event.target !== form) return
    element.editorController?.updateInputElement?.()
    if (!hasContent()) event.preventDefault()
    focus()
  }

  function submitEnd(event) {
    if (event.target !== form || !event.detail.success) return
    element.editor.loadHTML("")
    clientId.value = uuid()
    element.dispatchEvent(new Event("input", { bubbles: true }))
    focus()
  }

  // Files go through uploads.js, never into the text.
  const refuseFile = (event) => event.preventDefault()

  // After the other modules' first work (as Campfire's next tick), so nothing takes it back.
  // Until the first key or pointer in the form, the desktop's toolbar stays hidden
  // (`composer--autofocused`): a room just opened shows its newest message uncovered.
  const timer = usingTouchDevice()
    ? null
    : setTimeout(() => {
        form.classList.add("composer--autofocused")
        focus()
      }, 0)
  const engaged = () => form.classList.remove("composer--autofocused")

  const unlisten = listen(
    [form, "keydown", engaged, true],
    [form, "pointerdown", engaged, true],
    [form, "keydown", keydown, true],
    [form, "submit", submit],
    [element, "trix-file-accept", refuseFile],
    [document, "turbo:submit-end", submitEnd],
  )
  return () => {
    clearTimeout(timer)
    unlisten()
    mentions.stop()
  }
}

// Edit forms (`.message__edit-form`, opened in place in a message's frame) get an editor too,
// loaded with the body's rich text (`data-rich-body`, Trix's form of the stored HTML) instead
// of the textarea's plain text.
export function startEditing({ list }) {
  if (!list) return () => {}
  function scan() {
    for (const form of list.querySelectorAll(".message__edit-form[data-rich-body]")) {
      if (form.querySelector("trix-editor")) continue
      const element = upgrade(form, form.dataset.richBody)
      element.focus()
    }
  }
  scan()
  const observer = new MutationObserver(scan)
  observer.observe(list, { childList: true, subtree: true })
  return () => observer.disconnect()
}

// Replaces the form's textarea with a Trix editor writing to a hidden `message[body]` (which
// starts with `html`, if given). The editor takes the textarea's id, so its label still
// names it.
function upgrade(form, html = "") {
  const existing = form.querySelector("trix-editor")
  if (existing) return existing
  const textarea = form.querySelector("textarea")
  const input = document.createElement("input")
  input.type = "hidden"
  input.name = textarea.name
  input.id = `${textarea.id}_input`
  input.value = html
  const format = document.createElement("input")
  format.type = "hidden"
  format.name = "message[body_format]"
  format.value = "html"
  const element = document.createElement("trix-editor")
  element.id = textarea.id
  element.setAttribute("input", input.id)
  element.setAttribute("placeholder", textarea.placeholder)
  element.setAttribute("aria-label", textarea.labels?.[0]?.textContent || "Message")
  element.className = "composer__editor trix-content"
  textarea.replaceWith(input, format, element)
  form.classList.add("composer--rich")
  return element
}
