// Files in the composer: picked with the paperclip, pasted, or dropped on the page. Each file
// goes up through @rails/activestorage's DirectUpload (the blob record, then the PUT to the
// disk service, with its MD5), and is then posted as its own message
// (`message[attachment]` = the blob's signed id), as Campfire posts one message per file.
// A progress bar shows the upload; the post's turbo-stream answer appends the message.
import { DirectUpload } from "@rails/activestorage"
import { listen, uuid } from "./util.js"

export function startUploads({ form, Turbo }) {
  const input = form?.querySelector("input.composer__file")
  if (!input) return () => {}
  const progress = form.parentElement.querySelector(".composer__upload-progress")
  const status = form.parentElement.querySelector(".composer__upload-status")
  const url = input.dataset.directUploadUrl
  let queue = Promise.resolve()

  function show(text, fraction) {
    progress.hidden = fraction === null
    if (fraction !== null) progress.value = Math.round(fraction * 100)
    status.textContent = text
  }

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
          show(`${file.name} was not sent: ${error.message ?? error}`, null)
        }
      })
    }
  }

  function picked() {
    upload([...input.files])
    input.value = ""
  }

  function pasted(event) {
    const files = [...(event.clipboardData?.files ?? [])]
    if (files.length === 0) return
    event.preventDefault()
    upload(files)
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
  function dropped(event) {
    document.body.classList.remove("dropping-files")
    if (!carriesFiles(event)) return
    event.preventDefault()
    upload([...event.dataTransfer.files])
  }

  return listen(
    [input, "change", picked],
    [form, "paste", pasted, true],
    [document, "dragover", dragover],
    [document, "dragleave", dragleave],
    [document, "drop", dropped],
  )
}
