// Keeps the composer above a phone's soft keyboard: the room fills the visual viewport, whose
// height this keeps in --viewport-height on <html> (the layout viewport does not shrink for
// the keyboard on every browser; the viewport meta's interactive-widget asks those that can).
import { listen } from "./util.js"

export function startSoftKeyboard() {
  const viewport = window.visualViewport
  if (!viewport) return () => {}
  const root = document.documentElement
  function resize() {
    if (viewport.scale > 1.01) return // pinch-zoomed: the keyboard is not what shrank it
    root.style.setProperty("--viewport-height", `${Math.round(viewport.height)}px`)
  }
  resize()
  const stop = listen([viewport, "resize", resize])
  return () => {
    stop()
    root.style.removeProperty("--viewport-height")
  }
}
