/** Message ids chosen before a send: WhatsApp's shape, and never the same twice across pool refills. */
import { assert, describe, it } from "@effect/vitest"
import { newWaMessageId } from "../src/NumberSend.js"

describe("newWaMessageId", () => {
  it("gives ids in WhatsApp's shape, all different across several refills of its pool", () => {
    const ids = Array.from({ length: 5_000 }, newWaMessageId)
    for (const id of ids) assert.match(id, /^3EB0[0-9A-F]{18}$/)
    assert.strictEqual(new Set(ids).size, ids.length)
  })
})
