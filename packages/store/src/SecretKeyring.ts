/**
 * Secrets kept encrypted at rest (webhook signing secrets): AES-256-GCM with a 32-byte key of
 * the operator's, bound to the row they belong to. The first key of the ring encrypts; every key
 * of the ring decrypts, so a new key can be rolled in while rows sealed with the old one are
 * still read, then re-sealed (`wagate webhook reseal-secrets`) before the old key is dropped.
 *
 * A sealed value reads `enc:v1:<key id>:<base64url of iv, ciphertext and tag>`; the key id is the
 * start of the key's SHA-256, so a process can say which key a row needs without holding it.
 *
 * @since 1.0.0
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Either from "effect/Either"
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"

/** @since 1.0.0 */
export interface Key {
  readonly id: string
  readonly bytes: Buffer
}

/** @since 1.0.0 */
export interface Keyring {
  /** Seals new values. */
  readonly current: Key
  /** Every key that opens values, `current` first. */
  readonly keys: ReadonlyArray<Key>
}

/** The key ring of this process. @since 1.0.0 */
export class SecretKeyring extends Context.Tag("@wagate/store/SecretKeyring")<SecretKeyring, Keyring>() {}

/** @since 1.0.0 */
export class SealError extends Data.TaggedError("SealError")<{ readonly message: string }> {}

const PREFIX = "enc:v1:"
const IV_BYTES = 12
const TAG_BYTES = 16

/** A new random key, as the key file and `openssl rand -base64 32` write it. @since 1.0.0 */
export const generateKey = (): string => randomBytes(32).toString("base64")

const keyOf = (bytes: Buffer): Key => ({
  id: createHash("sha256").update(bytes).digest("hex").slice(0, 8),
  bytes
})

/**
 * A key from its text: 64 hexadecimal digits, or base64 (or base64url) of 32 bytes.
 *
 * @since 1.0.0
 */
export const parseKey = (text: string): Either.Either<Key, SealError> => {
  const trimmed = text.trim()
  const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Buffer.from(trimmed, "hex")
    : /^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)
    ? Buffer.from(trimmed.replace(/-/g, "+").replace(/_/g, "/"), "base64")
    : undefined
  return bytes?.length === 32
    ? Either.right(keyOf(bytes))
    : Either.left(new SealError({ message: "a key is 32 bytes written as base64 (openssl rand -base64 32) or 64 hex digits" }))
}

/** A ring whose first key seals; duplicates are dropped. @since 1.0.0 */
export const make = (keys: readonly [Key, ...Array<Key>]): Keyring => {
  const unique = keys.filter((k, i) => keys.findIndex((o) => o.id === k.id) === i)
  return { current: keys[0], keys: unique }
}

/** Whether a stored value is sealed (rather than clear text from before encryption). @since 1.0.0 */
export const isSealed = (stored: string): boolean => stored.startsWith(PREFIX)

/** The id of the key that sealed a value; none for clear text. @since 1.0.0 */
export const keyIdOf = (stored: string): string | undefined =>
  isSealed(stored) ? stored.slice(PREFIX.length).split(":")[0] : undefined

/**
 * `plain` sealed with the ring's current key for the row `context` names (the same context must
 * be given to open it: a value copied to another row does not open there).
 *
 * @since 1.0.0
 */
export const seal = (ring: Keyring, plain: string, context: string): string => {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv("aes-256-gcm", ring.current.bytes, iv)
  cipher.setAAD(Buffer.from(context))
  const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()])
  return `${PREFIX}${ring.current.id}:${Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64url")}`
}

/** The clear value of a sealed one, with any key of the ring. @since 1.0.0 */
export const open = (ring: Keyring, stored: string, context: string): Either.Either<string, SealError> => {
  if (!isSealed(stored)) return Either.left(new SealError({ message: "the value is not encrypted" }))
  const [id, data] = stored.slice(PREFIX.length).split(":")
  const key = ring.keys.find((k) => k.id === id)
  if (key === undefined) {
    return Either.left(new SealError({ message: `the value is encrypted with key ${id}, which this process does not have` }))
  }
  const raw = Buffer.from(data ?? "", "base64url")
  if (raw.length < IV_BYTES + TAG_BYTES) return Either.left(new SealError({ message: "the encrypted value is truncated" }))
  try {
    const decipher = createDecipheriv("aes-256-gcm", key.bytes, raw.subarray(0, IV_BYTES))
    decipher.setAAD(Buffer.from(context))
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES))
    return Either.right(
      Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString("utf8")
    )
  } catch {
    return Either.left(new SealError({ message: `the value does not open with key ${id} (altered, or sealed for another row)` }))
  }
}

/** The context a webhook endpoint's secrets are sealed for. @since 1.0.0 */
export const webhookContext = (accountId: number | string): string => `webhook_endpoints:${accountId}`
