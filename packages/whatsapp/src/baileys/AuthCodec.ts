/**
 * How credentials and signal keys are written as JSON: Baileys' own `BufferJSON` (buffers as
 * base64), the format of its file-based store, so state can move between the two. App-state
 * keys come back as their protobuf class, as Baileys expects.
 *
 * @since 1.0.0
 */
import { type AuthenticationCreds, BufferJSON, initAuthCreds, proto, type SignalDataTypeMap } from "@whiskeysockets/baileys"

/** The kind under which the credentials are stored (signal key kinds are Baileys' own names). @since 1.0.0 */
export const CREDS = "creds"
/** The kind under which WhatsApp's refusal of the credentials is stored (`NumberAuth.Refusal`). @since 1.0.0 */
export const REFUSED = "refused"

/** @since 1.0.0 */
export const encode = (value: unknown): string => JSON.stringify(value, BufferJSON.replacer)

/** @since 1.0.0 */
export const decode = (json: string): any => JSON.parse(json, BufferJSON.reviver)

/** A stored key back to what Baileys wrote. @since 1.0.0 */
export const decodeKey = <T extends keyof SignalDataTypeMap>(kind: T, json: string): SignalDataTypeMap[T] => {
  const value = decode(json)
  return (kind === "app-state-sync-key" ? proto.Message.AppStateSyncKeyData.fromObject(value) : value) as SignalDataTypeMap[T]
}

/** Stored credentials, or fresh ones (a device never linked). @since 1.0.0 */
export const decodeCreds = (json: string | null): AuthenticationCreds =>
  json === null ? initAuthCreds() : decode(json) as AuthenticationCreds

/**
 * Whether the credentials belong to a linked device: the phone signed our identity (set by a
 * completed QR scan or pairing code), not merely a pairing code requested.
 *
 * @since 1.0.0
 */
export const isLinked = (creds: AuthenticationCreds): boolean =>
  creds.account !== undefined && creds.account !== null && typeof creds.me?.id === "string"
