/**
 * Signatures checked by an independent implementation of Standard Webhooks (the
 * `standardwebhooks` npm package), during and after a secret rotation.
 */
import { assert, describe, it } from "@effect/vitest"
import { Webhook } from "standardwebhooks"
import * as Signing from "../src/Signing.js"

const body = JSON.stringify({ event: "message", timestamp: 1_700_000_000, data: { id: "3EB0ABC", text: "Привет 👋" } })
const now = () => Math.floor(Date.now() / 1000)

describe("Signing", () => {
  it("a new secret is whsec_ and 32 random bytes, different each time", () => {
    const secret = Signing.generateSecret()
    assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/)
    assert.strictEqual(Signing.keyOf(secret).byteLength, 32)
    assert.notStrictEqual(secret, Signing.generateSecret())
  })

  it("standardwebhooks verifies the headers and body it signs, and the body it returns is the envelope", () => {
    const secret = Signing.generateSecret()
    const headers = Signing.headers({ eventId: 42, timestamp: now(), body, secrets: [secret] })
    assert.strictEqual(headers["webhook-id"], "evt_42")
    assert.strictEqual(headers["content-type"], "application/json")
    assert.match(headers["webhook-signature"]!, /^v1,[A-Za-z0-9+/]+=*$/)
    assert.deepStrictEqual(new Webhook(secret).verify(body, headers), JSON.parse(body))
  })

  it("a changed body, id or timestamp, or another secret, does not verify", () => {
    const secret = Signing.generateSecret()
    const ts = now()
    const headers = Signing.headers({ eventId: 7, timestamp: ts, body, secrets: [secret] })
    assert.throws(() => new Webhook(secret).verify(body.replace("Привет", "Hello"), headers))
    assert.throws(() => new Webhook(secret).verify(body, { ...headers, "webhook-id": "evt_8" }))
    assert.throws(() => new Webhook(secret).verify(body, { ...headers, "webhook-timestamp": String(ts - 1) }))
    assert.throws(() => new Webhook(Signing.generateSecret()).verify(body, headers))
  })

  it("during a rotation both the new and the previous secret verify", () => {
    const previous = Signing.generateSecret()
    const next = Signing.generateSecret()
    const headers = Signing.headers({ eventId: 9, timestamp: now(), body, secrets: [next, previous] })
    assert.lengthOf(headers["webhook-signature"]!.split(" "), 2)
    assert.deepStrictEqual(new Webhook(next).verify(body, headers), JSON.parse(body))
    assert.deepStrictEqual(new Webhook(previous).verify(body, headers), JSON.parse(body))
    assert.throws(() => new Webhook(Signing.generateSecret()).verify(body, headers))
  })
})
