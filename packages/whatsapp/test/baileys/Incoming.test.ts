/**
 * Messages received through the Baileys driver: people by phone and by LID (with a mapping that
 * survives restarts), groups with their subject and author, messages written on the phone,
 * files fetched on demand, and replays after a reconnect under the same ids.
 */
import { assert, describe, it } from "@effect/vitest"
import type { WAMessage } from "@whiskeysockets/baileys"
import * as Effect from "effect/Effect"
import { type IncomingMessage, readAll } from "../../src/WhatsAppDriver.js"
import * as Harness from "./support/Harness.js"

const { flush } = Harness
const PEER = "77017654321"
const LID = "204958372615439"
const T = 1_764_000_000

const working = (h: Harness.Harness) =>
  Effect.gen(function*() {
    const opened = yield* Harness.open({ id: 1, linked: true })
    h.fake.latest().open()
    yield* flush
    opened.rec.take()
    return opened
  })

const msg = (id: string, key: Partial<WAMessage["key"]>, message: WAMessage["message"], more: Partial<WAMessage> = {}): WAMessage => ({
  key: { remoteJid: `${PEER}@s.whatsapp.net`, fromMe: false, id, ...key },
  message,
  messageTimestamp: T,
  pushName: "Aigerim",
  ...more
})

/** The incoming messages recorded, without their download effect. */
const incoming = (events: ReadonlyArray<unknown>) =>
  events.flatMap((e: any) =>
    e._tag === "Incoming"
      ? [{ ...e.message, media: e.message.media === null ? null : { ...e.message.media, download: "<effect>" } }]
      : []
  ) as Array<Omit<IncomingMessage, "media"> & { media: unknown }>

const base = {
  fromMe: false,
  chatId: `${PEER}@c.us`,
  peer: PEER,
  peerLid: null,
  name: "Aigerim",
  isGroup: false,
  groupSubject: null,
  author: null,
  timestamp: T * 1000,
  media: null
}

