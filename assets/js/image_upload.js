// Avatar and logo forms (`<form data-image-upload>` with a file input): picking a file posts the
// form as multipart with the page's CSRF token in `X-CSRF-Token` (the server streams the file
// to storage, so the token cannot wait in the body behind it), then opens the page the answer
// redirects to, which shows the new image. A refusal (not an image, too large) is shown beside
// the field and nothing changes.
function formOf(target) {
  return target instanceof Element ? target.closest("form[data-image-upload]") : null
}

async function upload(form) {
  const input = form.querySelector('input[type="file"]')
  if (!input?.files.length) return
  const status = form.querySelector("[data-image-upload-status]")
  const token = document.querySelector('meta[name="csrf-token"]')?.content ?? ""
  form.dataset.state = "uploading"
  if (status) status.textContent = "Uploading…"
  try {
    const response = await fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      headers: { "X-CSRF-Token": token, Accept: "text/html" },
      credentials: "same-origin",
    })
    if (!response.ok) throw new Error(response.status === 413 ? "That file is too large." : "That file is not an image that can be used.")
    form.dataset.state = "done"
    window.location.assign(response.redirected ? response.url : window.location.href)
  } catch (error) {
    form.dataset.state = "failed"
    if (status) status.textContent = error.message
    input.value = ""
  }
}

document.addEventListener("change", (event) => {
  const form = formOf(event.target)
  if (form && event.target.type === "file") upload(form)
})
document.addEventListener("submit", (event) => {
  const form = formOf(event.target)
  if (!form) return
  event.preventDefault()
  upload(form)
})
