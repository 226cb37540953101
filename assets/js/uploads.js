// Files in the composer: picked with the paperclip, pasted, or dropped on the page. As in
// Campfire's composer they are not sent at once: they wait in a row above the field (`.composer__staged`,
// the form's first row, sorted by name), an image as its thumbnail and any other file as a chip with its name, each
// with a × button that takes it out. Send (the button, or Enter on a desktop) posts them with
// what was typed, the way Campfire does: one message per file, in the row's order, one after
// another, and the typed text as its own message at once (the form's own post, see composer.js
// and posting.js; it does not wait for the files).
//
// Each file goes up through @rails/activestorage's DirectUpload (the blob record, then the PUT
// to the disk service, with its MD5), and is then posted as its own message
// (`message[attachment]` = the blob's signed id); the post's turbo-stream answer appends the
// message. A progress bar shows the upload. A file that could not be sent says so and waits in
// the composer again, for the next Send.
import { DirectUpload } from "@rails/activestorage"
import { listen, uuid } from "./util.js"

const FILE_ICON =
  '<svg class="composer__staged-icon" viewBox="0 0 24 24" width="28" height="28" aria-hidden="true"><path d="M6 2h8l6 6v14H6zm7 1.5V9h5.5M9 13h8M9 16.5h8M9 20h5" fill="none" stroke-width="1.5" stroke-linejoin="round"/></svg>'

export function startUploads({ form, Turbo }) {
  const input = form?.querySelector("input.composer__file")
  const row = form?.querySelector(".composer__staged")
  if (!input || !row) return () => {}
  const progress = form.parentElement.querySelector(".composer__upload-progress")
  const status = form.parentElement.querySelector(".composer__upload-status")
  const url = input.dataset.directUploadUrl
  let queue = Promise.resolve()
  let staged = [] // the files waiting for Send
  let previews = [] // their thumbnails' object URLs

  function show(text, fraction) {
    progress.hidden = fraction === null
    if (fraction !== null) progress.value = Math.round(fraction * 100)
    status.textContent = text
  }

  // --- waiting in the composer ----------------------------------------------------------------
  function stage(files) {
    if (files.length === 0) return
    staged.push(...files)
    staged.sort((a, b) => a.name.localeCompare(b.name))
    render()
  }

  function render() {
    for (const preview of previews) URL.revokeObjectURL(preview)
    previews = []
    row.replaceChildren(...staged.map(item))
    row.hidden = staged.length === 0
  }

  function item(file, index) {
    const li = Object.assign(document.createElement("li"), { className: "composer__staged-file" })
    if (file.type.startsWith("image/")) {
      li.classList.add("composer__staged-file--image")
      const preview = URL.createObjectURL(file)
      previews.push(preview)
      li.append(Object.assign(document.createElement("img"), { className: "composer__staged-thumbnail", src: preview, alt: "" }))
    } else {
      li.insertAdjacentHTML("beforeend", FILE_ICON)
    }
    li.append(Object.assign(document.createElement("span"), { className: "composer__staged-name", textContent: file.name, title: file.name }))
    const remove = Object.assign(document.createElement("button"), { type: "button", className: "composer__staged-remove", textContent: "×" })
    remove.setAttribute("aria-label", `Remove ${file.name}`)
    remove.dataset.index = String(index)
    li.append(remove)
    return li
  }

  function unstage(event) {
    const button = event.target.closest(".composer__staged-remove")
    if (!button) return
    const index = Number(button.dataset.index)
    staged.splice(index, 1)
    render()
    // The focus goes to the next file's ×, or back to the field once none is left.
    const next = row.querySelectorAll(".composer__staged-remove")
    ;(next[Math.min(index, next.length - 1)] ?? form.querySelector("trix-editor, textarea"))?.focus()
  }

  // --- sending ----------------------------------------------------------------------------------
  function directUpload(file) {
    const delegate = {
      directUploadWillStoreFileWithXHR(xhr) {
        xhr.upload.addEventListener("progress", (event) => {
          if (event.lengthComputable) show(`Uploading ${file.name}…`, event.loaded / event.total)
        })
      },
    }
    return new Promise((resolve, reject) => {
      new DirectUpload(file, url, delegate).create((error, blob) => (error ? reject(error) : resolve(blob)))
    })
  }

  async function post(blob) {
    const token = document.querySelector('meta[name="csrf-token"]')?.content ?? ""
    const body = new URLSearchParams({ "message[attachment]": blob.signed_id, "message[client_message_id]": uuid() })
    const response = await fetch(form.action, {
      method: "POST",
      headers: { "X-CSRF-Token": token, Accept: "text/vnd.turbo-stream.html, text/html" },
      body,
      credentials: "same-origin",
    })
    if (!response.ok) throw new Error(`the post answered ${response.status}`)
    Turbo.renderStreamMessage(await response.text())
  }

  function upload(files) {
    for (const file of files) {
      queue = queue.then(async () => {
        show(`Uploading ${file.name}…`, 0)
        try {
          await post(await directUpload(file))
          show("", null)
        } catch (error) {
          show(`${file.name} was not sent (${error.message ?? error}): it waits in the composer, Send tries again.`, null)
          stage([file])
        }
      })
    }
  }

  // Send: the files leave the row and go up; the form's own submit carries on with the text.
  function submit(event) {
    if (event.target !== form || staged.length === 0) return
    const files = staged
    staged = []
    render()
    upload(files)
  }

  // --- picking, pasting, dropping ---------------------------------------------------------------
  function picked() {
    stage([...input.files])
    input.value = ""
  }

  function pasted(event) {
    const files = [...(event.clipboardData?.files ?? [])]
    if (files.length === 0) return
    event.preventDefault()
    stage(files)
  }

  const carriesFiles = (event) => [...(event.dataTransfer?.types ?? [])].includes("Files")
  function dragover(event) {
    if (!carriesFiles(event)) return
    event.preventDefault()
    document.body.classList.add("dropping-files")
  }
  function dragleave(event) {
    if (event.relatedTarget === null) document.body.classList.remove("dropping-files")
  }
  // In the capture phase: a file dropped on the editor is staged, not taken by Trix.
  function dropped(event) {
    document.body.classList.remove("dropping-files")
    if (!carriesFiles(event)) return
    event.preventDefault()
    event.stopPropagation()
    stage([...event.dataTransfer.files])
  }

  const unlisten = listen(
    [input, "change", picked],
    [form, "paste", pasted, true],
    [form, "submit", submit],
    [row, "click", unstage],
    [document, "dragover", dragover],
    [document, "dragleave", dragleave],
    [document, "drop", dropped, true],
  )
  return () => {
    unlisten()
    for (const preview of previews) URL.revokeObjectURL(preview)
  }
}
