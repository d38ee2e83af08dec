/**
 * Reading the body of POST /messages/send into a validated send, each problem with the spec's
 * code, checked in the order a client fixes them: JSON, recipient, attachment, text, number.
 */
import {
  EmptyText,
  InvalidJson,
  InvalidMedia,
  InvalidParam,
  InvalidTo,
  TextTooLong
} from "@wagate/domain/ApiError"
import type { SendContent } from "@wagate/entities/NumberEntity"
import * as Effect from "effect/Effect"
import { normalizePhone } from "./Params.js"

/** Longest message text, in characters (WhatsApp clients show up to 4096 comfortably). */
export const MAX_TEXT = 4096
/** Longest caption of an attachment, in characters. */
export const MAX_CAPTION = 1024
const ATTACHMENTS = ["image", "document", "voice", "video"] as const

export interface ValidSend {
  readonly to: string
  readonly content: SendContent
  readonly from: string | number | undefined
}

const length = (s: string) => [...s].length

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The body as JSON, or invalid_json. */
export const parseJson = (text: string) =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: () => new InvalidJson()
  })

const mediaUrl = (kind: string, value: unknown) => {
  if (!isObject(value) || typeof value.url !== "string") {
    return Effect.fail(new InvalidMedia({ error: `${kind} must be an object with a url` }))
  }
  let url: URL
  try {
    url = new URL(value.url)
  } catch {
    return Effect.fail(new InvalidMedia({ error: `${kind}.url is not a valid URL` }))
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return Effect.fail(new InvalidMedia({ error: `${kind}.url must be http or https` }))
  }
  for (const field of ["caption", "filename"] as const) {
    if (value[field] !== undefined && typeof value[field] !== "string") {
      return Effect.fail(new InvalidMedia({ error: `${kind}.${field} must be a string` }))
    }
  }
  return Effect.succeed(value as { url: string; caption?: string; filename?: string })
}

export const validateSend = (body: unknown): Effect.Effect<ValidSend, InvalidJson | InvalidParam | InvalidTo | InvalidMedia | EmptyText | TextTooLong> =>
  Effect.gen(function*() {
    if (!isObject(body)) return yield* new InvalidJson({ error: "The body must be a JSON object" })
    const rawTo = typeof body.to === "number" ? String(body.to) : body.to
    // A phone, its chat id, or the chat id `<lid>@lid` of a person WhatsApp names only by a LID.
    const to = typeof rawTo !== "string"
      ? null
      : /^\s*[1-9]\d{0,19}@lid\s*$/.test(rawTo)
      ? rawTo.trim()
      : normalizePhone(rawTo.replace(/@(c\.us|s\.whatsapp\.net)$/, ""))
    if (to === null) return yield* new InvalidTo()

    const given = ATTACHMENTS.filter((k) => body[k] !== undefined && body[k] !== null)
    if (given.length > 1) return yield* new InvalidMedia({ error: `Send one attachment at a time, not ${given.join(" and ")}` })
    if (body.text !== undefined && body.text !== null && typeof body.text !== "string") {
      return yield* new InvalidParam({ error: "text must be a string" })
    }
    const text = typeof body.text === "string" ? body.text : ""
    if (body.from !== undefined && typeof body.from !== "string" && typeof body.from !== "number") {
      return yield* new InvalidParam({ error: "from must be a number id or a phone" })
    }
    const from = body.from as string | number | undefined

    if (given.length === 0) {
      if (text.trim() === "") return yield* new EmptyText()
      if (length(text) > MAX_TEXT) return yield* new TextTooLong({ error: `Text is longer than ${MAX_TEXT} characters` })
      return { to, from, content: { _tag: "text", text } }
    }
    const kind = given[0]
    const media = yield* mediaUrl(kind, body[kind])
    // Text beside an attachment is its caption when the attachment has none.
    const caption = media.caption ?? (text === "" ? undefined : text)
    if (caption !== undefined && length(caption) > MAX_CAPTION) {
      return yield* new TextTooLong({ error: `Caption is longer than ${MAX_CAPTION} characters` })
    }
    const content: SendContent = kind === "voice"
      ? { _tag: "voice", url: media.url }
      : kind === "document"
      ? { _tag: "document", url: media.url, filename: media.filename, caption }
      : { _tag: kind, url: media.url, caption }
    return { to, from, content }
  })
