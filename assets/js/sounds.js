// `/play <name>`: the message is drawn as the sound's icon and text (the server's partial,
// class message--sound); this module plays the sound when such a message arrives live, and
// again when its button is clicked. Every sound is synthesized here with the Web Audio API:
// no recording ships with Hearth. The names are those of render.rs' SOUNDS.
import { listen } from "./util.js"

let audio = null

function context() {
  audio ??= new AudioContext()
  if (audio.state === "suspended") audio.resume().catch(() => {})
  return audio
}

// One note: an oscillator of `type` from `freq` (sliding to `to`), attack 10 ms, decaying
// over `dur` seconds from `gain`.
function tone(ctx, { type = "sine", freq, to, at = 0, dur = 0.3, gain = 0.2, vibrato = 0 }) {
  const start = ctx.currentTime + at
  const osc = ctx.createOscillator()
  const amp = ctx.createGain()
  osc.type = type
  osc.frequency.setValueAtTime(freq, start)
  if (to) osc.frequency.exponentialRampToValueAtTime(to, start + dur)
  if (vibrato) {
    const lfo = ctx.createOscillator()
    const depth = ctx.createGain()
    lfo.frequency.value = 6
    depth.gain.value = vibrato
    lfo.connect(depth).connect(osc.frequency)
    lfo.start(start)
    lfo.stop(start + dur)
  }
  amp.gain.setValueAtTime(0.0001, start)
  amp.gain.exponentialRampToValueAtTime(gain, start + 0.01)
  amp.gain.exponentialRampToValueAtTime(0.0001, start + dur)
  osc.connect(amp).connect(ctx.destination)
  osc.start(start)
  osc.stop(start + dur + 0.05)
}

// A burst of white noise through a filter: drums, cymbals, a crowd.
function noise(ctx, { at = 0, dur = 0.2, gain = 0.2, filter = "highpass", freq = 2000 }) {
  const start = ctx.currentTime + at
  const buffer = ctx.createBuffer(1, Math.max(1, Math.floor(ctx.sampleRate * dur)), ctx.sampleRate)
  const data = buffer.getChannelData(0)
  for (let i = 0; i < data.length; i++) data[i] = Math.random() * 2 - 1
  const source = ctx.createBufferSource()
  source.buffer = buffer
  const shape = ctx.createBiquadFilter()
  shape.type = filter
  shape.frequency.value = freq
  const amp = ctx.createGain()
  amp.gain.setValueAtTime(gain, start)
  amp.gain.exponentialRampToValueAtTime(0.0001, start + dur)
  source.connect(shape).connect(amp).connect(ctx.destination)
  source.start(start)
}

const SOUNDS = {
  bell(ctx) {
    for (const [ratio, gain] of [[1, 0.25], [2.76, 0.08], [5.4, 0.04]]) tone(ctx, { freq: 880 * ratio, dur: 1.8, gain })
  },
  crickets(ctx) {
    for (let chirp = 0; chirp < 6; chirp++) {
      for (let pulse = 0; pulse < 3; pulse++) {
        tone(ctx, { freq: 4400, at: chirp * 0.45 + pulse * 0.05, dur: 0.04, gain: 0.05 })
      }
    }
  },
  drumroll(ctx) {
    for (let i = 0; i < 28; i++) noise(ctx, { at: i * 0.06, dur: 0.06, gain: 0.05 + i * 0.004, filter: "bandpass", freq: 1800 })
    noise(ctx, { at: 1.75, dur: 1.2, gain: 0.25, freq: 5000 })
    tone(ctx, { freq: 110, to: 50, at: 1.75, dur: 0.4, gain: 0.4 })
  },
  horn(ctx) {
    tone(ctx, { type: "square", freq: 392, at: 0, dur: 0.35, gain: 0.08 })
    tone(ctx, { type: "square", freq: 523.25, at: 0.35, dur: 0.8, gain: 0.08, vibrato: 4 })
  },
  rimshot(ctx) {
    tone(ctx, { freq: 180, to: 60, at: 0, dur: 0.18, gain: 0.45 })
    tone(ctx, { freq: 180, to: 60, at: 0.22, dur: 0.18, gain: 0.45 })
    noise(ctx, { at: 0.5, dur: 0.9, gain: 0.2, freq: 6000 })
  },
  tada(ctx) {
    const notes = [523.25, 659.25, 783.99]
    notes.forEach((freq, i) => tone(ctx, { type: "triangle", freq, at: i * 0.09, dur: 0.2, gain: 0.18 }))
    for (const freq of [...notes, 1046.5]) tone(ctx, { type: "triangle", freq, at: 0.3, dur: 1.1, gain: 0.12, vibrato: 3 })
  },
  trombone(ctx) {
    const notes = [392, 369.99, 349.23]
    notes.forEach((freq, i) => tone(ctx, { type: "sawtooth", freq, at: i * 0.45, dur: 0.42, gain: 0.07 }))
    tone(ctx, { type: "sawtooth", freq: 329.63, to: 311.13, at: 1.35, dur: 1.3, gain: 0.07, vibrato: 5 })
  },
  yay(ctx) {
    noise(ctx, { dur: 1.4, gain: 0.12, filter: "bandpass", freq: 1200 })
    tone(ctx, { type: "triangle", freq: 440, to: 880, dur: 0.5, gain: 0.15 })
    tone(ctx, { type: "triangle", freq: 880, at: 0.5, dur: 0.6, gain: 0.12, vibrato: 8 })
  },
}

export function play(name) {
  const sound = SOUNDS[name]
  if (!sound) return false
  document.documentElement.dataset.soundPlayed = name
  try {
    sound(context())
  } catch {
    return false // no audio output: the message still shows what played
  }
  return true
}

export function startSounds({ list }) {
  function beforeStreamRender(event) {
    const stream = event.detail?.newStream ?? event.target
    if (stream?.getAttribute?.("action") !== "append" || stream.getAttribute("target") !== list.id) return
    const names = [...stream.templateContent.querySelectorAll(".message__sound[data-sound]")]
      .filter((button) => !document.getElementById(button.closest(".message")?.id ?? "") ||
        document.getElementById(button.closest(".message").id).classList.contains("message--pending"))
      .map((button) => button.dataset.sound)
    // Only a message new to this page plays (a catch-up can repeat one already shown).
    if (names.length > 0 && !document.hidden) play(names.at(-1))
  }

  function clicked(event) {
    const button = event.target.closest(".message__sound[data-sound]")
    if (button && list.contains(button)) play(button.dataset.sound)
  }

  return listen([document, "turbo:before-stream-render", beforeStreamRender], [list, "click", clicked])
}
