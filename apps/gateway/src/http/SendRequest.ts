/**
 * Reading the body of POST /messages/send into a validated send: decoded by the contract's
 * `SendMessageRequest`, then the rules a type cannot say (the recipient's form, one attachment,
 * lengths in characters). Each problem has the spec's code, and the first one reported is the
 * one a client fixes first: JSON, recipient, attachment, text, number.
 */
import {
  EmptyText,
  InvalidFrom,
  InvalidJson,
  InvalidMedia,
  InvalidParam,
  InvalidTo,
  TextTooLong
} from "@wagate/domain/ApiError"
import { SendMessageRequest } from "@wagate/domain/SendMessage"
import type { SendContent } from "@wagate/entities/NumberEntity"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { normalizePhone, phoneRefusal } from "./Params.js"
import { notAnObjectBody } from "./RequestBody.js"

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

const decodeBody = Schema.decodeUnknownEither(SendMessageRequest, { errors: "all", onExcessProperty: "ignore" })

/**
 * The recipient: a phone as digits (international format, a WhatsApp chat suffix allowed), or
 * the chat id `<lid>@lid` of a person WhatsApp names only by a LID.
 */
const recipient = (to: unknown): string | null =>
  typeof to !== "string"
    ? null
    : /^\s*[1-9]\d{0,19}@lid\s*$/.test(to)
    ? to.trim()
    : normalizePhone(to.replace(/@(c\.us|s\.whatsapp\.net)$/, ""))

const invalidTo = (to: unknown) => new InvalidTo({ error: phoneRefusal(to, new InvalidTo().error) })

/** The failure a client sees for a body the schema refused: the first field in fixing order. */
const refusal = (body: unknown, error: ParseResult.ParseError) => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  const about = (field: string) => issues.find((issue) => issue.path[0] === field)
  if (issues.some((issue) => issue.path.length === 0)) return notAnObjectBody(body)
  const fields = body as Record<string, unknown>
  if (recipient(fields.to) === null) return invalidTo(fields.to)
  for (const kind of ATTACHMENTS) {
    const issue = about(kind)
    if (issue === undefined) continue
    const field = issue.path[1]
    return new InvalidMedia({
      error: field === undefined
        ? `${kind} must be an object with a url`
        : field === "url"
        ? `${kind}.url must be an http or https URL`
        : `${kind}.${String(field)} must be a string`
    })
  }
  if (about("text") !== undefined) return new InvalidParam({ error: "text must be a string" })
  // What is left is `from`, whose every problem is invalid_from (docs/errors.md).
  return new InvalidFrom()
}

export const validateSend: (
  body: unknown
) => Effect.Effect<ValidSend, InvalidJson | InvalidParam | InvalidFrom | InvalidTo | InvalidMedia | EmptyText | TextTooLong> =
  Effect.fnUntraced(function*(body: unknown) {
    const decoded = decodeBody(body)
    if (Either.isLeft(decoded)) return yield* refusal(body, decoded.left)
    const request = decoded.right
    const to = recipient(request.to)
    if (to === null) return yield* invalidTo(request.to)

    const given = ATTACHMENTS.filter((kind) => request[kind] !== undefined)
    if (given.length > 1) return yield* new InvalidMedia({ error: `Send one attachment at a time, not ${given.join(" and ")}` })
    const text = request.text ?? ""
    const from = request.from
    // A voice note carries no caption on WhatsApp: what the client wrote beside it would be lost.
    if (request.voice !== undefined && (text !== "" || (body as { voice: Record<string, unknown> }).voice.caption != null)) {
      return yield* new InvalidParam({
        error: "A voice note carries no text or caption on WhatsApp; send the text as a message of its own"
      })
    }
    // Text beside an attachment is its caption when the attachment has none. Beside a caption of
    // its own, one of the two would be lost: WhatsApp shows one caption.
    const captionOf = (own: string | undefined) => {
      if (own !== undefined && text.trim() !== "" && own !== text) {
        return Effect.fail(new InvalidParam({
          error: "The attachment has a caption and text is given too; WhatsApp shows one caption: send one of them, or the text as a message of its own"
        }))
      }
      const caption = own ?? (text === "" ? undefined : text)
      return caption !== undefined && length(caption) > MAX_CAPTION
        ? Effect.fail(new TextTooLong({ error: `Caption is longer than ${MAX_CAPTION} characters` }))
        : Effect.succeed(caption)
    }
    const { document, image, video, voice } = request
    if (image !== undefined) return { to, from, content: { _tag: "image", url: image.url, caption: yield* captionOf(image.caption) } }
    if (video !== undefined) return { to, from, content: { _tag: "video", url: video.url, caption: yield* captionOf(video.caption) } }
    if (voice !== undefined) return { to, from, content: { _tag: "voice", url: voice.url } }
    if (document !== undefined) {
      const caption = yield* captionOf(document.caption)
      return { to, from, content: { _tag: "document", url: document.url, filename: document.filename, caption } }
    }
    if (text.trim() === "") return yield* new EmptyText()
    if (length(text) > MAX_TEXT) return yield* new TextTooLong({ error: `Text is longer than ${MAX_TEXT} characters` })
    return { to, from, content: { _tag: "text", text } }
  })
