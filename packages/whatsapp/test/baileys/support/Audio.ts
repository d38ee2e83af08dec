/** Audio files made in the test, and what an OGG/Opus file says about itself. */

/** One second of a 440 Hz tone as a WAV file: 8 kHz, 16-bit, stereo (what a phone never sends as a voice note). */
export const wav = (seconds = 1): Buffer => {
  const rate = 8000
  const channels = 2
  const samples = rate * seconds
  const data = Buffer.alloc(samples * channels * 2)
  for (let i = 0; i < samples; i++) {
    const v = Math.round(Math.sin((2 * Math.PI * 440 * i) / rate) * 12000)
    for (let c = 0; c < channels; c++) data.writeInt16LE(v, (i * channels + c) * 2)
  }
  const header = Buffer.alloc(44)
  header.write("RIFF", 0)
  header.writeUInt32LE(36 + data.length, 4)
  header.write("WAVE", 8)
  header.write("fmt ", 12)
  header.writeUInt32LE(16, 16)
  header.writeUInt16LE(1, 20)
  header.writeUInt16LE(channels, 22)
  header.writeUInt32LE(rate, 24)
  header.writeUInt32LE(rate * channels * 2, 28)
  header.writeUInt16LE(channels * 2, 32)
  header.writeUInt16LE(16, 34)
  header.write("data", 36)
  header.writeUInt32LE(data.length, 40)
  return Buffer.concat([header, data])
}

/** The Opus identification header of an OGG file: channels and the input's sample rate. */
export const opusHead = (ogg: Buffer) => {
  const at = ogg.indexOf("OpusHead")
  return at === -1 ? null : { channels: ogg[at + 9], inputRate: ogg.readUInt32LE(at + 12) }
}
