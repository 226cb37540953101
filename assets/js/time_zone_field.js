// The time zone of the profile's digest settings (`input[data-browser-time-zone]`): when the
// person has none stored, the field is filled with the browser's own, the IANA name
// `Intl.DateTimeFormat().resolvedOptions().timeZone` reports (`Europe/Paris`), shown before it
// is saved with the form and free to change. A stored zone is left as it is.
function fill() {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone
  if (!zone) return
  for (const input of document.querySelectorAll("input[data-browser-time-zone]")) {
    if (!input.value.trim()) input.value = zone
  }
}

// Reached through Turbo Drive the module is evaluated once per document: later visits fill on
// `turbo:load`.
addEventListener("turbo:load", fill)
fill()
