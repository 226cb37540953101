// The composer: Enter sends (Shift+Enter starts a new line), the form posts through Turbo
// (the turbo-stream answer appends the message), and after a successful post the field is
// cleared and the form gets a fresh client message id for the next one.
import { listen, uuid } from "./util.js"

export function startComposer({ form }) {
  if (!form) return () => {}
  const field = form.querySelector("textarea")
  const clientId = form.querySelector('input[name="message[client_message_id]"]')

  function keydown(event) {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return
    event.preventDefault()
    if (field.value.trim() !== "") form.requestSubmit()
  }

  function submitEnd(event) {
    if (event.target !== form || !event.detail.success) return
    field.value = ""
    clientId.value = uuid()
    field.dispatchEvent(new Event("input", { bubbles: true }))
    field.focus()
  }

  return listen([field, "keydown", keydown], [document, "turbo:submit-end", submitEnd])
}
