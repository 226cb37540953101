// Only the booster sees the remove button of a boost: the chips (also those appended live)
// carry data-booster-id; one style rule, written once per page for the signed-in person's id,
// shows their own chips' delete forms (the stylesheet hides all of them).
function showOwnBoostDeletes() {
  const id = document.querySelector('meta[name="current-user-id"]')?.content
  if (!id || !/^\d+$/.test(id) || document.getElementById("own-boosts-style")) return
  const style = document.createElement("style")
  style.id = "own-boosts-style"
  style.textContent = `.boost[data-booster-id="${id}"] .boost__delete { display: inline-flex; }`
  document.head.append(style)
}

addEventListener("turbo:load", showOwnBoostDeletes)
if (document.readyState !== "loading") showOwnBoostDeletes()
