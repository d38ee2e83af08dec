/**
 * The pure mappings of the driver: message content to Message `type` / text / file, delivery
 * reports to acks (463 to a restriction), and the port's outgoing content to Baileys content.
 */
import { assert, describe, it } from "@effect/vitest"
import { proto, type WAMessageUpdate } from "@whiskeysockets/baileys"
import * as Acks from "../../src/baileys/Acks.js"
import * as IncomingContent from "../../src/baileys/IncomingContent.js"
import * as Outgoing from "../../src/baileys/Outgoing.js"
import { Readable } from "node:stream"
import { fileOf } from "../../src/WhatsAppDriver.js"

const media = { open: fileOf(new Uint8Array([1, 2])), size: 2, mimeType: "x/y" }

describe("IncomingContent.classify", () => {
  const table: Array<[string, proto.IMessage | null | undefined, IncomingContent.Content | null]> = [
    ["conversation", { conversation: "hi" }, { type: "text", text: "hi", file: null }],
    ["extended text", { extendedTextMessage: { text: "link https://x.kz" } }, {
      type: "text",
      text: "link https://x.kz",
      file: null
    }],
    ["image", { imageMessage: { caption: "look", mimetype: "image/png", fileLength: 2048 } }, {
      type: "image",
      text: "look",
      file: { mimeType: "image/png", filename: null, size: 2048 }
    }],
    ["video", { videoMessage: { mimetype: "video/mp4", fileLength: 10 } }, {
      type: "video",
      text: "",
      file: { mimeType: "video/mp4", filename: null, size: 10 }
    }],
    ["video note (ptv)", { ptvMessage: { mimetype: "video/mp4" } }, {
      type: "video",
      text: "",
      file: { mimeType: "video/mp4", filename: null, size: null }
    }],
    ["audio file", { audioMessage: { mimetype: "audio/mpeg", ptt: false, fileLength: 5 } }, {
      type: "audio",
      text: "",
      file: { mimeType: "audio/mpeg", filename: null, size: 5 }
    }],
    ["voice note", { audioMessage: { mimetype: "audio/ogg; codecs=opus", ptt: true } }, {
      type: "voice",
      text: "",
      file: { mimeType: "audio/ogg; codecs=opus", filename: null, size: null }
    }],
    ["document", { documentMessage: { mimetype: "application/pdf", fileName: "inv.pdf", fileLength: 99 } }, {
      type: "document",
      text: "",
      file: { mimeType: "application/pdf", filename: "inv.pdf", size: 99 }
    }],
    ["document with caption", {
      documentWithCaptionMessage: { message: { documentMessage: { caption: "Invoice", fileName: "a.pdf" } } }
    }, { type: "document", text: "Invoice", file: { mimeType: "application/octet-stream", filename: "a.pdf", size: null } }],
    ["sticker", { stickerMessage: {} }, {
      type: "sticker",
      text: "",
      file: { mimeType: "image/webp", filename: null, size: null }
    }],
    ["location", { locationMessage: { degreesLatitude: 43.25, degreesLongitude: 76.95, name: "Office" } }, {
      type: "location",
      text: "Office (43.25,76.95)",
      file: null
    }],
    ["live location", { liveLocationMessage: { degreesLatitude: 1, degreesLongitude: 2 } }, {
      type: "location",
      text: "1,2",
      file: null
    }],
    ["live location with a caption", { liveLocationMessage: { degreesLatitude: 1, degreesLongitude: 2, caption: "here" } }, {
      type: "location",
      text: "here (1,2)",
      file: null
    }],
    ["contact", { contactMessage: { displayName: "Aigerim", vcard: "BEGIN:VCARD" } }, {
      type: "contact",
      text: "Aigerim",
      file: null
    }],
    ["contacts", { contactsArrayMessage: { contacts: [{ displayName: "A" }, { displayName: "B" }] } }, {
      type: "contact",
      text: "A, B",
      file: null
    }],
    ["reaction", { reactionMessage: { text: "👍", key: { id: "X" } } }, { type: "reaction", text: "👍", file: null }],
    ["reaction taken back", { reactionMessage: { text: "", key: { id: "X" } } }, null],
    ["poll", { pollCreationMessageV3: { name: "Lunch?", options: [{ optionName: "Plov" }, { optionName: "Manty" }] } }, {
      type: "poll",
      text: "Lunch?\n- Plov\n- Manty",
      file: null
    }],
    ["disappearing (ephemeral) text", { ephemeralMessage: { message: { conversation: "psst" } } }, {
      type: "text",
      text: "psst",
      file: null
    }],
    ["view once image", { viewOnceMessageV2: { message: { imageMessage: { mimetype: "image/jpeg" } } } }, {
      type: "image",
      text: "",
      file: { mimeType: "image/jpeg", filename: null, size: null }
    }],
    ["album item", { associatedChildMessage: { message: { imageMessage: { mimetype: "image/jpeg", caption: "a1" } } } }, {
      type: "image",
      text: "a1",
      file: { mimeType: "image/jpeg", filename: null, size: null }
    }],
    ["album announcement (its items come as messages of their own)", { albumMessage: { expectedImageCount: 2 } }, null],
    ["animated (Lottie) sticker", {
      lottieStickerMessage: { message: { stickerMessage: { mimetype: "application/was", isLottie: true, fileLength: 7 } } }
    }, { type: "sticker", text: "", file: { mimeType: "application/was", filename: null, size: 7 } }],
    ["Lottie wrapper without a sticker", { lottieStickerMessage: { message: { conversation: "?" } } }, {
      type: "unknown",
      text: "",
      file: null
    }],
    ["button reply", { buttonsResponseMessage: { selectedButtonId: "b1", selectedDisplayText: "Yes please" } }, {
      type: "text",
      text: "Yes please",
      file: null
    }],
    ["list reply", { listResponseMessage: { title: "Option 2", singleSelectReply: { selectedRowId: "r2" } } }, {
      type: "text",
      text: "Option 2",
      file: null
    }],
    ["template button reply", { templateButtonReplyMessage: { selectedId: "t", selectedDisplayText: "Confirm" } }, {
      type: "text",
      text: "Confirm",
      file: null
    }],
    ["interactive reply", {
      interactiveResponseMessage: { body: { text: "Book" }, nativeFlowResponseMessage: { name: "x", paramsJson: "{}" } }
    }, { type: "text", text: "Book", file: null }],
    ["event", { eventMessage: { name: "Party", description: "at 7" } }, { type: "unknown", text: "Party\nat 7", file: null }],
    ["group invitation", { groupInviteMessage: { groupName: "Club", caption: "join us", inviteCode: "x" } }, {
      type: "unknown",
      text: "Club\njoin us",
      file: null
    }],
    ["something new", { stickerPackMessage: { name: "pack" } }, { type: "unknown", text: "", file: null }],
    ["protocol (deletion, edit)", { protocolMessage: { type: 0 } }, null],
    ["poll vote", { pollUpdateMessage: {} }, null],
    ["sender key only", { senderKeyDistributionMessage: { groupId: "g" } }, null],
    ["no content (not decrypted yet)", null, null],
    ["empty content", {}, null]
  ]
  for (const [name, message, expected] of table) {
    it(name, () => {
      assert.deepStrictEqual(IncomingContent.classify(message), expected)
      // The same from a decoded protobuf instance, as Baileys hands it over.
      if (message) assert.deepStrictEqual(IncomingContent.classify(proto.Message.fromObject(message)), expected)
    })
  }
})

