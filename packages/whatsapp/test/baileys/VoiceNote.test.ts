/**
 * The voice note encoder: any audio in, mono Opus in OGG out, through the ffmpeg the install
 * ships (`@ffmpeg-installer/ffmpeg`); input it cannot read fails with the encoder's reason.
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync } from "node:fs"
import { Readable } from "node:stream"
import * as VoiceNote from "../../src/VoiceNote.js"
import { opusHead, wav } from "./support/Audio.js"

const readAll = async (stream: Readable): Promise<Buffer> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of stream) chunks.push(Buffer.from(chunk))
  return Buffer.concat(chunks)
}

describe("voice notes: Opus in OGG", () => {
  it("the install ships an ffmpeg with libopus", () => {
    assert.isTrue(existsSync(VoiceNote.ffmpegPath()), VoiceNote.ffmpegPath())
  })

  it("a stereo WAV becomes mono Opus in OGG at 16 kHz", async () => {
    const ogg = await readAll(VoiceNote.toOpus(Readable.from([wav()])))
    assert.strictEqual(ogg.subarray(0, 4).toString(), "OggS")
    assert.deepStrictEqual(opusHead(ogg), { channels: 1, inputRate: 16000 })
  }, 30_000)

  it("a file that is not audio fails with the encoder's reason", async () => {
    const error = await readAll(VoiceNote.toOpus(Readable.from([Buffer.from("this is not a sound")]))).then(
      () => null,
      (e: unknown) => e
    )
    assert.instanceOf(error, VoiceNote.TranscodeFailed)
    assert.match((error as Error).message, /^the voice note could not be converted to Opus: .*pipe:0/)
  }, 30_000)

  it("a file that fails before its reader starts (a store that stops serving it) fails the reader, and nothing else", async () => {
    const file = new Readable({ read() {} })
    const output = VoiceNote.toOpus(file)
    file.destroy(new Error("Blob store get failed: aborted"))
    // Before, the encoder's output failed with nobody listening, which ended the process.
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve))
    const error = await readAll(output).then(() => null, (e: unknown) => e)
    assert.instanceOf(error, VoiceNote.TranscodeFailed)
    assert.match((error as Error).message, /the file could not be read: Blob store get failed: aborted$/)
  })

  it("no encoder at all is said as such", async () => {
    const error = await readAll(VoiceNote.toOpus(Readable.from([wav()]), "/nonexistent/ffmpeg")).then(() => null, (e: unknown) => e)
    assert.match((error as Error).message, /cannot run ffmpeg \(\/nonexistent\/ffmpeg\): spawn \/nonexistent\/ffmpeg ENOENT/)
  })
})
