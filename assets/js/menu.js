// The message "…" menu and what it offers, plus the editing keys.
//
// - The menu (a <details>) opens under its button, or above it when the message list has no
//   room below; one menu is open at a time; Esc or a click elsewhere closes it.
// - Reply puts a quote of the message (its text, its author and a link back to it) at the
//   start of the composer.
// - Copy link copies the message's permalink (/rooms/:id/@:message_id, absolute).
// - Edit and Delete are shown on one's own messages only (every message for administrators;
//   formatter.js marks `message--me`, the page marks `room--admin`); the server still answers
//   403 to anyone else.
// - Up arrow in an empty composer opens the edit form of one's last message; in an edit form,
//   Esc puts the message back and Ctrl/⌘+Enter saves.
import { listen } from "./util.js"

const escapeHTML = (text) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c])

// The text of a message's body without the quotes it holds itself, blocks and <br> as lines.
function quotableText(message) {
  const body = message.querySelector(".message__presentation .trix-content, .message__presentation .message__sound")
  if (!body) return ""
  const copy = body.cloneNode(true)
  for (const nested of copy.querySelectorAll("blockquote, cite")) nested.remove()
  for (const picture of copy.querySelectorAll("svg[aria-label]")) picture.replaceWith(picture.getAttribute("aria-label"))
  for (const br of copy.querySelectorAll("br")) br.replaceWith("\n")
  for (const block of copy.querySelectorAll("div, p, li, pre, h1")) block.append("\n")
  return copy.textContent.replace(/\n{3,}/g, "\n\n").trim()
}

function permalink(message) {
  const link = message.querySelector(".message__permalink")
  return new URL(link.getAttribute("href"), location.href).href
}

// The composer's editor: Trix when the page has it, else the textarea.
function composerEditor(form) {
  const trix = form?.querySelector("trix-editor")
  if (trix?.editor) return { trix, element: trix }
  const field = form?.querySelector("textarea")
  return field ? { field, element: field } : null
}

function composerIsEmpty(form) {
  const editor = composerEditor(form)
  if (!editor) return false
  if (editor.trix) return editor.trix.editor.getDocument().toString().trim() === ""
  return editor.field.value.trim() === ""
}

export function reply(form, message) {
  const editor = composerEditor(form)
  if (!editor) return
  const author = message.querySelector(".message__author")?.textContent.trim() ?? ""
  const url = permalink(message)
  const text = quotableText(message)
  if (editor.trix) {
    const quote = text.split("\n").map(escapeHTML).join("<br>")
    editor.trix.editor.setSelectedRange([0, 0])
    editor.trix.editor.insertHTML(
      `<blockquote>${quote}</blockquote><cite>${escapeHTML(author)} <a href="${escapeHTML(url)}">#</a></cite><br><br>`,
    )
  } else {
    const quote = text.split("\n").map((line) => `> ${line}`).join("\n")
    const rest = editor.field.value
    editor.field.value = `${quote}\n— ${author} ${url}\n\n${rest}`
    editor.field.setSelectionRange(editor.field.value.length, editor.field.value.length)
    editor.field.dispatchEvent(new Event("input", { bubbles: true }))
  }
  editor.element.focus()
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text)
    return true
  } catch {
    // No async clipboard (an insecure origin): the selection way.
    const area = Object.assign(document.createElement("textarea"), { value: text })
    area.setAttribute("readonly", "")
    area.style.position = "fixed"
    area.style.opacity = "0"
    document.body.append(area)
    area.select()
    const copied = document.execCommand("copy")
    area.remove()
    return copied
  }
}

