/**
 * The body of POST /messages/send as the contract's schema decodes it: each problem with its
 * code, the first in fixing order (JSON, recipient, attachment, text, number), and the content
 * the number is asked to send.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { validateSend } from "../src/http/SendRequest.js"

const TO = "77011234567"
const outcome = (body: unknown): unknown => {
  const result = Effect.runSync(Effect.either(validateSend(body)))
  return Either.isLeft(result) ? result.left.code : result.right
}

describe("validateSend", () => {
  it.each<[unknown, string]>([
    [[1], "invalid_json"],
    ["text", "invalid_json"],
    [null, "invalid_json"],
    [{ text: "x" }, "invalid_to"],
    [{ to: 77011234567, text: "x" }, "invalid_to"],
    [{ to: "123", text: "x" }, "invalid_to"],
    [{ to: "hello", image: "bad", text: 5, from: {} }, "invalid_to"],
    [{ to: TO, image: "bad", text: 5, from: {} }, "invalid_media"],
    [{ to: TO, image: { url: "ftp://x/a.png" } }, "invalid_media"],
    [{ to: TO, video: { url: "not a url" } }, "invalid_media"],
    [{ to: TO, voice: {} }, "invalid_media"],
    [{ to: TO, image: { url: "http://x/a.png" }, voice: { url: "http://x/a.ogg" } }, "invalid_media"],
    [{ to: TO, text: 5, from: {} }, "invalid_param"],
    [{ to: TO, text: "x", from: {} }, "invalid_from"],
    [{ to: TO, text: "x", from: 2.5 }, "invalid_from"],
    [{ to: TO }, "empty_text"],
    [{ to: TO, text: " \n " }, "empty_text"],
    [{ to: TO, text: "x".repeat(4097) }, "text_too_long"],
    [{ to: TO, image: { url: "http://x/a.png" }, text: "c".repeat(1025) }, "text_too_long"]
  ])("%j is refused with %s", (body, code) => {
    assert.strictEqual(outcome(body), code)
  })

  it("accepts what the contract allows, nulls as absent, and the lenient recipient forms", () => {
    assert.deepStrictEqual(outcome({ to: "+7 (701) 123-45-67", text: "hi", image: null, from: 3 }), {
      to: TO,
      from: 3,
      content: { _tag: "text", text: "hi" }
    })
    assert.deepStrictEqual(outcome({ to: `${TO}@s.whatsapp.net`, text: "😀".repeat(4096) }), {
      to: TO,
      from: undefined,
      content: { _tag: "text", text: "😀".repeat(4096) }
    })
    // Text beside an attachment is its caption when the attachment has none.
    assert.deepStrictEqual(outcome({ to: TO, image: { url: "https://x/a.png" }, text: "look", extra: 1 }), {
      to: TO,
      from: undefined,
      content: { _tag: "image", url: "https://x/a.png", caption: "look" }
    })
    // Text the same as the attachment's caption loses nothing; other text is refused (the send tests).
    assert.deepStrictEqual(outcome({ to: TO, document: { url: "https://x/a.pdf", filename: "a.pdf", caption: "own" }, text: "own" }), {
      to: TO,
      from: undefined,
      content: { _tag: "document", url: "https://x/a.pdf", filename: "a.pdf", caption: "own" }
    })
    assert.strictEqual(outcome({ to: TO, document: { url: "https://x/a.pdf", caption: "own" }, text: "t" }), "invalid_param")
    assert.deepStrictEqual(outcome({ to: TO, voice: { url: "https://x/a.ogg" }, from: "77010000001" }), {
      to: TO,
      from: "77010000001",
      content: { _tag: "voice", url: "https://x/a.ogg" }
    })
  })
})
