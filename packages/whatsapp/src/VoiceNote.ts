/**
 * Voice notes every phone plays: iPhones and WhatsApp for Windows play a push-to-talk note only
 * as mono Opus in OGG, so every voice note is transcoded before it is sent (ffmpeg with libopus:
 * mono, 16 kHz, 24 kbit/s, VoIP tuning), streamed through the encoder, never whole in memory.
 *
 * The encoder is the ffmpeg binary of `@ffmpeg-installer/ffmpeg` (a static build with libopus,
 * shipped inside a per-platform package of the npm registry, so `npm install` sets it up and
 * nothing is downloaded from elsewhere), or the one `FFMPEG_PATH` names (for example Debian's
 * `/usr/bin/ffmpeg`). See docs/baileys.md.
 *
 * @since 1.0.0
 */
import { spawn } from "node:child_process"
import { accessSync, chmodSync, constants } from "node:fs"
import { createRequire } from "node:module"
import { PassThrough, type Readable } from "node:stream"

/** The MIME type WhatsApp gives voice notes. @since 1.0.0 */
export const MIME_TYPE = "audio/ogg; codecs=opus"

/** The encoder's arguments: any audio on stdin, mono Opus in OGG on stdout. @since 1.0.0 */
export const ARGS: ReadonlyArray<string> = [
  "-hide_banner", "-loglevel", "error", "-nostdin",
  "-i", "pipe:0",
  "-vn", "-map_metadata", "-1",
  "-ac", "1", "-ar", "16000",
  "-c:a", "libopus", "-b:a", "24k", "-application", "voip",
  "-f", "ogg", "pipe:1"
]

let found: string | null | undefined

/**
 * The ffmpeg to run: `FFMPEG_PATH`, else the binary of `@ffmpeg-installer/ffmpeg` for this
 * platform, else `ffmpeg` on the PATH.
 *
 * @since 1.0.0
 */
export const ffmpegPath = (): string => {
  const configured = process.env.FFMPEG_PATH
  if (configured !== undefined && configured !== "") return configured
  if (found === undefined) {
    found = null
    try {
      const path = (createRequire(import.meta.url)("@ffmpeg-installer/ffmpeg") as { path: string }).path
      try {
        accessSync(path, constants.X_OK)
      } catch {
        // The package's install script (`chmod u+x`) did not run: make it executable here.
        chmodSync(path, 0o755)
      }
      found = path
    } catch {
      // No build for this platform: the system's ffmpeg, if any.
    }
  }
  return found ?? "ffmpeg"
}

/** The encoder failed: why, in its own words. @since 1.0.0 */
export class TranscodeFailed extends Error {
  constructor(reason: string) {
    super(`the voice note could not be converted to Opus: ${reason}`)
  }
}

/**
 * The audio of `input` as mono Opus in OGG, read as it is encoded. The output stream fails with
 * `TranscodeFailed` when the encoder cannot start or rejects the input; destroying it stops the
 * encoder.
 *
 * @since 1.0.0
 */
export const toOpus = (input: Readable, path: string = ffmpegPath()): Readable => {
  const output = new PassThrough()
  // Its reader sees the error (the stream keeps it); one that comes before Baileys reads, or
  // after it gave up, must not be an unhandled 'error', which ends the process.
  output.on("error", () => {})
  const child = spawn(path, ARGS as Array<string>, { stdio: ["pipe", "pipe", "pipe"] })
  let stderr = ""
  let failed = false
  const fail = (reason: string) => {
    if (failed) return
    failed = true
    input.unpipe(child.stdin)
    input.destroy()
    child.kill("SIGKILL")
    output.destroy(new TranscodeFailed(reason))
  }
  child.stderr.setEncoding("utf8")
  child.stderr.on("data", (s: string) => {
    if (stderr.length < 2000) stderr += s
  })
  child.on("error", (e) => fail(`cannot run ffmpeg (${path}): ${e.message}`))
  // The encoder may stop reading early (a broken input): its exit code says why.
  child.stdin.on("error", () => {})
  input.on("error", (e) => fail(`the file could not be read: ${e.message}`))
  input.pipe(child.stdin)
  child.stdout.pipe(output, { end: false })
  child.on("close", (code, signal) => {
    if (failed) return
    if (code === 0) output.end()
    else fail(stderr.trim().split("\n").slice(-2).join(" ") || `ffmpeg exited with ${code ?? signal}`)
  })
  output.on("close", () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  })
  return output
}