export function startMenu({ list, form }) {
  const area = document.getElementById("message-area") ?? list
  const saved = new WeakMap() // edit frame → the presentation it held before the form

  const openMenus = () => [...list.querySelectorAll("details.message__actions[open]")]

  function close(details, { focus = false } = {}) {
    details.open = false
    const menu = details.querySelector(".message__actions-menu")
    menu?.classList.remove("message__actions-menu--up")
    if (menu) menu.style.translate = ""
    if (focus) details.querySelector("summary")?.focus()
  }

  // Below the button when it fits in the visible part of the list, else above when there is
  // more room there; moved sideways to stay inside the message area (a narrow phone); then
  // nudged into view if the window is smaller than the menu.
  function position(details) {
    const menu = details.querySelector(".message__actions-menu")
    const button = details.querySelector("summary")
    if (!menu || !button) return
    menu.classList.remove("message__actions-menu--up")
    menu.style.translate = ""
    const sides = area.getBoundingClientRect()
    const wide = menu.getBoundingClientRect()
    const right = Math.min(sides.right, window.innerWidth)
    const left = Math.max(sides.left, 0)
    if (wide.right > right) menu.style.translate = `${Math.max(right - wide.right, left - wide.left)}px 0`
    else if (wide.left < left) menu.style.translate = `${left - wide.left}px 0`
    const bounds = area.getBoundingClientRect()
    const top = Math.max(bounds.top, 0)
    const bottom = Math.min(bounds.bottom, window.innerHeight)
    const box = menu.getBoundingClientRect()
    const at = button.getBoundingClientRect()
    if (box.bottom > bottom && at.top - top > bottom - at.bottom) {
      menu.classList.add("message__actions-menu--up")
    }
    const placed = menu.getBoundingClientRect()
    if (placed.top < top || placed.bottom > bottom) menu.scrollIntoView({ block: "nearest" })
  }

  function toggled(event) {
    const details = event.target
    if (!(details instanceof HTMLDetailsElement) || !details.matches(".message__actions")) return
    if (!details.open) return
    for (const other of openMenus()) if (other !== details) close(other)
    position(details)
  }

  function clicked(event) {
    const action = event.target.closest("[data-message-action]")
    const chosen = action ?? event.target.closest(".boost-picker button")
    const message = event.target.closest(".message")
    for (const details of openMenus()) {
      if (!details.contains(event.target) || chosen) close(details)
    }
    if (!action || !message) return
    switch (action.dataset.messageAction) {
      case "reply":
        event.preventDefault()
        reply(form, message)
        break
      case "copy-link":
        event.preventDefault()
        copyText(permalink(message)).then((copied) => {
          action.dataset.copied = String(copied)
          document.documentElement.dataset.copiedLink = copied ? permalink(message) : ""
        })
        break
      case "edit": {
        const frame = document.getElementById(action.dataset.turboFrame)
        if (frame && !frame.querySelector("form")) saved.set(frame, frame.innerHTML)
        break
      }
    }
    const cancel = event.target.closest(".message__edit-form a[data-turbo-frame=_top]")
    if (cancel && cancelEdit(cancel.closest("turbo-frame"))) event.preventDefault()
  }

  function cancelEdit(frame) {
    if (!frame || !saved.has(frame)) return false
    frame.removeAttribute("src")
    frame.innerHTML = saved.get(frame)
    saved.delete(frame)
    return true
  }

  function editLastOwnMessage() {
    const own = [...list.querySelectorAll(".message.message--me:not(.message--pending)")].at(-1)
    const link = own?.querySelector('a[data-message-action="edit"]')
    if (!link) return false
    const frame = document.getElementById(link.dataset.turboFrame)
    if (frame && !frame.querySelector("form")) saved.set(frame, frame.innerHTML)
    own.scrollIntoView({ block: "nearest" })
    link.click()
    return true
  }

  function keydown(event) {
    if (event.isComposing) return
    const editForm = event.target.closest?.(".message__edit-form")
    if (event.key === "Escape") {
      const open = openMenus()
      if (open.length > 0) {
        event.preventDefault()
        for (const details of open) close(details, { focus: details.contains(document.activeElement) })
      } else if (editForm && cancelEdit(editForm.closest("turbo-frame"))) {
        event.preventDefault()
      }
    } else if (event.key === "Enter" && (event.metaKey || event.ctrlKey) && editForm) {
      event.preventDefault()
      // As the composer does: Trix copies its document into the hidden input only when it
      // renders after a change, so a save right after typing could send the previous body.
      for (const editor of editForm.querySelectorAll("trix-editor")) editor.editorController?.updateInputElement?.()
      editForm.requestSubmit()
    } else if (
      event.key === "ArrowUp" && !event.shiftKey && !event.altKey && !event.metaKey && !event.ctrlKey &&
      form?.contains(event.target) && composerIsEmpty(form)
    ) {
      if (editLastOwnMessage()) event.preventDefault()
    }
  }

  // An edit form opened in a frame gets the focus, its caret at the end.
  function frameLoaded(event) {
    const field = event.target.querySelector?.(".message__edit-form textarea")
    if (!field) return
    field.focus()
    field.setSelectionRange(field.value.length, field.value.length)
  }

  function resized() {
    for (const details of openMenus()) position(details)
  }

  return listen(
    [document, "toggle", toggled, true],
    [document, "click", clicked],
    [document, "keydown", keydown],
    [document, "turbo:frame-load", frameLoaded],
    [window, "resize", resized],
  )
}
