/**
 * Signatures of webhook requests by the Standard Webhooks scheme (https://www.standardwebhooks.com):
 * `webhook-signature` is `v1,` followed by the base64 HMAC-SHA256 of `id.timestamp.body`, keyed
 * with the bytes of the account's secret (`whsec_` + base64). While a rotated secret is in its
 * grace period the header carries one signature per secret, separated by a space; a receiver
 * accepts the request when any of them matches the secret it knows.
 *
 * @since 1.0.0
 */
import { createHmac, randomBytes } from "node:crypto"

/** @since 1.0.0 */
export const SECRET_PREFIX = "whsec_"

/** Random bytes in a secret: within the scheme's recommended 24 to 64. @since 1.0.0 */
export const SECRET_BYTES = 32

/** A new secret, `whsec_` followed by 32 random bytes in base64. @since 1.0.0 */
export const generateSecret = (): string => `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString("base64")}`

/** The HMAC key of a secret: its base64 part decoded. @since 1.0.0 */
export const keyOf = (secret: string): Buffer =>
  Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64")

/** One signature, `v1,<base64>`. @since 1.0.0 */
export const sign = (secret: string, id: string, timestamp: number, body: string): string =>
  `v1,${createHmac("sha256", keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest("base64")}`

/** The `webhook-signature` header for every secret that signs now, newest first. @since 1.0.0 */
export const signatureHeader = (secrets: ReadonlyArray<string>, id: string, timestamp: number, body: string): string =>
  secrets.map((secret) => sign(secret, id, timestamp, body)).join(" ")

/**
 * The `webhook-id` of an event: the same on every attempt and on a resend, so a receiver can
 * drop duplicates by it.
 *
 * @since 1.0.0
 */
export const webhookId = (eventId: number): string => `evt_${eventId}`

/** The headers of one attempt. `timestamp` is unix seconds of the attempt. @since 1.0.0 */
export const headers = (options: {
  readonly eventId: number
  readonly timestamp: number
  readonly body: string
  readonly secrets: ReadonlyArray<string>
}): Record<string, string> => {
  const id = webhookId(options.eventId)
  return {
    "content-type": "application/json",
    "user-agent": "wagate-webhooks/1.0",
    "webhook-id": id,
    "webhook-timestamp": String(options.timestamp),
    "webhook-signature": signatureHeader(options.secrets, id, options.timestamp, options.body)
  }
}
