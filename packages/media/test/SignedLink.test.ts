/**
 * Link tokens: what verifies, until when, and that nothing else does.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import { createHmac } from "node:crypto"
import * as SignedLink from "../src/SignedLink.js"

const secret = Redacted.make("k".repeat(32))
const claims: SignedLink.Claims = {
  key: "media/12/3f9a.jpg",
  expiresAt: 1_800_000_900,
  disposition: "attachment",
  filename: "Фото.jpg",
  contentType: "image/jpeg"
}
const token = SignedLink.sign(secret, claims)
const tag = (result: Either.Either<SignedLink.Claims, { readonly _tag: string }>) =>
  Either.match(result, { onLeft: (e) => e._tag, onRight: () => "valid" })

describe("SignedLink", () => {
  it("is URL-safe text: base64url payload, dot, base64url HMAC-SHA256", () => {
    assert.match(token, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/)
    assert.strictEqual(encodeURIComponent(token), token)
  })

  it("verifies to the claims it was made from until the expiry second, and not from it on", () => {
    assert.deepStrictEqual(SignedLink.verify(secret, token, 1_800_000_000), Either.right(claims))
    assert.deepStrictEqual(SignedLink.verify(secret, token, 1_800_000_899), Either.right(claims))
    const expired = SignedLink.verify(secret, token, 1_800_000_900)
    assert.deepStrictEqual(
      Either.isLeft(expired) && [expired.left._tag, expired.left._tag === "BlobLinkExpired" && expired.left.expiredAt],
      ["BlobLinkExpired", 1_800_000_900]
    )
  })

  it("keeps optional claims optional", () => {
    const bare = { key: "a", expiresAt: 10, disposition: "inline" as const }
    assert.deepStrictEqual(SignedLink.verify(secret, SignedLink.sign(secret, bare), 0), Either.right(bare))
  })

  const [payload, signature] = token.split(".")
  const macOf = (text: string) => createHmac("sha256", Redacted.value(secret)).update(text).digest("base64url")
  const notClaims = Buffer.from(JSON.stringify({ k: "a", x: "soon", d: "inline" })).toString("base64url")
  const notJson = Buffer.from("{oops").toString("base64url")
  const cases: ReadonlyArray<readonly [string, string, string]> = [
    ["signed with another secret", SignedLink.sign(Redacted.make("x".repeat(32)), claims), "BlobLinkInvalid"],
    ["payload changed", `${payload.slice(0, -2)}AA.${signature}`, "BlobLinkInvalid"],
    ["signature changed", `${payload}.${signature.slice(0, -1)}${signature.endsWith("A") ? "B" : "A"}`, "BlobLinkInvalid"],
    ["signature with a stray character", `${payload}.${signature}=`, "BlobLinkInvalid"],
    ["signature truncated", `${payload}.${signature.slice(0, 20)}`, "BlobLinkInvalid"],
    ["no signature", payload, "BlobLinkInvalid"],
    ["two dots", `${payload}.${signature}.${signature}`, "BlobLinkInvalid"],
    ["empty", "", "BlobLinkInvalid"],
    ["only a dot", ".", "BlobLinkInvalid"],
    ["signed, but not claims", `${notClaims}.${macOf(notClaims)}`, "BlobLinkInvalid"],
    ["signed, but not JSON", `${notJson}.${macOf(notJson)}`, "BlobLinkInvalid"],
    ["the real one", token, "valid"]
  ]
  for (const [name, candidate, expected] of cases) {
    it(`${name}: ${expected}`, () => {
      assert.strictEqual(tag(SignedLink.verify(secret, candidate, 0)), expected)
    })
  }
})
