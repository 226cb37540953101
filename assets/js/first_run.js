// The first-run form (`form[data-first-run]`): a picked picture shows in the round preview, and
// the form then goes as multipart with the page's CSRF token in `X-CSRF-Token` (the server
// streams multipart bodies, so the token cannot wait in the body), landing where the answer
// redirects. Without a picture the form posts as any other.
const form = document.querySelector("form[data-first-run]")
const input = form?.querySelector('input[type="file"]')
const preview = form?.querySelector("[data-first-run-preview]")

function showPreview() {
  const file = input.files[0]
  if (!file) {
    preview.hidden = true
    preview.removeAttribute("src")
    return
  }
  preview.src = URL.createObjectURL(file)
  preview.hidden = false
}

async function submitWithPicture(event) {
  if (!input.files.length) return
  event.preventDefault()
  const token = document.querySelector('meta[name="csrf-token"]')?.content ?? ""
  const button = form.querySelector('button[type="submit"]')
  button.disabled = true
  try {
    const response = await fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      headers: { "X-CSRF-Token": token, Accept: "text/html" },
      credentials: "same-origin",
    })
    if (!response.ok) {
      const page = new DOMParser().parseFromString(await response.text(), "text/html")
      const why = page.querySelector(".alert, main p")?.textContent ?? "The account could not be created."
      let alert = document.querySelector(".first-run .alert")
      if (!alert) {
        alert = document.createElement("p")
        alert.className = "alert"
        alert.setAttribute("role", "alert")
        form.before(alert)
      }
      alert.textContent = response.status === 413 ? "That picture is too large." : why
      return
    }
    location.assign(response.url)
  } finally {
    button.disabled = false
  }
}

if (form && input && preview) {
  input.addEventListener("change", showPreview)
  form.addEventListener("submit", submitWithPicture)
}