describe("Baileys driver: incoming messages", () => {
  it.scoped("a text from a phone: every field of the message", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      h.fake.latest().upsert([msg("WA1", {}, { conversation: "Salem!" })])
      yield* flush
      assert.deepStrictEqual(incoming(rec.events), [{ ...base, waMessageId: "WA1", type: "text", text: "Salem!" }])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("every kind maps to its type; protocol messages, status updates, channels and WhatsApp's service account are not messages", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      h.fake.latest().upsert([
        msg("I", {}, { imageMessage: { caption: "pic", mimetype: "image/jpeg", fileLength: 1000 } }),
        msg("V", {}, { videoMessage: { mimetype: "video/mp4" } }),
        msg("A", {}, { audioMessage: { mimetype: "audio/mpeg" } }),
        msg("P", {}, { audioMessage: { mimetype: "audio/ogg; codecs=opus", ptt: true } }),
        msg("D", {}, { documentMessage: { mimetype: "application/pdf", fileName: "a.pdf" } }),
        msg("S", {}, { stickerMessage: { mimetype: "image/webp" } }),
        msg("L", {}, { locationMessage: { degreesLatitude: 43.2, degreesLongitude: 76.9 } }),
        msg("C", {}, { contactMessage: { displayName: "Dana" } }),
        msg("R", {}, { reactionMessage: { text: "❤️", key: { id: "WA1" } } }),
        msg("Q", {}, { pollCreationMessage: { name: "Q?", options: [{ optionName: "Y" }] } }),
        msg("U", {}, { eventMessage: { name: "Party" } }),
        msg("X", {}, { protocolMessage: { type: 0 } }),
        msg("ST", { remoteJid: "status@broadcast", participant: `${PEER}@s.whatsapp.net` }, { conversation: "story" }),
        msg("NL", { remoteJid: "120363111111111111@newsletter" }, { conversation: "news" }),
        // WhatsApp's own service account and its announcements.
        msg("PSA", { remoteJid: "0@s.whatsapp.net" }, { conversation: "WhatsApp news" })
      ])
      yield* flush
      const got = incoming(rec.events)
      assert.deepStrictEqual(got.map((m) => `${m.waMessageId}:${m.type}:${m.text}`), [
        "I:image:pic",
        "V:video:",
        "A:audio:",
        "P:voice:",
        "D:document:",
        "S:sticker:",
        "L:location:43.2,76.9",
        "C:contact:Dana",
        "R:reaction:❤️",
        "Q:poll:Q?\n- Y",
        "U:unknown:Party"
      ])
      assert.deepStrictEqual(got[0]!.media, { mimeType: "image/jpeg", filename: null, size: 1000, download: "<effect>" })
      assert.deepStrictEqual(got[4]!.media, { mimeType: "application/pdf", filename: "a.pdf", size: null, download: "<effect>" })
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a file is downloaded only when asked, through the socket", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      h.fake.latest().upsert([msg("IMG", {}, { imageMessage: { mimetype: "image/jpeg" } })])
      yield* flush
      assert.deepStrictEqual(h.fake.downloads, [])
      const event = rec.events.find((e) => e._tag === "Incoming")!
      const media = event._tag === "Incoming" ? event.message.media! : null
      assert.deepStrictEqual([...(yield* readAll(media!.download))], [1, 2, 3])
      assert.deepStrictEqual(h.fake.downloads, ["IMG"])
      h.fake.setDownload({ _tag: "fail", error: new Error("media expired") })
      const failed = yield* Effect.flip(readAll(media!.download))
      assert.deepStrictEqual([failed._tag, failed.reason], ["DriverUnavailable", "media download failed: media expired"])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("an animated (Lottie) sticker is a sticker, its file downloaded from the sticker inside it", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      h.fake.latest().upsert([
        msg("LOT", {}, { lottieStickerMessage: { message: { stickerMessage: { mimetype: "application/was", isLottie: true } } } })
      ])
      yield* flush
      const [got] = incoming(rec.events)
      assert.deepStrictEqual([got!.type, got!.media], [
        "sticker",
        { mimeType: "application/was", filename: null, size: null, download: "<effect>" }
      ])
      const event = rec.events.find((e) => e._tag === "Incoming")!
      const media = event._tag === "Incoming" ? event.message.media! : null
      assert.deepStrictEqual([...(yield* readAll(media!.download))], [1, 2, 3])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a view-once message (a linked device is never given its content) is kept as a placeholder", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      // Baileys 7.0.0-rc14 for `<unavailable type="view_once"/>`: the key marked, no content, no stub.
      h.fake.latest().upsert([msg("VO1", { isViewOnce: true }, undefined)])
      yield* flush
      assert.deepStrictEqual(incoming(rec.events), [{
        ...base,
        waMessageId: "VO1",
        type: "unknown",
        text: "View-once message: it can be opened only on the phone"
      }])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("written on the phone: fromMe, to the counterpart, without a name", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      h.fake.latest().upsert([msg("ME1", { fromMe: true }, { extendedTextMessage: { text: "On my way" } }, { pushName: "Shop" })])
      yield* flush
      assert.deepStrictEqual(incoming(rec.events), [{
        ...base,
        waMessageId: "ME1",
        fromMe: true,
        name: null,
        type: "text",
        text: "On my way"
      }])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("LID identities: mapped to the phone when WhatsApp gives both, and the mapping outlives the session", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const first = yield* working(h)
      h.fake.latest().upsert([
        msg("L1", { remoteJid: `${LID}@lid`, remoteJidAlt: `${PEER}@s.whatsapp.net` }, { conversation: "one" }),
        msg("L2", { remoteJid: `${LID}:3@lid` }, { conversation: "two" }),
        msg("L3", { remoteJid: `${PEER}@s.whatsapp.net` }, { conversation: "three" })
      ])
      yield* flush
      const expected = { ...base, peerLid: `${LID}@lid`, type: "text" as const }
      assert.deepStrictEqual(incoming(first.rec.events), [
        { ...expected, waMessageId: "L1", text: "one" },
        { ...expected, waMessageId: "L2", text: "two" },
        { ...expected, waMessageId: "L3", text: "three" }
      ])
      // Stored in Baileys' own format, beside the keys.
      assert.strictEqual(h.backend.rows.get(1)?.get(`lid-mapping/${LID}_reverse`), JSON.stringify(PEER))
      assert.strictEqual(h.backend.rows.get(1)?.get(`lid-mapping/${PEER}`), JSON.stringify(LID))
      yield* first.close

      const second = yield* working(h)
      h.fake.latest().upsert([msg("L4", { remoteJid: `${LID}@lid` }, { conversation: "four" })])
      yield* flush
      assert.deepStrictEqual(incoming(second.rec.events), [{ ...expected, waMessageId: "L4", text: "four" }])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a LID never seen with its phone: no phone (never the LID's digits), chat <lid>@lid; Baileys' mapping events teach it and are reported", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      h.fake.latest().upsert([msg("U1", { remoteJid: "99887766554433@lid" }, { conversation: "who am i" })])
      yield* flush
      h.fake.latest().emit("lid-mapping.update", { lid: "99887766554433@lid", pn: "77010001122@s.whatsapp.net" })
      h.fake.latest().upsert([msg("U2", { remoteJid: "99887766554433@lid" }, { conversation: "now known" })])
      yield* flush
      const got = incoming(rec.events)
      assert.deepStrictEqual(got.map((m) => [m.peer, m.chatId, m.peerLid]), [
        ["", "99887766554433@lid", "99887766554433@lid"],
        ["77010001122", "77010001122@c.us", "99887766554433@lid"]
      ])
      // The entity hears of the mapping before the next message, so it can merge the two chats.
      assert.deepStrictEqual(rec.take().map((l) => l.replace(/^\d+ /, "")), [
        "in : who am i",
        "lids 99887766554433@lid=77010001122",
        "in 77010001122: now known"
      ])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("LID mappings reported from every source: a message with both, history sync, contacts; each pair once", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      const socket = h.fake.latest()
      socket.upsert([msg("M1", { remoteJid: "11111111111111@lid", remoteJidAlt: "77010000001@s.whatsapp.net" }, { conversation: "a" })])
      yield* flush
      socket.emit("messaging-history.set", {
        chats: [],
        contacts: [],
        messages: [],
        lidPnMappings: [{ lid: "22222222222222@lid", pn: "77010000002@s.whatsapp.net" }]
      } as any)
      // rc14's contact sync action: contacts.upsert with the LID and the phone, then lid-mapping.update of the same pair.
      socket.emit("contacts.upsert", [{ id: "77010000003@s.whatsapp.net", lid: "33333333333333@lid", phoneNumber: "77010000003@s.whatsapp.net" }])
      socket.emit("lid-mapping.update", { lid: "33333333333333@lid", pn: "77010000003@s.whatsapp.net" })
      // A LID contact without a phone teaches nothing.
      socket.emit("contacts.upsert", [{ id: "44444444444444@lid", lid: "44444444444444@lid", phoneNumber: undefined }])
      yield* flush
      assert.deepStrictEqual(rec.take().map((l) => l.replace(/^\d+ /, "")), [
        "lids 11111111111111@lid=77010000001",
        "in 77010000001: a",
        "lids 22222222222222@lid=77010000002",
        "lids 33333333333333@lid=77010000003"
      ])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("groups: the group as peer, its subject fetched once and updated, the author's phone (LID resolved)", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    const GROUP = "120363025246125888@g.us"
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      const socket = h.fake.latest()
      socket.groups.set(GROUP, { id: GROUP, subject: "Shop staff", owner: undefined, participants: [] })
      socket.upsert([
        msg("G1", { remoteJid: GROUP, participant: `${PEER}@s.whatsapp.net` }, { conversation: "hi all" }),
        msg("G2", { remoteJid: GROUP, participant: `${LID}@lid`, participantAlt: `${PEER}@s.whatsapp.net` }, {
          conversation: "again"
        })
      ])
      yield* flush
      socket.emit("groups.update", [{ id: GROUP, subject: "Shop staff (new)" }])
      socket.upsert([msg("G3", { remoteJid: GROUP, participant: `${LID}@lid` }, { conversation: "renamed" })])
      socket.upsert([msg("G4", { remoteJid: GROUP, fromMe: true }, { conversation: "from the phone" }, { pushName: "Shop" })])
      yield* flush
      const group = { ...base, chatId: GROUP, peer: "120363025246125888", isGroup: true, type: "text" as const, author: PEER }
      assert.deepStrictEqual(incoming(rec.events), [
        { ...group, waMessageId: "G1", text: "hi all", groupSubject: "Shop staff" },
        { ...group, waMessageId: "G2", text: "again", groupSubject: "Shop staff" },
        { ...group, waMessageId: "G3", text: "renamed", groupSubject: "Shop staff (new)" },
        { ...group, waMessageId: "G4", text: "from the phone", groupSubject: "Shop staff (new)", fromMe: true, name: null, author: null }
      ])
      assert.deepStrictEqual(socket.groupFetches, [GROUP])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("group subjects: all primed in one query when the connection opens; a stale one served at once and refreshed in the background", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    const A = "120363000000000001@g.us"
    const B = "120363000000000002@g.us"
    return Effect.gen(function*() {
      const { rec } = yield* Harness.open({ id: 1, linked: true })
      const socket = h.fake.latest()
      socket.groups.set(A, { id: A, subject: "Couriers", owner: undefined, participants: [] })
      socket.groups.set(B, { id: B, subject: "Suppliers", owner: undefined, participants: [] })
      socket.open()
      yield* flush
      assert.strictEqual(socket.allGroupFetches, 1)
      const from = (id: string, group: string) => msg(id, { remoteJid: group, participant: `${PEER}@s.whatsapp.net` }, { conversation: id })
      socket.upsert([from("A1", A), from("B1", B)])
      yield* flush
      // No query per group.
      assert.deepStrictEqual(socket.groupFetches, [])
      // Eleven minutes later the subject is stale: the message has it at once, a refresh follows.
      socket.groups.set(A, { id: A, subject: "Couriers (night)", owner: undefined, participants: [] })
      yield* Harness.advance(11 * 60_000)
      socket.upsert([from("A2", A)])
      yield* flush
      socket.upsert([from("A3", A)])
      yield* flush
      assert.deepStrictEqual(socket.groupFetches, [A])
      assert.deepStrictEqual(incoming(rec.events).map((m) => [m.waMessageId, m.groupSubject]), [
        ["A1", "Couriers"],
        ["B1", "Suppliers"],
        ["A2", "Couriers"],
        ["A3", "Couriers (night)"]
      ])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a group whose subject cannot be fetched still delivers its messages", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      h.fake.latest().upsert([msg("G1", { remoteJid: "120363000000000009@g.us", participant: `${PEER}@s.whatsapp.net` }, {
        conversation: "x"
      })])
      yield* flush
      assert.deepStrictEqual(incoming(rec.events).map((m) => [m.waMessageId, m.groupSubject, m.author]), [["G1", null, PEER]])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("replays after a reconnect carry the same ids (stored once); a message not decrypted yet waits for its content", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      // WhatsApp could not decrypt it yet: a stub without content under the real id.
      h.fake.latest().upsert([msg("R1", {}, undefined, { messageStubType: 2, messageStubParameters: ["No session record"] })])
      h.fake.latest().upsert([msg("R1", {}, { conversation: "decrypted on retry" })])
      yield* flush
      h.fake.latest().close(428)
      yield* Harness.advance(1000)
      h.fake.latest().open()
      yield* flush
      // Offline delivery replays what the phone sent while the gateway was away.
      h.fake.latest().upsert([msg("R1", {}, { conversation: "decrypted on retry" }), msg("R2", {}, { conversation: "new" })], "append")
      yield* flush
      assert.deepStrictEqual(incoming(rec.events).map((m) => `${m.waMessageId} ${m.text}`), [
        "R1 decrypted on retry",
        "R1 decrypted on retry",
        "R2 new"
      ])
    }).pipe(Effect.provide(h.layer))
  })
})
