// The steps to install the app (`details[data-install-help]`): of its `[data-install-steps]`
// blocks, shows the one for the reader's browser (by its User-Agent) and hides the others; the
// whole box is hidden where the app already runs installed. Without this script the general
// steps ("other") show.

/** Which steps fit the browser whose User-Agent is `ua`. */
export function installPlatform(ua, touchMac = false) {
  const ios = /iPhone|iPad|iPod/.test(ua) || (/Macintosh/.test(ua) && touchMac)
  const android = /Android/.test(ua)
  const edge = /Edg(A|iOS)?\//.test(ua)
  const firefox = /Firefox\/|FxiOS\//.test(ua)
  const chrome = /Chrome\/|CriOS\//.test(ua) && !edge && !/OPR\//.test(ua)
  const safari = /Safari\//.test(ua) && /Version\//.test(ua) && !chrome && !edge && !firefox
  if (ios) return "ios"
  if (edge) return "edge"
  if (firefox) return android ? "firefox-android" : "firefox"
  if (chrome) return android ? "chrome-android" : "chrome"
  if (safari && /Macintosh/.test(ua)) return "safari-mac"
  return "other"
}

function installed() {
  return matchMedia("(display-mode: standalone)").matches || navigator.standalone === true
}

function showSteps() {
  const platform = installPlatform(navigator.userAgent, navigator.maxTouchPoints > 1)
  for (const box of document.querySelectorAll("[data-install-help]")) {
    box.hidden = installed()
    box.dataset.platform = platform
    for (const steps of box.querySelectorAll("[data-install-steps]")) {
      steps.hidden = steps.dataset.installSteps !== platform
    }
  }
}

if (!window.hearthInstallHelpStarted) {
  window.hearthInstallHelpStarted = true
  addEventListener("turbo:load", showSteps)
  if (document.readyState !== "loading") showSteps()
  else addEventListener("DOMContentLoaded", showSteps)
}
