// How posting feels (Campfire's pending client messages and offline composer):
//
// - When the composer submits, the message shows at once at the end of the list, pending
//   (`message--pending`), under the element id the server's copy will have:
//   message_<client_message_id>. The server's append (the post's answer or the broadcast,
//   whichever comes first) replaces it: Turbo drops an appended element's duplicate.
// - When the post fails (an error status or no answer), the pending message is marked
//   `message--failed` with a Retry button, which posts the same form data again (the same
//   client message id, so a post that did reach the server is not stored twice).
// - After 5 s disconnected (connection.js puts `offline` on <html>) the composer is disabled;
//   it is enabled again once the catch-up after the reconnect has run.
import { listen, uuid } from "./util.js"

const TURBO_STREAM = "text/vnd.turbo-stream.html"

function meta(name) {
  return document.querySelector(`meta[name="${name}"]`)?.content ?? ""
}

// The text a body holds: plain text as typed, or the text of an HTML body (parsed inert).
function bodyText(body) {
  if (!/^\s*</.test(body)) return body
  const doc = new DOMParser().parseFromString(body, "text/html")
  for (const br of doc.querySelectorAll("br")) br.replaceWith("\n")
  return doc.body.textContent
}

function pendingMessage({ clientId, text, userId, userName }) {
  const message = document.createElement("div")
  message.id = `message_${clientId}`
  message.className = "message message--pending"
  message.dataset.userId = String(userId)
  message.dataset.messageCreatedAt = String(Date.now())
  message.dataset.sortValue = String(Number.MAX_SAFE_INTEGER)
  message.dataset.pending = "true"
  const avatar = Object.assign(document.createElement("figure"), { className: "avatar message__avatar" })
  const body = Object.assign(document.createElement("div"), { className: "message__body" })
  const metaRow = Object.assign(document.createElement("div"), { className: "message__meta" })
  metaRow.append(Object.assign(document.createElement("strong"), { className: "message__author", textContent: userName }))
  const time = Object.assign(document.createElement("time"), { className: "message__timestamp" })
  time.dateTime = new Date().toISOString()
  time.dataset.localTime = "time"
  metaRow.append(time)
  const presentation = Object.assign(document.createElement("div"), { className: "message__presentation" })
  const content = Object.assign(document.createElement("div"), { className: "trix-content message__pending-text" })
  content.textContent = text
  presentation.append(content)
  body.append(metaRow, presentation)
  message.append(avatar, body)
  return message
}

export function startPosting({ list, form, Turbo, userId }) {
  if (!form) return () => {}
  const root = document.documentElement
  const posts = new Map() // client message id → the FormData posted
  const submissions = new WeakMap() // Turbo's form submission → its client message id
  const userName = meta("current-user-name")

  function submitStart(event) {
    if (event.target !== form) return
    const data = new FormData(form)
    const clientId = String(data.get("message[client_message_id]") ?? "")
    const text = bodyText(String(data.get("message[body]") ?? "")).trim()
    if (!clientId || text === "") return
    if (event.detail?.formSubmission) submissions.set(event.detail.formSubmission, clientId)
    posts.set(clientId, data)
    document.getElementById(`message_${clientId}`)?.remove()
    list.append(pendingMessage({ clientId, text, userId, userName }))
  }

  function submitEnd(event) {
    if (event.target !== form) return
    const clientId = submissions.get(event.detail?.formSubmission)
    if (!clientId) return
    if (event.detail.success) {
      posts.delete(clientId)
      return
    }
    markFailed(clientId)
  }

  function markFailed(clientId) {
    const message = document.getElementById(`message_${clientId}`)
    if (!message?.classList.contains("message--pending")) return
    message.classList.add("message--failed")
    message.dataset.failed = "true"
    if (message.querySelector(".message__failure")) return
    const row = Object.assign(document.createElement("div"), { className: "message__failure", textContent: "Not sent." })
    const retry = Object.assign(document.createElement("button"), { type: "button", className: "message__retry", textContent: "Retry" })
    retry.dataset.clientMessageId = clientId
    row.append(retry)
    message.querySelector(".message__body")?.append(row)
  }

  async function retry(event) {
    const button = event.target.closest(".message__retry")
    if (!button || !list.contains(button)) return
    const clientId = button.dataset.clientMessageId
    const data = posts.get(clientId)
    const message = document.getElementById(`message_${clientId}`)
    if (!data || !message) return
    message.classList.remove("message--failed")
    delete message.dataset.failed
    message.querySelector(".message__failure")?.remove()
    data.set("authenticity_token", meta("csrf-token") || data.get("authenticity_token"))
    try {
      const response = await fetch(form.action, {
        method: "POST",
        // As the form itself posts: urlencoded unless it is a multipart form.
        body: form.enctype === "multipart/form-data" ? data : new URLSearchParams(data),
        credentials: "same-origin",
        headers: { Accept: `${TURBO_STREAM}, text/html`, "X-CSRF-Token": meta("csrf-token") },
      })
      if (!response.ok) throw new Error(`the post answered ${response.status}`)
      posts.delete(clientId)
      Turbo.renderStreamMessage(await response.text())
      // The composer still holds this post when it failed: start the next one afresh.
      const id = form.querySelector('input[name="message[client_message_id]"]')
      if (id?.value === clientId) {
        id.value = uuid()
        const sent = String(data.get("message[body]") ?? "").trim()
        const trix = form.querySelector("trix-editor")
        const field = form.querySelector("textarea")
        if (trix?.editor && trix.value.trim() === sent) {
          trix.editor.loadHTML("")
        } else if (field && field.value.trim() === sent) {
          field.value = ""
          field.dispatchEvent(new Event("input", { bubbles: true }))
        }
      }
    } catch (error) {
      console.warn(error)
      markFailed(clientId)
    }
  }

  // --- the composer while disconnected --------------------------------------------------------
  let disabled = false
  let refreshesWhenOffline = null
  let disabledHere = [] // the controls this module disabled (others, e.g. Trix's dialogs, keep their state)

  function setDisabled(value) {
    disabled = value
    form.inert = value
    form.classList.toggle("composer--disabled", value)
    form.setAttribute("aria-disabled", String(value))
    if (value) {
      // Only what is enabled now, and not Trix's toolbar (its dialog fields, such as a required
      // link field, stay as Trix keeps them: enabling them would make the form invalid).
      disabledHere = [...form.querySelectorAll("textarea, trix-editor, button, input:not([type=hidden])")]
        .filter((e) => !e.disabled && !e.closest("trix-toolbar"))
      for (const element of disabledHere) element.disabled = true
    } else {
      for (const element of disabledHere) element.disabled = false
      disabledHere = []
    }
  }

  const connection = new MutationObserver(() => {
    if (root.classList.contains("offline")) {
      if (!disabled) {
        refreshesWhenOffline = root.dataset.refreshes ?? ""
        setDisabled(true)
      }
    } else if (disabled && root.dataset.cable === "connected" && (root.dataset.refreshes ?? "") !== refreshesWhenOffline) {
      setDisabled(false)
    }
  })
  connection.observe(root, { attributes: true, attributeFilter: ["class", "data-cable", "data-refreshes"] })

  const unlisten = listen(
    [document, "turbo:submit-start", submitStart],
    [document, "turbo:submit-end", submitEnd],
    [list, "click", retry],
  )
  return () => {
    unlisten()
    connection.disconnect()
    if (disabled) setDisabled(false)
  }
}