describe("Acks", () => {
  const update = (id: string, status: number, fromMe = true, params?: Array<string>): WAMessageUpdate => ({
    key: { remoteJid: "77017654321@s.whatsapp.net", id, fromMe },
    update: { status, ...(params === undefined ? {} : { messageStubParameters: params }) }
  })

  it("status codes of our messages: server ack sent, delivery delivered, read and played read, error failed", () => {
    assert.deepStrictEqual(
      Acks.fromUpdates([update("A", 2), update("A", 3), update("A", 4), update("B", 5), update("C", 1), update("D", 0)]),
      [
        { _tag: "Ack", waMessageId: "A", ack: "sent" },
        { _tag: "Ack", waMessageId: "A", ack: "delivered" },
        { _tag: "Ack", waMessageId: "A", ack: "read" },
        { _tag: "Ack", waMessageId: "B", ack: "read" },
        { _tag: "Ack", waMessageId: "D", ack: "failed", error: "delivery failed" }
      ]
    )
  })

  it("a status on a received message (this account read it) is no ack", () => {
    assert.deepStrictEqual(Acks.fromUpdates([update("IN", 4, false), { key: { id: "E", fromMe: true }, update: {} }]), [])
  })

  it("server error 463: the message failed, and nothing more (whether the account is restricted is WhatsApp's answer to a query)", () => {
    const refused = [update("R", 0, true, ["463"])]
    assert.deepStrictEqual(Acks.fromUpdates(refused), [
      {
        _tag: "Ack",
        waMessageId: "R",
        ack: "failed",
        error: "refused by WhatsApp: account restricted or no trusted-contact token (463)"
      }
    ])
    assert.isTrue(Acks.hasRestrictedFailure(refused))
    assert.deepStrictEqual(Acks.fromUpdates([update("F", 0, true, ["479"])]), [
      { _tag: "Ack", waMessageId: "F", ack: "failed", error: "delivery failed (479)" }
    ])
    assert.isFalse(Acks.hasRestrictedFailure([update("F", 0, true, ["479"])]))
  })

  it("group receipts: delivered to a member, read or played by one", () => {
    const key = { remoteJid: "120363000000000001@g.us", id: "G", fromMe: true, participant: "77010000009@s.whatsapp.net" }
    assert.deepStrictEqual(
      Acks.fromReceipts([
        { key, receipt: { userJid: "77010000009@s.whatsapp.net", receiptTimestamp: 1700000000 } },
        { key, receipt: { userJid: "77010000009@s.whatsapp.net", readTimestamp: 1700000001 } },
        { key: { ...key, fromMe: false }, receipt: { userJid: "x", readTimestamp: 1 } },
        { key, receipt: { userJid: "77010000009@s.whatsapp.net", playedTimestamp: 1700000002 } }
      ]),
      [
        { _tag: "Ack", waMessageId: "G", ack: "delivered" },
        { _tag: "Ack", waMessageId: "G", ack: "read" },
        { _tag: "Ack", waMessageId: "G", ack: "read" }
      ]
    )
  })
})

describe("Outgoing", () => {
  it("the five kinds as Baileys content, files as streams; a voice note is push-to-talk audio", () => {
    const file = Readable.from([])
    const bytes = { stream: file }
    assert.deepStrictEqual(Outgoing.content({ kind: "text", text: "Hi" }, file), { text: "Hi" })
    assert.deepStrictEqual(Outgoing.content({ kind: "image", media, caption: "c" }, file), {
      image: bytes,
      mimetype: "x/y",
      caption: "c"
    })
    assert.deepStrictEqual(Outgoing.content({ kind: "video", media }, file), { video: bytes, mimetype: "x/y" })
    assert.deepStrictEqual(Outgoing.content({ kind: "document", media, filename: "a.pdf", caption: "" }, file), {
      document: bytes,
      mimetype: "x/y",
      fileName: "a.pdf"
    })
    // The stream given for a voice note is already its Opus encoding (VoiceNote.toOpus).
    assert.deepStrictEqual(Outgoing.content({ kind: "voice", media }, file), {
      audio: bytes,
      mimetype: "audio/ogg; codecs=opus",
      ptt: true
    })
  })
})
