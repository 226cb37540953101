// Forms that ask first: a form with `data-turbo-confirm="question"` is sent only when the reader
// answers yes. Under Turbo Drive, Turbo itself asks (with the same attribute); this covers a page
// loaded without it, such as a room's settings opened directly.
document.addEventListener("submit", (event) => {
  if ("Turbo" in window) return
  const form = event.target
  const question = form instanceof HTMLFormElement ? form.dataset.turboConfirm : null
  if (question && !window.confirm(question)) event.preventDefault()
})
