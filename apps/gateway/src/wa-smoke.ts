/**
 * `npm run wa:smoke`: a manual check of the Baileys driver against the real WhatsApp network,
 * for a person with a phone (it cannot run in CI: it needs a WhatsApp account and a phone to
 * scan with). It links a device (QR drawn in the terminal, or an 8-digit code), sends a text and
 * a voice note to a given phone, prints every ack and incoming message for a while, then unlinks
 * the device. Nothing is stored: the auth state lives in memory for the run. See docs/baileys.md.
 *
 *   npm run wa:smoke -- --to 77017654321 [--method qr|code --phone 77011234567] [--voice file] [--wait 120]
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { layerMemory } from "@wagate/whatsapp/baileys/AuthStore"
import * as BaileysDriver from "@wagate/whatsapp/BaileysDriver"
import * as BaileysSettings from "@wagate/whatsapp/baileys/BaileysSettings"
import * as LiveSocketFactory from "@wagate/whatsapp/baileys/LiveSocketFactory"
import * as QrImage from "@wagate/whatsapp/QrImage"
import { type DriverEvent, fileOf, WhatsAppDriver } from "@wagate/whatsapp/WhatsAppDriver"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { parseArgs } from "node:util"

const { values: args } = parseArgs({
  options: {
    to: { type: "string" },
    method: { type: "string", default: "qr" },
    phone: { type: "string" },
    voice: { type: "string" },
    wait: { type: "string", default: "120" },
    help: { type: "boolean", default: false }
  }
})

const usage = `npm run wa:smoke -- --to <phone> [--method qr|code] [--phone <your number, for --method code>]
                        [--voice <audio file>] [--wait <seconds to print replies, default 120>]

Links this machine as a device of your WhatsApp account (scan the QR, or type the code on the phone:
Linked devices > Link a device > Link with phone number), sends a text and a voice note to --to,
prints acks and incoming messages, then unlinks the device. Stop early with Ctrl-C (it still unlinks).`

const digits = (s: string | undefined) => (s ?? "").replace(/[^\d]/g, "")

/** Two seconds of a 440 Hz tone as a WAV file (not Opus: the driver transcodes it). */
const tone = (): Buffer => {
  const rate = 16000
  const data = Buffer.alloc(rate * 2 * 2)
  for (let i = 0; i < rate * 2; i++) data.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * i) / rate) * 8000), i * 2)
  const h = Buffer.alloc(44)
  h.write("RIFF", 0)
  h.writeUInt32LE(36 + data.length, 4)
  h.write("WAVEfmt ", 8)
  h.writeUInt32LE(16, 16)
  h.writeUInt16LE(1, 20)
  h.writeUInt16LE(1, 22)
  h.writeUInt32LE(rate, 24)
  h.writeUInt32LE(rate * 2, 28)
  h.writeUInt16LE(2, 32)
  h.writeUInt16LE(16, 34)
  h.write("data", 36)
  h.writeUInt32LE(data.length, 40)
  return Buffer.concat([h, data])
}

const print = (line: string) => Effect.sync(() => console.log(`${new Date().toISOString()} ${line}`))

const waId = () => `3EB0${randomBytes(9).toString("hex").toUpperCase()}`

const program = Effect.gen(function*() {
  const to = digits(args.to)
  const method = args.method === "code" ? "code" : "qr"
  const phone = digits(args.phone)
  if (args.help || to === "" || (method === "code" && phone === "")) {
    console.error(usage)
    process.exitCode = args.help ? 0 : 2
    return
  }
  const voice = args.voice === undefined ? tone() : readFileSync(args.voice)
  const waitMs = Math.max(0, Number(args.wait) || 0) * 1000

  const driver = yield* WhatsAppDriver
  const working = yield* Deferred.make<void, string>()
  const onEvent = (event: DriverEvent) =>
    Effect.gen(function*() {
      switch (event._tag) {
        case "Connection": {
          yield* print(`status ${event.status}${event.reason === undefined ? "" : ` (${event.reason})`}`)
          if (event.qr !== undefined) {
            const art = yield* Effect.promise(() => QrImage.terminalArt(event.qr!))
            console.log(`${art}\nScan with WhatsApp: Settings > Linked devices > Link a device`)
          }
          if (event.pairingCode !== undefined) {
            yield* print(`pairing code ${event.pairingCode.slice(0, 4)}-${event.pairingCode.slice(4)}: type it on the phone`)
          }
          if (event.status === "WORKING") yield* Deferred.succeed(working, undefined)
          if (event.status === "FAILED" || event.status === "STOPPED") {
            yield* Deferred.fail(working, `${event.status}: ${event.reason ?? ""}`)
          }
          return
        }
        case "Ack":
          return yield* print(`ack ${event.waMessageId} ${event.ack}${event.error === undefined ? "" : ` (${event.error})`}`)
        case "Incoming": {
          const m = event.message
          return yield* print(
            `incoming ${m.waMessageId} from ${m.peer || m.chatId} (${m.name ?? "no name"}) ${m.type}: ${m.text}`
          )
        }
        case "LidMapped":
          return yield* print(`LID mapping ${event.pairs.map((p) => `${p.lid} = ${p.phone}`).join(", ")}`)
        case "Restricted":
          return yield* print(`restricted until ${event.until === null ? "unknown" : new Date(event.until).toISOString()}: ${event.reason}`)
        case "Unrestricted":
          return yield* print("restriction lifted")
      }
    })

  const session = yield* driver.open({ id: 1, phone: phone === "" ? to : phone, linked: false }, onEvent)
  // Whatever happens from here on, the device is unlinked at the end.
  yield* Effect.addFinalizer(() =>
    Effect.zipRight(print("unlinking the device"), session.logout).pipe(Effect.timeout("30 seconds"), Effect.ignore)
  )
  yield* print(`linking by ${method}`)
  yield* session.link({ kind: method })
  yield* Deferred.await(working)

  const sent = (kind: string, id: string, result: Effect.Effect<void, unknown>) =>
    result.pipe(
      Effect.matchEffect({
        onFailure: (e) => print(`${kind} ${id} NOT sent: ${String((e as { reason?: string }).reason ?? e)}`),
        onSuccess: () => print(`${kind} ${id} taken by WhatsApp's server`)
      })
    )
  const textId = waId()
  yield* sent("text", textId, session.send({ waMessageId: textId, to, content: { kind: "text", text: "wagate smoke test: hello" } }))
  const voiceId = waId()
  yield* sent(
    "voice note",
    voiceId,
    session.send({
      waMessageId: voiceId,
      to,
      content: {
        kind: "voice",
        media: {
          open: fileOf(new Uint8Array(voice)),
          size: voice.length,
          mimeType: args.voice === undefined ? "audio/wav" : "application/octet-stream"
        }
      }
    })
  )
  yield* print(`printing acks and replies for ${waitMs / 1000} s (reply from the phone to see them; Ctrl-C stops)`)
  yield* Effect.sleep(Duration.millis(waitMs))
})

const Driver = Layer.unwrapEffect(
  Effect.map(BaileysSettings.config, (settings) =>
    Layer.scoped(WhatsAppDriver, BaileysDriver.make({ ...settings, logLevel: "warn" })).pipe(
      Layer.provide(LiveSocketFactory.layer),
      Layer.provide(layerMemory)
    ))
)

NodeRuntime.runMain(
  Effect.scoped(program).pipe(
    Effect.provide(Driver),
    Effect.withTracerEnabled(false)
  )
)
