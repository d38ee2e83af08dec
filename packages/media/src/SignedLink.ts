/**
 * Tokens for links the gateway serves itself (filesystem and memory stores): what to serve, until
 * when and how, signed with HMAC-SHA256. Pure functions; the caller supplies the time.
 *
 * A token is `<payload>.<signature>`, both base64url, so it sits in a URL path as is.
 *
 * @since 1.0.0
 */
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { createHmac, timingSafeEqual } from "node:crypto"
import { BlobLinkExpired, BlobLinkInvalid } from "./BlobStoreError.js"

/**
 * What a link grants.
 *
 * @since 1.0.0
 */
export const Claims = Schema.Struct({
  key: Schema.propertySignature(Schema.String).pipe(Schema.fromKey("k")),
  /** Unix seconds; the link works until this second and not from it on. */
  expiresAt: Schema.propertySignature(Schema.Int).pipe(Schema.fromKey("x")),
  disposition: Schema.propertySignature(Schema.Literal("inline", "attachment")).pipe(Schema.fromKey("d")),
  filename: Schema.optional(Schema.String).pipe(Schema.fromKey("f")),
  contentType: Schema.optional(Schema.String).pipe(Schema.fromKey("t"))
})
/** @since 1.0.0 */
export type Claims = typeof Claims.Type

const Payload = Schema.parseJson(Claims)
const encodePayload = Schema.encodeSync(Payload)
const decodePayload = Schema.decodeUnknownEither(Payload)

const mac = (secret: Redacted.Redacted<string>, payload: string): string =>
  createHmac("sha256", Redacted.value(secret)).update(payload).digest("base64url")

/**
 * The token for `claims`.
 *
 * @since 1.0.0
 */
export const sign = (secret: Redacted.Redacted<string>, claims: Claims): string => {
  const payload = Buffer.from(encodePayload(claims), "utf8").toString("base64url")
  return `${payload}.${mac(secret, payload)}`
}

/**
 * The claims of `token` when its signature verifies and `nowSeconds` is before its expiry.
 * The signature is checked first, so nothing of an unsigned payload is parsed or reported.
 *
 * @since 1.0.0
 */
export const verify = (
  secret: Redacted.Redacted<string>,
  token: string,
  nowSeconds: number
): Either.Either<Claims, BlobLinkInvalid | BlobLinkExpired> => {
  const dot = token.indexOf(".")
  if (dot <= 0 || dot !== token.lastIndexOf(".")) return Either.left(new BlobLinkInvalid())
  const payload = token.slice(0, dot)
  // Compared as text: Node's base64url decoder skips stray characters, and a link should have one spelling.
  const given = Buffer.from(token.slice(dot + 1), "utf8")
  const expected = Buffer.from(mac(secret, payload), "utf8")
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return Either.left(new BlobLinkInvalid())
  }
  return decodePayload(Buffer.from(payload, "base64url").toString("utf8")).pipe(
    Either.mapLeft(() => new BlobLinkInvalid()),
    Either.flatMap((claims) =>
      nowSeconds >= claims.expiresAt
        ? Either.left(new BlobLinkExpired({ expiredAt: claims.expiresAt }))
        : Either.right(claims)
    )
  )
}
